import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  countPlainEvents,
  createSseProcessor,
  replaceStartPromptTokens,
  type SseProcessor,
} from './sse.js';

const LLAMA = new URL('../../test/fixtures/llama.cpp/', import.meta.url);

/** The event-stream body of a captured `.sse` file (status line and headers stripped). */
function capturedStream(name: string): string {
  const text = readFileSync(new URL(name, LLAMA), 'utf8');
  return text.slice(text.indexOf('\n\n') + 2);
}

/** Feeds `body` in pieces of `size` bytes and returns everything the processor passed on. */
function run(processor: SseProcessor, body: string, size: number): string {
  const bytes = Buffer.from(body);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    const { out: piece, leadingError } = processor.push(bytes.subarray(at, at + size));
    if (leadingError !== undefined) throw new Error(`unexpected leading error ${leadingError}`);
    if (piece) out.push(Buffer.from(piece));
  }
  const rest = processor.flush();
  if (rest) out.push(rest);
  return Buffer.concat(out).toString('utf8');
}

function events(stream: string): Array<{ name: string; data: Record<string, unknown> }> {
  return stream
    .split('\n\n')
    .filter((chunk) => chunk.startsWith('event:'))
    .map((chunk) => {
      const [first, second] = chunk.split('\n');
      return {
        name: (first ?? '').slice('event: '.length),
        data: JSON.parse((second ?? '').slice('data: '.length)) as Record<string, unknown>,
      };
    });
}

const processor = (hold = false): SseProcessor =>
  createSseProcessor({ model: 'qwen', holdLeadingError: () => hold });

describe('createSseProcessor', () => {
  it.each([1, 7, 100, 65536])(
    'passes a plain llama.cpp stream through byte-for-byte in %i-byte chunks (A12)',
    (size) => {
      const body = capturedStream('A12-messages-plain-stream.sse');
      const p = processor();
      expect(run(p, body, size)).toBe(body);
      expect(p.summary.repairs.size).toBe(0);
      expect(p.summary.sawMessageStop).toBe(true);
      expect(p.summary.stopReason).toBe('max_tokens');
      const events = body
        .split('\n\n')
        .filter((e) => e.startsWith('event:') && !e.startsWith('event: ping'));
      expect(p.summary.events).toBe(events.length);
    },
  );

  it.each([
    'A14c-messages-tool-use-prefill-stream.sse',
    'A14e-messages-text-and-two-tool-uses-prefill-stream.sse',
  ])('adds "input":{} to each tool_use block start of %s', (name) => {
    const body = capturedStream(name);
    const p = processor();
    const out = events(run(p, body, 13));
    const starts = out
      .filter((e) => e.name === 'content_block_start')
      .map((e) => e.data.content_block as Record<string, unknown>);
    const tools = starts.filter((block) => block.type === 'tool_use');
    expect(tools.length).toBeGreaterThan(0);
    for (const block of tools) expect(block.input).toEqual({});
    expect(p.summary.repairs).toContain('repair_tool_input');
    expect(p.summary.stopReason).toBe('tool_use');
  });

  it('reads usage from message_start and message_delta (A72, a cached prompt)', () => {
    const p = processor();
    run(p, capturedStream('A72-messages-cache-second-stream.sse'), 50);
    expect(p.summary.usage?.cache_read_input_tokens).toBeGreaterThan(0);
    expect(p.summary.usage?.input_tokens).toBe(1);
    expect(p.summary.usage?.output_tokens).toBeGreaterThan(0);
  });

  it.each([
    [
      'C20-messages-stream-kv-exhausted-while-generating.sse',
      'overloaded_error',
      'Context size has been exceeded.',
    ],
    [
      'random-model/R-messages-stream-midstream-error.sse',
      'api_error',
      'The model produced output that does not match the expected peg-native format',
    ],
  ])(
    'turns the bare mid-stream error of %s into an Anthropic error event',
    (name, type, message) => {
      const p = processor();
      const out = events(run(p, capturedStream(name), 64));
      const last = out[out.length - 1];
      expect(last?.name).toBe('error');
      expect(last?.data).toEqual({ type: 'error', error: { type, message } });
      expect(p.summary.error?.original).toContain(message);
    },
  );

  it('holds a stream whose first event is an error, so it can become an HTTP error (C21)', () => {
    const p = processor(true);
    const result = p.push(
      Buffer.from(capturedStream('C21-messages-kv-exhausted-second-request.sse')),
    );
    expect(result.out).toBeUndefined();
    expect(result.leadingError).toBe(
      '{"code":500,"message":"Context size has been exceeded.","type":"server_error"}',
    );
  });

  it('holds a backend comment and ping before a leading error while the shim’s keepalive is on', () => {
    const p = createSseProcessor({
      model: 'qwen',
      holdLeadingError: () => true,
      holdLeadingKeepalive: () => true,
    });
    // llama.cpp's keepalive (`--sse-ping-interval`), then unified-KV exhaustion: nothing may reach the client.
    expect(p.push(Buffer.from(':\n\n')).out).toBeUndefined();
    expect(p.push(Buffer.from('event: ping\ndata: {"type": "ping"}\n\n')).out).toBeUndefined();
    const result = p.push(
      Buffer.from(capturedStream('C21-messages-kv-exhausted-second-request.sse')),
    );
    expect(result.out).toBeUndefined();
    expect(result.leadingError).toContain('Context size has been exceeded.');
  });

  it('passes a leading backend comment on when the shim sends no keepalive of its own', () => {
    const p = createSseProcessor({
      model: 'qwen',
      holdLeadingError: () => true,
      holdLeadingKeepalive: () => false,
    });
    expect(p.push(Buffer.from(':\n\n')).out?.toString()).toBe(':\n\n');
  });

  it('translates an error that is the first event once the head is out (after a ping) into an event', () => {
    const p = processor(false);
    const out = events(run(p, capturedStream('C21-messages-kv-exhausted-second-request.sse'), 64));
    expect(out).toEqual([
      {
        name: 'error',
        data: {
          type: 'error',
          error: { type: 'overloaded_error', message: 'Context size has been exceeded.' },
        },
      },
    ]);
    expect(p.summary.repairs).toContain('translate_stream_error');
  });

  it('turns vLLM’s own mid-stream internal_error event into an api_error Claude Code retries (backends.md §1.12)', () => {
    const message =
      '1 validation error for ChatCompletionStreamResponse\nchoices\n  Field required [type=missing]';
    const body = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"chatcmpl-1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":7,"output_tokens":0}}}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
      `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'internal_error', message } })}\n\n`,
    ].join('');
    const p = processor();
    const out = events(run(p, body, 29));
    expect(out.map((e) => e.name)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect(out[3]?.data).toEqual({ type: 'error', error: { type: 'api_error', message } });
    expect(p.summary.error?.original).toContain('"internal_error"');
    expect(p.summary.sawMessageStop).toBe(false);
  });

  it('drops vLLM’s [DONE] and completes a message_start without type and role (backends.md §1.12)', () => {
    const body = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"chatcmpl-1","content":[],"model":"m"},"usage":{"input_tokens":7,"output_tokens":0}}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","content_block":{"type":"text","text":""},"index":0}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"},"index":0}\n\n',
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":7,"output_tokens":1}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      'data: [DONE]\n\n',
    ].join('');
    const p = processor();
    const text = run(p, body, 17);
    expect(text).not.toContain('[DONE]');
    const start = events(text)[0];
    expect(start?.data.message).toMatchObject({
      type: 'message',
      role: 'assistant',
      usage: { input_tokens: 7 },
    });
    expect([...p.summary.repairs].sort()).toEqual(['drop_done', 'repair_message_start']);
  });

  it('synthesises a message_start when the stream begins with a content block', () => {
    const body =
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\n';
    const p = processor();
    const out = events(run(p, body, 1000));
    expect(out.map((e) => e.name)).toEqual([
      'message_start',
      'content_block_start',
      'message_stop',
    ]);
    expect(out[0]?.data.message).toMatchObject({ role: 'assistant', model: 'qwen' });
    expect(p.summary.repairs).toContain('synth_message_start');
  });

  it('reports the shim’s prompt estimate in a synthesised message_start, so proactive compaction sees it', () => {
    const body =
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
    const p = createSseProcessor({
      model: 'qwen',
      holdLeadingError: () => false,
      promptTokensEstimate: 10_496,
    });
    const [start] = events(run(p, body, 1000));
    expect(start?.name).toBe('message_start');
    expect(start?.data.message).toMatchObject({
      usage: { input_tokens: 10_496, output_tokens: 0 },
    });
    // The log keeps what the backend reported.
    expect(p.summary.usage?.input_tokens).toBe(0);
  });

  it('passes a malformed event on as sent and notes it, so the log does not show a clean stream', () => {
    const body = capturedStream('A12-messages-plain-stream.sse');
    const cut = body.replace(
      /(event: content_block_delta\ndata: \{"type":"content_block_delta",)[^\n]*/,
      '$1"index":0,"delta":{"type":"text_de',
    );
    expect(cut).not.toBe(body);
    for (const size of [5, 65536]) {
      const p = processor();
      expect(run(p, cut, size)).toBe(cut);
      expect(p.summary.malformed).toEqual({
        count: 1,
        first: expect.stringContaining('"delta":{"type":"text_de') as unknown,
      });
    }
    const clean = processor();
    run(clean, body, 65536);
    expect(clean.summary.malformed).toBeUndefined();
  });

  it('accepts CRLF line ends', () => {
    const body = capturedStream('A12-messages-plain-stream.sse');
    const p = processor();
    expect(run(p, body.replace(/\n/g, '\r\n'), 33)).toBe(body);
  });
});

describe('countPlainEvents', () => {
  const delta = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0}\n\n';
  const stop = 'event:content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n';
  it.each([
    [delta, 1],
    [delta + stop + delta, 3],
    ['', 0],
  ])('counts the plain events of %j', (text, count) => {
    expect(countPlainEvents(Buffer.from(text))).toBe(count);
  });

  it.each([
    delta + 'event: message_delta\ndata: {}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n' + delta,
    ': keepalive\n\n',
    'data: [DONE]\n\n',
    // A name that only starts like a plain one.
    'event: content_block_deltas\ndata: {}\n\n',
    // Data that is not a JSON object: cut short, or garbage.
    'event: content_block_delta\ndata: {"type":"content_block_del\n\n',
    'event: content_block_delta\ndata: <html>502</html>\n\n',
  ])('says %j needs a look', (text) => {
    expect(countPlainEvents(Buffer.from(text))).toBeUndefined();
  });

  it('is not fooled by event names inside the data', () => {
    const text =
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"event: error"}}\n\n';
    expect(countPlainEvents(Buffer.from(text))).toBe(1);
  });

  it('leaves data that is not a content block object to the slow path, which notes garbage', () => {
    // fast-check found `{!}` counted as plain when it came in a chunk of its own, and noted when it did not.
    expect(
      countPlainEvents(Buffer.from('event: content_block_delta\ndata: {!}\n\n')),
    ).toBeUndefined();
  });
});

describe('the prompt size message_start reports (Ollama: a four-characters estimate)', () => {
  // Ollama's stream as ollama-lmstudio.md §1 gives it: an estimate in message_start, the count in message_delta.
  const ollamaStream = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_0","type":"message","role":"assistant","model":"q","content":[],"usage":{"input_tokens":2500,"output_tokens":0}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":9100,"output_tokens":1}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ].join('');

  it('reports the shim’s estimate instead, and keeps the backend’s figures for the log', () => {
    const sse = createSseProcessor({
      model: 'q',
      holdLeadingError: () => false,
      promptTokens: 9000,
    });
    const out = events(run(sse, ollamaStream, 7));
    expect(out[0]?.data).toMatchObject({
      message: { usage: { input_tokens: 9000, output_tokens: 0 } },
    });
    expect(sse.summary.repairs).toContain('count_prompt_tokens');
    expect(sse.summary.usage?.input_tokens).toBe(9100);
    expect(sse.summary.deltaInputTokens).toBe(9100);
  });

  it('puts the real count into held events once message_delta has it', () => {
    const replaced = replaceStartPromptTokens(Buffer.from(ollamaStream), 9100).toString('utf8');
    expect(events(replaced)[0]?.data).toMatchObject({
      message: { id: 'msg_0', usage: { input_tokens: 9100, output_tokens: 0 } },
    });
    expect(replaced.slice(replaced.indexOf('event: content_block_start'))).toBe(
      ollamaStream.slice(ollamaStream.indexOf('event: content_block_start')),
    );
    const noStart = Buffer.from('event: ping\ndata: {"type":"ping"}\n\n');
    expect(replaceStartPromptTokens(noStart, 5)).toBe(noStart);
  });
});
