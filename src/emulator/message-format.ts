/**
 * Anthropic-style replies in each server's dialect.
 * llama.cpp (captures A12, A14e, K02): key order type,index,…; `tool_use` start without `input`;
 * one `input_json_delta` with the whole JSON; thinking's `signature_delta` ("") and every
 * `content_block_stop` at the end; `message_delta.usage` only `output_tokens`; usage
 * `{cache_read_input_tokens, input_tokens, output_tokens}`.
 * vLLM (backends.md §1.11–1.12): key order type,content_block/delta,index; `tool_use` start with
 * `input: {}`; each block stopped before the next; null fields omitted in the non-stream body.
 */
import { randomUUID } from 'node:crypto';
import type { BackendKind } from '../kinds.js';
import type { Generation, GeneratedBlock } from './generate.js';

/** The two servers the emulator plays (every backend kind but the undetected `other`). */
export type Dialect = Exclude<BackendKind, 'other'>;

export interface SseEvent {
  event: string;
  data: unknown;
  /** Generated tokens this event carries (for decode pacing). */
  tokens: number;
}

export interface MessageInfo {
  id: string;
  model: string;
  promptTokens: number;
  cachedTokens: number;
}

function blockJson(block: GeneratedBlock, dialect: Dialect): Record<string, unknown> {
  if (block.kind === 'thinking') {
    const signature = dialect === 'vllm' ? randomUUID().replaceAll('-', '') : '';
    return { type: 'thinking', thinking: block.tokens.join(''), signature };
  }
  if (block.kind === 'text') return { type: 'text', text: block.tokens.join('') };
  return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
}

function usageJson(
  info: MessageInfo,
  outputTokens: number,
  dialect: Dialect,
): Record<string, number> {
  if (dialect === 'vllm') return { input_tokens: info.promptTokens, output_tokens: outputTokens };
  return {
    cache_read_input_tokens: info.cachedTokens,
    input_tokens: info.promptTokens - info.cachedTokens,
    output_tokens: outputTokens,
  };
}

export function messageJson(info: MessageInfo, generation: Generation, dialect: Dialect): unknown {
  const head = {
    id: info.id,
    type: 'message',
    role: 'assistant',
    content: generation.blocks.map((block) => blockJson(block, dialect)),
    model: info.model,
    stop_reason: generation.stopReason,
  };
  const usage = usageJson(info, generation.outputTokens, dialect);
  return dialect === 'vllm' ? { ...head, usage } : { ...head, stop_sequence: null, usage };
}

function startEvent(info: MessageInfo, dialect: Dialect): SseEvent {
  const usage = usageJson(info, 0, dialect);
  const message = {
    id: info.id,
    type: 'message',
    role: 'assistant',
    content: [],
    model: info.model,
    stop_reason: null,
    stop_sequence: null,
    usage,
  };
  return { event: 'message_start', data: { type: 'message_start', message }, tokens: 0 };
}

function blockEvent(
  name: string,
  index: number,
  key: string,
  value: unknown,
  dialect: Dialect,
  tokens = 0,
): SseEvent {
  const data =
    dialect === 'vllm' ? { type: name, [key]: value, index } : { type: name, index, [key]: value };
  return { event: name, data, tokens };
}

function blockEvents(block: GeneratedBlock, index: number, dialect: Dialect): SseEvent[] {
  const delta = (value: unknown, tokens: number): SseEvent =>
    blockEvent('content_block_delta', index, 'delta', value, dialect, tokens);
  if (block.kind === 'tool_use') {
    const start = { type: 'tool_use', id: block.id, name: block.name };
    const content = dialect === 'vllm' ? { ...start, input: {} } : start;
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

function signatureEvent(index: number, dialect: Dialect): SseEvent {
  const signature = dialect === 'vllm' ? randomUUID().replaceAll('-', '') : '';
  return blockEvent(
    'content_block_delta',
    index,
    'delta',
    { type: 'signature_delta', signature },
    dialect,
  );
}

function stopEvent(index: number, dialect: Dialect): SseEvent {
  return blockEvent('content_block_stop', index, 'index', index, dialect);
}

/** The whole event sequence of one streamed reply, in the dialect's order. */
export function messageEvents(
  info: MessageInfo,
  generation: Generation,
  dialect: Dialect,
): SseEvent[] {
  const events: SseEvent[] = [startEvent(info, dialect)];
  const thinkingIndex = generation.blocks.findIndex((block) => block.kind === 'thinking');
  generation.blocks.forEach((block, index) => {
    events.push(...blockEvents(block, index, dialect));
    if (dialect === 'vllm') {
      if (block.kind === 'thinking') events.push(signatureEvent(index, dialect));
      events.push(stopEvent(index, dialect));
    }
  });
  if (dialect === 'llama.cpp') {
    if (thinkingIndex >= 0) events.push(signatureEvent(thinkingIndex, dialect));
    generation.blocks.forEach((_, index) => events.push(stopEvent(index, dialect)));
  }
  const delta = { stop_reason: generation.stopReason, stop_sequence: null };
  const usage =
    dialect === 'vllm'
      ? { input_tokens: info.promptTokens, output_tokens: generation.outputTokens }
      : { output_tokens: generation.outputTokens };
  events.push({ event: 'message_delta', data: { type: 'message_delta', delta, usage }, tokens: 0 });
  events.push({ event: 'message_stop', data: { type: 'message_stop' }, tokens: 0 });
  return events;
}

export function formatSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
