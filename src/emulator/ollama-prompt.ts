/**
 * How Ollama reads a `/v1/messages` body (ollama-lmstudio.md §1; middleware/anthropic.go,
 * anthropic/anthropic.go): gin's JSON bind with Go's decoder errors, then `model is required`,
 * `max_tokens is required and must be positive`, `messages is required`, then the conversion to chat
 * messages (system text joined with no separator, tool results before the user's text, unknown blocks
 * dropped) with its own 400s, and `EstimateInputTokens`, the len/4 guess message_start reports.
 */
import { goArguments, goDecode, goJson, goKind, goSorted } from './go-json.js';
import { contentText, type ChatMessage, type ToolCall } from './render.js';

export interface OllamaRequest {
  body: Record<string, unknown>;
  model: string;
  maxTokens: number;
  stream: boolean;
  /** The chat messages Ollama renders, the `system` one first. */
  messages: ChatMessage[];
}

export type ParsedOllamaRequest =
  { kind: 'ok'; request: OllamaRequest } | { kind: 'error'; message: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The Go types of MessagesRequest's fields that a wrong JSON kind fails to bind to. */
const FIELD_TYPES: Readonly<Record<string, { goType: string; fits: (v: unknown) => boolean }>> = {
  model: { goType: 'string', fits: (v) => typeof v === 'string' },
  max_tokens: {
    goType: 'int',
    fits: (v) => typeof v === 'number' && Number.isSafeInteger(v),
  },
  messages: { goType: '[]anthropic.MessageParam', fits: Array.isArray },
  stream: { goType: 'bool', fits: (v) => typeof v === 'boolean' },
  tools: { goType: '[]anthropic.Tool', fits: Array.isArray },
};

function typeError(field: string, value: unknown): string | undefined {
  const spec = FIELD_TYPES[field];
  if (!spec || value === null || spec.fits(value)) return undefined;
  // A number that does not fit an int is named with its text (`number 1.5`).
  const kind =
    typeof value === 'number' && spec.goType === 'int' ? `number ${value}` : goKind(value);
  return `json: cannot unmarshal ${kind} into Go struct field MessagesRequest.${field} of type ${spec.goType}`;
}

/** MessageParam.UnmarshalJSON: content must be a string or a block list. */
function messageError(message: unknown): string | undefined {
  if (!isRecord(message) || message.content === null) return undefined;
  if (!('content' in message)) return 'unexpected end of JSON input';
  const { content } = message;
  if (typeof content === 'string' || Array.isArray(content)) return undefined;
  return `json: cannot unmarshal ${goKind(content)} into Go value of type []anthropic.ContentBlock`;
}

function bindError(value: unknown): string | undefined {
  if (value === null) return undefined;
  if (!isRecord(value)) {
    return `json: cannot unmarshal ${goKind(value)} into Go value of type anthropic.MessagesRequest`;
  }
  for (const [field, fieldValue] of Object.entries(value)) {
    const error = typeError(field, fieldValue);
    if (error) return error;
    if (field === 'messages' && Array.isArray(fieldValue)) {
      for (const message of fieldValue) {
        const messageProblem = messageError(message);
        if (messageProblem) return messageProblem;
      }
    }
  }
  return undefined;
}

function blocksOf(content: unknown): Record<string, unknown>[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

function imageError(source: unknown): string | undefined {
  if (!isRecord(source)) return 'invalid image source';
  const type = typeof source.type === 'string' ? source.type : '';
  return type === 'base64'
    ? undefined
    : `invalid image source type: ${type}. Only base64 images are supported.`;
}

function toolResultText(content: unknown): string {
  return typeof content === 'string' ? content : Array.isArray(content) ? contentText(content) : '';
}

/** anthropic.convertMessage: one Anthropic message → Ollama chat messages. */
function convertMessage(message: Record<string, unknown>): ChatMessage[] | string {
  const role = typeof message.role === 'string' ? message.role.toLowerCase() : '';
  let text = '';
  let thinking = '';
  const toolCalls: ToolCall[] = [];
  const results: ChatMessage[] = [];
  for (const block of blocksOf(message.content)) {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'image') {
      const problem = imageError(block.source);
      if (problem) return problem;
    } else if (block.type === 'tool_use' || block.type === 'server_tool_use') {
      if (block.type === 'tool_use' && !block.id)
        return "tool_use block missing required 'id' field";
      if (block.type === 'tool_use' && !block.name)
        return "tool_use block missing required 'name' field";
      toolCalls.push({ name: String(block.name), input: block.input ?? {} });
    } else if (block.type === 'tool_result' || block.type === 'web_search_tool_result') {
      const content = toolResultText(block.content);
      results.push({ role: 'tool', content, reasoning: '', toolCalls: [] });
    } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      // The last thinking block wins: Ollama assigns, it does not append.
      thinking = block.thinking;
    }
  }
  const own: ChatMessage[] =
    text || thinking || toolCalls.length > 0
      ? [{ role, content: text, reasoning: thinking, toolCalls }]
      : [];
  // In a user turn the tool results go before the user's own text.
  return role === 'user' ? [...results, ...own] : [...own, ...results];
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  return Array.isArray(system) ? contentText(system.filter(isRecord)) : '';
}

function convert(body: Record<string, unknown>): ChatMessage[] | string {
  const messages: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system) messages.push({ role: 'system', content: system, reasoning: '', toolCalls: [] });
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    const converted = convertMessage(isRecord(message) ? message : {});
    if (typeof converted === 'string') return converted;
    messages.push(...converted);
  }
  for (const tool of Array.isArray(body.tools) ? body.tools.filter(isRecord) : []) {
    const schema = tool.input_schema;
    if (schema !== undefined && schema !== null && !isRecord(schema)) {
      return `invalid input_schema for tool ${JSON.stringify(tool.name ?? '')}: json: cannot unmarshal ${goKind(schema)} into Go value of type api.ToolFunctionParameters`;
    }
  }
  return messages;
}

/** The middleware's checks, in its order; each failure is a 400 invalid_request_error. */
export function parseOllamaRequest(raw: string): ParsedOllamaRequest {
  const decoded = goDecode(raw);
  if (decoded.kind === 'error') return decoded;
  const problem = bindError(decoded.value);
  if (problem) return { kind: 'error', message: problem };
  const body: Record<string, unknown> = isRecord(decoded.value) ? { ...decoded.value } : {};
  const model = typeof body.model === 'string' ? body.model : '';
  if (model === '') return { kind: 'error', message: 'model is required' };
  const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : 0;
  if (maxTokens <= 0)
    return { kind: 'error', message: 'max_tokens is required and must be positive' };
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return { kind: 'error', message: 'messages is required' };
  const messages = convert(body);
  if (typeof messages === 'string') return { kind: 'error', message: messages };
  return {
    kind: 'ok',
    request: { body, model, maxTokens, stream: body.stream === true, messages },
  };
}

const utf8Length = (text: string): number => Buffer.byteLength(text, 'utf8');

/** countContentBlock: text and thinking lengths, and the Go JSON of tool_use / tool_result blocks. */
function blockLength(block: Record<string, unknown>): number {
  let total = 0;
  if (typeof block.text === 'string') total += utf8Length(block.text);
  if (typeof block.thinking === 'string') total += utf8Length(block.thinking);
  if (block.type === 'tool_use') {
    // `input` is an ordered map: present whenever the block had one, even `{}` (omitzero).
    const input = isRecord(block.input) ? goArguments(block.input) : undefined;
    const json = {
      type: block.type,
      ...(typeof block.text === 'string' ? { text: block.text } : {}),
      ...(block.id ? { id: block.id } : {}),
      ...(block.name ? { name: block.name } : {}),
      ...(input ? { input } : {}),
      ...(typeof block.thinking === 'string' ? { thinking: block.thinking } : {}),
    };
    total += utf8Length(goJson(json));
  } else if (block.type === 'tool_result') {
    const json = {
      type: block.type,
      ...(block.tool_use_id ? { tool_use_id: block.tool_use_id } : {}),
      ...(block.content !== undefined && block.content !== null
        ? { content: goSorted(block.content) }
        : {}),
      ...(block.is_error === true ? { is_error: true } : {}),
    };
    total += utf8Length(goJson(json));
  }
  return total;
}

/**
 * EstimateInputTokens: floor(len/4) of the system text, the roles, the blocks and each tool's name,
 * description and schema (at least 1). The schema's length is that of its compact JSON, which is what
 * Claude Code sends (Ollama counts the raw bytes as received).
 */
export function estimateInputTokens(body: Record<string, unknown>): number {
  let total = 0;
  const { system } = body;
  if (typeof system === 'string') total += utf8Length(system);
  else if (Array.isArray(system))
    for (const item of system.filter(isRecord)) total += blockLength(item);
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  for (const message of messages) {
    total += typeof message.role === 'string' ? utf8Length(message.role) : 0;
    for (const block of blocksOf(message.content)) total += blockLength(block);
  }
  for (const tool of Array.isArray(body.tools) ? body.tools.filter(isRecord) : []) {
    const text = (value: unknown): string => (typeof value === 'string' ? value : '');
    total += utf8Length(text(tool.name)) + utf8Length(text(tool.description));
    if (tool.input_schema !== undefined) total += utf8Length(JSON.stringify(tool.input_schema));
  }
  const tokens = Math.floor(total / 4);
  const hasSystem = system !== undefined && system !== null;
  return tokens === 0 && (messages.length > 0 || hasSystem) ? 1 : tokens;
}
