/**
 * Anthropic-style replies in each server's dialect (Ollama's Go-encoded one is in ollama-format.ts).
 * llama.cpp (captures A12, A14e, K02): key order type,index,…; `tool_use` start without `input`;
 * one `input_json_delta` with the whole JSON; thinking's `signature_delta` ("") and every
 * `content_block_stop` at the end; `message_delta.usage` only `output_tokens`; usage
 * `{cache_read_input_tokens, input_tokens, output_tokens}`.
 * vLLM (backends.md §1.11–1.12): key order type,content_block/delta,index; `tool_use` start with
 * `input: {}`; each block stopped before the next; null fields omitted in the non-stream body.
 * LM Studio (ollama-lmstudio.md §6, framing undocumented): Anthropic's own framing [inferred] — key
 * order type,index,…; `ping` after message_start; each block stopped before the next; `tool_use`
 * start with `input: {}`; no signature (a local model has none to give).
 */
import { randomUUID } from 'node:crypto';
import type { BackendKind } from '../kinds.js';
import type { Generation, GeneratedBlock } from './generate.js';

/** The servers the emulator plays (every backend kind but the undetected `other`). */
export type Dialect = Exclude<BackendKind, 'other'>;
/** The dialects this module writes (JSON as JavaScript writes it). */
export type AnthropicDialect = Exclude<Dialect, 'ollama'>;

export interface SseEvent {
  event: string;
  data: unknown;
  /** Generated tokens this event carries (for decode pacing; a chunk ends after such an event). */
  tokens: number;
}

export interface MessageInfo {
  id: string;
  model: string;
  promptTokens: number;
  cachedTokens: number;
  /** Ollama: message_start's input_tokens, a len/4 estimate of the request. */
  estimatedInputTokens?: number;
}

/** vLLM signs thinking blocks with a random hex string, llama.cpp with "", LM Studio not at all. */
function signatureOf(dialect: AnthropicDialect): string | undefined {
  if (dialect === 'vllm') return randomUUID().replaceAll('-', '');
  if (dialect === 'llama.cpp') return '';
  return undefined;
}

function blockJson(block: GeneratedBlock, dialect: AnthropicDialect): Record<string, unknown> {
  if (block.kind === 'thinking') {
    const signature = signatureOf(dialect);
    const thinking = { type: 'thinking', thinking: block.tokens.join('') };
    return signature === undefined ? thinking : { ...thinking, signature };
  }
  if (block.kind === 'text') return { type: 'text', text: block.tokens.join('') };
  return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
}

function usageJson(
  info: MessageInfo,
  outputTokens: number,
  dialect: AnthropicDialect,
): Record<string, number> {
  if (dialect === 'llama.cpp') {
    return {
      cache_read_input_tokens: info.cachedTokens,
      input_tokens: info.promptTokens - info.cachedTokens,
      output_tokens: outputTokens,
    };
  }
  return { input_tokens: info.promptTokens, output_tokens: outputTokens };
}

export function messageJson(
  info: MessageInfo,
  generation: Generation,
  dialect: AnthropicDialect,
): unknown {
  const content = generation.blocks.map((block) => blockJson(block, dialect));
  const usage = usageJson(info, generation.outputTokens, dialect);
  const { id, model } = info;
  const stopReason = generation.stopReason;
  if (dialect === 'lmstudio') {
    // Anthropic's key order [inferred].
    const head = { id, type: 'message', role: 'assistant', model, content };
    return { ...head, stop_reason: stopReason, stop_sequence: null, usage };
  }
  const head = { id, type: 'message', role: 'assistant', content, model, stop_reason: stopReason };
  return dialect === 'vllm' ? { ...head, usage } : { ...head, stop_sequence: null, usage };
}

function startEvent(info: MessageInfo, dialect: AnthropicDialect): SseEvent {
  const usage = usageJson(info, 0, dialect);
  const { id, model } = info;
  const stops = { stop_reason: null, stop_sequence: null };
  const message =
    dialect === 'lmstudio'
      ? { id, type: 'message', role: 'assistant', model, content: [], ...stops, usage }
      : { id, type: 'message', role: 'assistant', content: [], model, ...stops, usage };
  return { event: 'message_start', data: { type: 'message_start', message }, tokens: 0 };
}

function blockEvent(
  name: string,
  index: number,
  key: string,
  value: unknown,
  dialect: AnthropicDialect,
  tokens = 0,
): SseEvent {
  const data =
    dialect === 'vllm' ? { type: name, [key]: value, index } : { type: name, index, [key]: value };
  return { event: name, data, tokens };
}

function blockEvents(block: GeneratedBlock, index: number, dialect: AnthropicDialect): SseEvent[] {
  const delta = (value: unknown, tokens: number): SseEvent =>
    blockEvent('content_block_delta', index, 'delta', value, dialect, tokens);
  if (block.kind === 'tool_use') {
    const start = { type: 'tool_use', id: block.id, name: block.name };
    const content = dialect === 'llama.cpp' ? start : { ...start, input: {} };
    return [
      blockEvent('content_block_start', index, 'content_block', content, dialect),
      delta({ type: 'input_json_delta', partial_json: JSON.stringify(block.input) }, block.tokens),
    ];
  }
  const field = block.kind === 'thinking' ? 'thinking' : 'text';
  const events = [
    blockEvent(
      'content_block_start',
      index,
      'content_block',
      { type: block.kind, [field]: '' },
      dialect,
    ),
  ];
  for (const token of block.tokens)
    events.push(delta({ type: `${field}_delta`, [field]: token }, 1));
  return events;
}

function signatureEvent(index: number, dialect: AnthropicDialect): SseEvent[] {
  const signature = signatureOf(dialect);
  if (signature === undefined) return [];
  const delta = { type: 'signature_delta', signature };
  return [blockEvent('content_block_delta', index, 'delta', delta, dialect)];
}

function stopEvent(index: number, dialect: AnthropicDialect): SseEvent {
  return blockEvent('content_block_stop', index, 'index', index, dialect);
}

function deltaUsage(info: MessageInfo, outputTokens: number, dialect: AnthropicDialect): unknown {
  if (dialect === 'vllm') return { input_tokens: info.promptTokens, output_tokens: outputTokens };
  // llama.cpp (captured) and Anthropic's documented message_delta (LM Studio [inferred]).
  return { output_tokens: outputTokens };
}

/** The whole event sequence of one streamed reply, in the dialect's order. */
export function messageEvents(
  info: MessageInfo,
  generation: Generation,
  dialect: AnthropicDialect,
): SseEvent[] {
  const events: SseEvent[] = [startEvent(info, dialect)];
  if (dialect === 'lmstudio') events.push({ event: 'ping', data: { type: 'ping' }, tokens: 0 });
  const thinkingIndex = generation.blocks.findIndex((block) => block.kind === 'thinking');
  const stopsAtTheEnd = dialect === 'llama.cpp';
  generation.blocks.forEach((block, index) => {
    events.push(...blockEvents(block, index, dialect));
    if (!stopsAtTheEnd) {
      if (block.kind === 'thinking') events.push(...signatureEvent(index, dialect));
      events.push(stopEvent(index, dialect));
    }
  });
  if (stopsAtTheEnd) {
    if (thinkingIndex >= 0) events.push(...signatureEvent(thinkingIndex, dialect));
    generation.blocks.forEach((_, index) => events.push(stopEvent(index, dialect)));
  }
  const delta = { stop_reason: generation.stopReason, stop_sequence: null };
  const usage = deltaUsage(info, generation.outputTokens, dialect);
  events.push({ event: 'message_delta', data: { type: 'message_delta', delta, usage }, tokens: 0 });
  events.push({ event: 'message_stop', data: { type: 'message_stop' }, tokens: 0 });
  return events;
}

export function formatSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
