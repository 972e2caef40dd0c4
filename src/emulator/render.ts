/**
 * Renders an Anthropic `/v1/messages` body the way llama-server b10108 does with the Qwen3.5 chat
 * template: llama.cpp's Anthropic→OpenAI conversion (system blocks joined with no separator, roles
 * passed through, tool_result → role "tool" after the owning message's own content, unknown blocks
 * dropped), then the template's ChatML text. `count_tokens` and the context checks count this text.
 */
export type TemplateFailure =
  | { kind: 'mid-system' }
  | { kind: 'no-messages' }
  | { kind: 'no-user-query' }
  | { kind: 'bad-role'; role: string };

export type RenderResult =
  { kind: 'ok'; text: string } | { kind: 'error'; failure: TemplateFailure };

export interface RenderOptions {
  /** Qwen template guard: a system message that is not the first message raises. */
  strictTemplate: boolean;
  /**
   * Default true (the Qwen3.5 Jinja template): no user query or an unknown role raises. Ollama's Go
   * renderers and LM Studio's engine render such a conversation as it is.
   */
  strictRoles?: boolean;
}

export interface ToolCall {
  name: string;
  input: unknown;
}
export interface ChatMessage {
  role: string;
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
}

const TOOLS_PREAMBLE =
  '\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Text of a string or of the `text` items of a block list, joined with no separator. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const block of content) {
    if (isRecord(block) && block.type === 'text' && typeof block.text === 'string')
      text += block.text;
    else if (isRecord(block) && block.type === 'image')
      text += '<|vision_start|><|image_pad|><|vision_end|>';
  }
  return text;
}

function convertMessage(message: Record<string, unknown>): ChatMessage[] {
  const role = typeof message.role === 'string' ? message.role : '';
  const own: ChatMessage = { role, content: '', reasoning: '', toolCalls: [] };
  const tools: ChatMessage[] = [];
  let hasOwn = false;
  if (typeof message.content === 'string') return [{ ...own, content: message.content }];
  if (!Array.isArray(message.content)) return [];
  for (const block of message.content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' || block.type === 'image') {
      own.content += contentText([block]);
      hasOwn = true;
    } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      own.reasoning += block.thinking;
      hasOwn = true;
    } else if (block.type === 'tool_use') {
      own.toolCalls.push({ name: String(block.name), input: block.input ?? {} });
      hasOwn = true;
    } else if (block.type === 'tool_result') {
      tools.push({
        role: 'tool',
        content: contentText(block.content),
        reasoning: '',
        toolCalls: [],
      });
    }
  }
  return hasOwn ? [own, ...tools] : tools;
}

/** llama.cpp's conversion: the top-level `system` becomes a leading system message. */
export function toChatMessages(body: Record<string, unknown>): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const system = contentText(body.system);
  if (body.system !== undefined && system !== '') {
    messages.push({ role: 'system', content: system, reasoning: '', toolCalls: [] });
  }
  const list = Array.isArray(body.messages) ? body.messages : [];
  for (const message of list) if (isRecord(message)) messages.push(...convertMessage(message));
  return messages;
}

function renderToolsHeader(tools: unknown[], first: ChatMessage | undefined): string {
  let text =
    '<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>';
  for (const tool of tools) {
    const t = isRecord(tool) ? tool : {};
    const fn = { name: t.name, description: t.description, parameters: t.input_schema };
    text += `\n${JSON.stringify({ type: 'function', function: fn })}`;
  }
  text += TOOLS_PREAMBLE;
  if (first?.role === 'system' && first.content.trim()) text += `\n\n${first.content.trim()}`;
  return `${text}<|im_end|>\n`;
}

function renderToolCalls(content: string, calls: ToolCall[]): string {
  let text = '';
  calls.forEach((call, index) => {
    const lead = index > 0 ? '\n' : content.trim() ? '\n\n' : '';
    text += `${lead}<tool_call>\n<function=${call.name}>\n`;
    const args = isRecord(call.input) ? call.input : {};
    for (const [name, value] of Object.entries(args)) {
      const rendered = typeof value === 'string' ? value : JSON.stringify(value);
      text += `<parameter=${name}>\n${rendered}\n</parameter>\n`;
    }
    text += '</function>\n</tool_call>';
  });
  return text;
}

function lastQueryIndex(messages: readonly ChatMessage[]): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== 'user') continue;
    const content = message.content.trim();
    if (!(content.startsWith('<tool_response>') && content.endsWith('</tool_response>')))
      return index;
  }
  return -1;
}

/** The prompt text for `body`, or the template exception the Qwen template would raise. */
export function renderPrompt(body: Record<string, unknown>, options: RenderOptions): RenderResult {
  return renderChatMessages(toChatMessages(body), body, options);
}

/** Renders chat messages already converted from `body` (whose tools and thinking switch apply). */
export function renderChatMessages(
  messages: readonly ChatMessage[],
  body: Record<string, unknown>,
  options: RenderOptions,
): RenderResult {
  const strictRoles = options.strictRoles ?? true;
  if (messages.length === 0 && strictRoles)
    return { kind: 'error', failure: { kind: 'no-messages' } };
  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? body.tools : undefined;
  const first = messages[0];
  let text = '';
  if (tools) text += renderToolsHeader(tools, first);
  else if (first?.role === 'system')
    text += `<|im_start|>system\n${first.content.trim()}<|im_end|>\n`;
  const lastQuery = lastQueryIndex(messages);
  if (lastQuery < 0 && strictRoles) return { kind: 'error', failure: { kind: 'no-user-query' } };
  for (const [index, message] of messages.entries()) {
    const content = message.content.trim();
    if (message.role === 'system') {
      if (index === 0) continue;
      if (options.strictTemplate) return { kind: 'error', failure: { kind: 'mid-system' } };
      text += `<|im_start|>system\n${content}<|im_end|>\n`;
    } else if (message.role === 'user') {
      text += `<|im_start|>user\n${content}<|im_end|>\n`;
    } else if (message.role === 'assistant') {
      const reasoning = message.reasoning.trim();
      text +=
        index > lastQuery
          ? `<|im_start|>assistant\n<think>\n${reasoning}\n</think>\n\n${content}`
          : `<|im_start|>assistant\n${content}`;
      text += `${renderToolCalls(content, message.toolCalls)}<|im_end|>\n`;
    } else if (message.role === 'tool') {
      if (messages[index - 1]?.role !== 'tool') text += '<|im_start|>user';
      text += `\n<tool_response>\n${content}\n</tool_response>`;
      if (messages[index + 1]?.role !== 'tool') text += '<|im_end|>\n';
    } else if (strictRoles) {
      return { kind: 'error', failure: { kind: 'bad-role', role: message.role } };
    } else {
      text += `<|im_start|>${message.role}\n${content}<|im_end|>\n`;
    }
  }
  text += `<|im_start|>assistant\n${isThinkingEnabled(body) ? '<think>\n' : '<think>\n\n</think>\n\n'}`;
  return { kind: 'ok', text };
}

/** Whether the request asked for the template's thinking section to be closed up front. */
export function isThinkingEnabled(body: Record<string, unknown>): boolean {
  return !(
    isRecord(body.chat_template_kwargs) && body.chat_template_kwargs.enable_thinking === false
  );
}
