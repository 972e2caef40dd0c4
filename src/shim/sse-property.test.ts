import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSseProcessor } from './sse.js';

const SSE = new URL('../../test/fixtures/llama.cpp/', import.meta.url);
const capture = (name: string): string => {
  const fixture = JSON.parse(readFileSync(new URL(name, SSE), 'utf8')) as {
    response: { body_raw: string };
  };
  return fixture.response.body_raw;
};
const PLAIN = capture('A12-messages-plain-stream.json');

/** Splits `text` at the given cut points (any byte offsets). */
function split(text: string | Buffer, cuts: number[]): Buffer[] {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    chunks.push(bytes.subarray(from, point));
    from = point;
  }
  return chunks;
}

function relay(chunks: Buffer[]): {
  out: string;
  processor: ReturnType<typeof createSseProcessor>;
} {
  const processor = createSseProcessor({ model: 'q', holdLeadingError: () => false });
  const out: Buffer[] = [];
  for (const chunk of chunks) {
    const pushed = processor.push(chunk);
    if (pushed.out) out.push(pushed.out);
  }
  const rest = processor.flush();
  if (rest) out.push(rest);
  return { out: Buffer.concat(out).toString(), processor };
}

const EVENT = fc.oneof(
  fc.constant(
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}\n\n',
  ),
  fc.constant('event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'),
  fc.constant('event: ping\ndata: {"type": "ping"}\n\n'),
  fc.constant(': keepalive\n\n'),
  fc.constant('data: [DONE]\n\n'),
  fc.constant(
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n',
  ),
  fc.constant('event: error\ndata: {"code":500,"message":"boom","type":"server_error"}\n\n'),
  // Garbage a broken backend or proxy could send.
  fc.string().map((text) => `event: content_block_delta\ndata: ${text}\n\n`),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

describe('createSseProcessor split at every byte boundary', () => {
  it.each([
    'A12-messages-plain-stream.json',
    'A14e-messages-text-and-two-tool-uses-prefill-stream.json',
  ])('gives %s the same bytes for each of its boundaries as whole', (name) => {
    const stream = Buffer.from(capture(name));
    const whole = relay([stream]).out;
    for (let cut = 0; cut <= stream.length; cut++) {
      const out = relay([stream.subarray(0, cut), stream.subarray(cut)]).out;
      if (out !== whole)
        throw new Error(`split at byte ${cut} of ${stream.length} changed the output`);
    }
    expect(whole.length).toBeGreaterThan(0);
  });
});

describe('createSseProcessor under any chunking and any event order (fast-check)', () => {
  it('passes a recorded stream through byte for byte, however it is split', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 40 }), (cuts) => {
        expect(relay(split(PLAIN, cuts)).out).toBe(PLAIN);
      }),
      { numRuns: 1000 },
    );
  });

  it('never throws, and gives the same bytes however random events are split', () => {
    fc.assert(
      fc.property(
        fc.array(EVENT, { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (events, cuts) => {
          const stream = events.join('');
          const whole = relay([Buffer.from(stream)]);
          const pieces = relay(split(stream, cuts));
          // A synthesised message_start's id carries the time.
          const stable = (text: string): string => text.replace(/msg_shim_\w+/g, 'msg_shim_ID');
          expect(stable(pieces.out)).toBe(stable(whole.out));
          expect(pieces.processor.summary.events).toBe(whole.processor.summary.events);
          expect(pieces.processor.summary.malformed?.count).toBe(
            whole.processor.summary.malformed?.count,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('notes a garbled event whether it comes alone in a chunk or with others (fast-check seed -424139194)', () => {
    const good =
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}\n\n';
    const garbled = 'event: content_block_delta\ndata: {!}\n\n';
    const whole = relay([Buffer.from(good + garbled)]);
    const apart = relay([Buffer.from(good), Buffer.from(garbled)]);
    expect(whole.processor.summary.malformed?.count).toBe(1);
    expect(apart.processor.summary.malformed?.count).toBe(1);
    expect(apart.out).toBe(
      whole.out.replace(/msg_shim_\w+/, apart.out.match(/msg_shim_\w+/)?.[0] ?? ''),
    );
  });
});

describe('createSseProcessor on a delta that looks like JSON only at its ends', () => {
  it('counts it as the fast path does, whether the chunk before it held message_start or not', () => {
    const start =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"q","usage":{"input_tokens":5,"output_tokens":0}}}\n\n';
    const garbled = 'event: content_block_delta\ndata: {"type":"content_block_delta" x}\n\n';
    const whole = relay([Buffer.from(start + garbled)]);
    const apart = relay([Buffer.from(start), Buffer.from(garbled)]);
    expect(whole.out).toBe(start + garbled);
    expect(apart.out).toBe(whole.out);
    expect(whole.processor.summary.events).toBe(2);
    expect(whole.processor.summary.malformed).toBe(apart.processor.summary.malformed);
  });
});

describe('createSseProcessor on llama-server’s own event forms', () => {
  it('reads them to the summary the same events give with their members reordered (parsed)', () => {
    const llama =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"c1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"cache_read_input_tokens":13,"input_tokens":1,"output_tokens":0}}}\n\n' +
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":24}}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\n';
    const reordered =
      'event: message_start\ndata: {"message":{"usage":{"output_tokens":0,"input_tokens":1,"cache_read_input_tokens":13},"id":"c1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null},"type":"message_start"}\n\n' +
      'event: content_block_start\ndata: {"index":0,"type":"content_block_start","content_block":{"type":"text","text":""}}\n\n' +
      'event: message_delta\ndata: {"usage":{"output_tokens":24},"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null}}\n\n' +
      'event: message_stop\ndata: { "type":"message_stop"}\n\n';
    const known = relay([Buffer.from(llama)]);
    const parsed = relay([Buffer.from(reordered)]);
    expect(known.out).toBe(llama);
    expect(known.processor.summary).toEqual(parsed.processor.summary);
    expect(known.processor.summary).toMatchObject({
      events: 4,
      usage: { input_tokens: 1, output_tokens: 24, cache_read_input_tokens: 13 },
      stopReason: 'max_tokens',
      sawMessageStop: true,
    });
  });
});

/** llama-server's own forms (fixture A12), which a chunk of whole events may hold and still be passed on unread. */
const LLAMA_START =
  'event: message_start\ndata: {"type":"message_start","message":{"id":"c1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"cache_read_input_tokens":3,"input_tokens":9,"output_tokens":0}}}\n\n';
const LLAMA_EVENT = fc.oneof(
  fc.constant(
    'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}\n\n',
  ),
  fc.constant(
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"é ✓"}}\n\n',
  ),
  fc.constant(
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}\n\n',
  ),
  fc.constant('event: message_stop\ndata: {"type":"message_stop"}\n\n'),
  fc.constant(
    'event: content_block_start\ndata: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"Read"}}\n\n',
  ),
  EVENT,
);

/** Fed a byte at a time: no chunk is ever a run of whole events, so every byte is read on arrival. */
function relayByteByByte(stream: Buffer): ReturnType<typeof relay> {
  return relay([...stream].map((byte) => Buffer.from([byte])));
}

describe('createSseProcessor reading whole chunks of known events later (UNTOUCHED_RUN)', () => {
  it('gives the bytes, summary and ending that reading every byte on arrival gives, however the stream is cut', () => {
    const stable = (text: string): string => text.replace(/msg_shim_\w+/g, 'msg_shim_ID');
    fc.assert(
      fc.property(
        fc.array(LLAMA_EVENT, { maxLength: 25 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (events, cuts) => {
          const stream = Buffer.from(LLAMA_START + events.join(''));
          const read = relayByteByByte(stream);
          const cut = relay(split(stream, cuts));
          const ending = cut.processor.ending();
          expect(stable(cut.out)).toBe(stable(read.out));
          const { summary } = read.processor;
          expect(ending).toEqual({
            sawEvents: summary.events > 0,
            sawMessageStop: summary.sawMessageStop,
            failed: summary.error !== undefined || summary.truncated !== undefined,
          });
          expect({ ...cut.processor.summary, malformed: undefined }).toEqual({
            ...summary,
            malformed: undefined,
          });
          expect(cut.processor.summary.malformed?.count).toBe(summary.malformed?.count);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('passes a whole chunk of llama-server events on as the very buffer it came in, and reads it when asked', () => {
    const processor = createSseProcessor({ model: 'q', holdLeadingError: () => true });
    const chunk = Buffer.from(PLAIN);
    expect(processor.push(chunk).out).toBe(chunk);
    expect(processor.ending()).toEqual({ sawEvents: true, sawMessageStop: true, failed: false });
    expect(processor.summary).toMatchObject({ sawMessageStop: true, stopReason: 'max_tokens' });
    expect(processor.summary.events).toBeGreaterThan(3);
  });

  it.each([
    [
      'a tool_use block without input (repaired)',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"Read"}}\n\n',
    ],
    [
      'an error event (translated)',
      'event: error\ndata: {"code":500,"message":"boom","type":"server_error"}\n\n',
    ],
    ['vLLM’s [DONE] (dropped)', 'data: [DONE]\n\n'],
    [
      'a CRLF line end (normalised)',
      'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n',
    ],
    ['a half event (held for the next chunk)', 'event: message_stop\ndata: {"type":"mess'],
  ])('reads a chunk on arrival when it holds %s', (_name, tail) => {
    const processor = createSseProcessor({ model: 'q', holdLeadingError: () => false });
    const chunk = Buffer.from(LLAMA_START + tail);
    expect(processor.push(chunk).out).not.toBe(chunk);
  });
});
