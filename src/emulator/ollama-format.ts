/**
 * Replies in Ollama's dialect (ollama-lmstudio.md §1; anthropic.go ToMessagesResponse and
 * StreamConverter), Go-encoded. Non-stream: blocks thinking, text, tool_use; no `stop_sequence`; usage
 * only input and output tokens; `content` null when empty. Stream: no ping; message_start with the
 * len/4 estimate and no stop keys; one delta per token, no signature; a tool call whole (the open block
 * stopped, then start with `input: {}`, one input_json_delta, stop); message_delta with both counts.
 * Each event's `tokens` sits on the last event of the HTTP chunk Ollama writes it in.
 */
import { goArguments, goJson } from './go-json.js';
import type { Generation, GeneratedBlock } from './generate.js';
import type { MessageInfo, SseEvent } from './message-format.js';

function blockJson(block: GeneratedBlock): Record<string, unknown> {
  if (block.kind === 'thinking') return { type: 'thinking', thinking: block.tokens.join('') };
  if (block.kind === 'text') return { type: 'text', text: block.tokens.join('') };
  return { type: 'tool_use', id: block.id, name: block.name, input: goArguments(block.input) };
}

export function ollamaMessageJson(info: MessageInfo, generation: Generation): unknown {
  return {
    id: info.id,
    type: 'message',
    role: 'assistant',
    model: info.model,
    content: generation.blocks.length > 0 ? generation.blocks.map(blockJson) : null,
    stop_reason: generation.stopReason,
    usage: { input_tokens: info.promptTokens, output_tokens: generation.outputTokens },
  };
}

export function ollamaEvents(info: MessageInfo, generation: Generation): SseEvent[] {
  const events: SseEvent[] = [];
  const push = (event: string, data: unknown, tokens = 0): void => {
    events.push({ event, data, tokens });
  };
  const stop = (index: number, tokens = 0): void =>
    push('content_block_stop', { type: 'content_block_stop', index }, tokens);
  const start = (index: number, block: unknown): void =>
    push('content_block_start', { type: 'content_block_start', index, content_block: block });
  const delta = (index: number, value: unknown, tokens: number): void =>
    push('content_block_delta', { type: 'content_block_delta', index, delta: value }, tokens);

  const message = {
    id: info.id,
    type: 'message',
    role: 'assistant',
    model: info.model,
    content: [],
    usage: { input_tokens: info.estimatedInputTokens ?? info.promptTokens, output_tokens: 0 },
  };
  push('message_start', { type: 'message_start', message });
  let index = 0;
  let open = false;
  for (const block of generation.blocks) {
    if (open) {
      stop(index);
      index += 1;
      open = false;
    }
    if (block.kind === 'tool_use') {
      start(index, { type: 'tool_use', id: block.id, name: block.name, input: {} });
      const json = goJson(goArguments(block.input));
      delta(index, { type: 'input_json_delta', partial_json: json }, 0);
      stop(index, block.tokens);
      index += 1;
      continue;
    }
    const field = block.kind;
    start(index, { type: field, [field]: '' });
    for (const token of block.tokens) delta(index, { type: `${field}_delta`, [field]: token }, 1);
    open = true;
  }
  if (open) stop(index);
  push('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: generation.stopReason },
    usage: { input_tokens: info.promptTokens, output_tokens: generation.outputTokens },
  });
  push('message_stop', { type: 'message_stop' });
  return events;
}

/** `event: X\ndata: <Go JSON>\n\n` (middleware writeSSE). */
export function ollamaSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${goJson(event.data)}\n\n`;
}
