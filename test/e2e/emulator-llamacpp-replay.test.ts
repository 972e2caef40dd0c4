/**
 * Replays the llama.cpp captures that are not plain request/response fixtures: the byte-exact socket
 * captures (A49, A50: status line, headers, chunk framing) and the exchanges of the two Claude Code
 * sessions (claude-code-direct/folded-exchanges.json). Those recorded only a summary of each request,
 * so each body is rebuilt from the verbatim capture of the same Claude Code request (A55, C51) with
 * the summary's fields; what cannot be rebuilt is listed in NOT_REPLAYED with the reason.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import {
  EXCHANGE_FILES,
  RAW_CAPTURES,
  loadExchanges,
  loadRawCapture,
  type Exchange,
} from '../support/llama-exchanges.js';
import {
  LLAMA_STREAM,
  eventLabel,
  loadLlamaFixtures,
  parseSse,
  shapeDifferences,
  type SseMessage,
} from '../support/llama-fixtures.js';
import { headerMap, parseRawResponse, sendRaw } from '../support/raw-http.js';

// Server command lines from the fixtures README.
const A: EmulatorOptions = { nCtx: 16384, parallel: 2, metrics: true };
const L: EmulatorOptions = { nCtx: 32768, parallel: 2, metrics: true };
const BABBLE = ' the water'.repeat(150);

/** Headers the emulator sends that llama-server does not, and why they are left. */
const EXTRA_HEADERS: Record<string, string> = {
  date: 'node:http always sends Date; cpp-httplib does not',
};

/** Exchanges (`<file prefix> <n>`) that are not replayed, with the reason. */
const NOT_REPLAYED: Record<string, string> = {
  'folded 4':
    'the compaction prompt is recorded only as a 300-character head, so the body cannot be rebuilt; folded 2/3 replay the same overflow',
  'folded 5': 'same request as folded 4',
  'folded 6':
    'a smaller retry that fitted by 498 tokens: whether it fits depends on the real vocab and the unrecorded compaction text',
  'folded 7': "its conversation holds folded 6's reply, which was not recorded",
  'folded 8': 'same request as folded 7',
};

/** Replayed, but not with the recorded body in every detail. */
const APPROXIMATE: Record<string, string> = {
  direct:
    'body is A55 (the same first request of Claude Code 2.1.332, from another session: /home/user/project, not project2) with the summary fields',
  'direct 5': 'the 20 tool definitions were not recorded: the 9 that A55 defines stand in',
  'direct 6': 'as direct 5',
  'direct 7': 'as direct 5',
  'folded 1':
    'the prompt counts ~10.1k tokens by the emulator rule (9399 on the captured vocab), so the reply that fills the slot is shorter',
  'folded 2':
    "the assistant turn is the emulator's own reply to folded 1, sent back as Claude Code does",
  'folded 3': 'as folded 2',
};

const FIXTURES = loadLlamaFixtures();
function capturedBody(prefix: string): Record<string, unknown> {
  const body = FIXTURES.find((fixture) => fixture.file.startsWith(prefix))?.request.body;
  if (typeof body !== 'object' || body === null) throw new Error(`${prefix} has no JSON body`);
  return body as Record<string, unknown>;
}
// Claude Code's first request verbatim (A55, mid-conversation system message) and folded (C51).
const VERBATIM = capturedBody('A55-');
const FOLDED = capturedBody('C51-');

async function emulator(options: EmulatorOptions) {
  const emu = await startEmulator(options);
  onTestFinished(() => emu.close());
  return emu;
}

function events(text: string): string[] {
  return parseSse(text).map((event) => event.event);
}

describe('raw socket captures', () => {
  it.each(RAW_CAPTURES)(
    'reproduces the status line, headers and chunk framing of %s',
    async (name) => {
      const capture = loadRawCapture(name);
      const emu = await emulator({ ...A, plainReply: { thinking: BABBLE, text: BABBLE } });
      // A49's first chunk declares 571 bytes but holds 553: the capture was edited after recording
      // (its other sizes are right), so it is read by its CRLF boundaries.
      const expected = parseRawResponse(capture.response, 'crlf');
      const actual = parseRawResponse(await sendRaw(emu.url, capture.request));

      expect(actual.statusLine).toBe(expected.statusLine);
      const got = headerMap(actual.headers);
      for (const extra of Object.keys(EXTRA_HEADERS)) got.delete(extra);
      expect(Object.fromEntries(got)).toEqual(Object.fromEntries(headerMap(expected.headers)));

      if (!expected.chunks) {
        // A50: the overflow is plain JSON even for stream: true, byte for byte (9011 tokens > 8192).
        expect(actual.chunks).toBeUndefined();
        expect(actual.body.toString()).toBe(expected.body.toString());
        return;
      }
      // A49: one chunk per generated token (the first also opens the message and the block), the
      // closing events together in the last one, then the empty chunk.
      expect(actual.chunks?.map((chunk) => events(chunk.toString()))).toEqual(
        expected.chunks.map((chunk) => events(chunk.toString())),
      );
      expect(actual.chunks?.every((c) => c.length === 0 || c.toString().endsWith('\n\n'))).toBe(
        true,
      );
      const want = parseSse(expected.body.toString());
      const have = parseSse(actual.body.toString());
      expect(
        have.flatMap((event, index) => shapeDifferences(want[index]?.data, event.data)),
      ).toEqual([]);
    },
  );
});

type Summary = Exchange['request_summary'];

/** A verbatim body of the same Claude Code request with the summary's recorded fields. */
function rebuild(base: Record<string, unknown>, summary: Summary): Record<string, unknown> {
  const tools = (base.tools as { name: string }[]).filter((tool) =>
    summary.tools.includes(tool.name),
  );
  return {
    ...base,
    model: summary.model,
    stream: summary.stream,
    max_tokens: summary.max_tokens,
    thinking: summary.thinking,
    output_config: summary.output_config,
    context_management: summary.context_management,
    tools,
  };
}

const roles = (body: Record<string, unknown>): unknown[] =>
  (body.messages as { role: string }[]).map((message) => message.role);

async function send(url: string, exchange: Exchange, body: Record<string, unknown>) {
  const response = await fetch(`${url}${exchange.path}`, {
    method: exchange.method,
    headers: { 'content-type': 'application/json', ...exchange.request_headers },
    body: JSON.stringify(body),
  });
  return { response, text: await response.text() };
}

function expectCapturedHeaders(response: Response, exchange: Exchange): void {
  const captured = Object.fromEntries(headerMap(exchange.response_headers));
  const received = Object.fromEntries(
    Object.keys(captured).map((name) => [name, response.headers.get(name)]),
  );
  expect(received).toEqual(captured);
}

/** The complete events of a captured head (cut at the end) or tail (cut at the start). */
function completeEvents(text: string, side: 'head' | 'tail'): SseMessage[] {
  if (side === 'head') return parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2));
  return parseSse(text.slice(text.indexOf('\n\n') + 2));
}

/** Content blocks from a stream, the way Claude Code sends an earlier reply back. */
function contentOf(stream: SseMessage[]): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  for (const { event, data } of stream) {
    const d = data as {
      index: number;
      content_block?: Record<string, unknown>;
      delta?: Record<string, unknown>;
    };
    if (event === 'content_block_start') blocks[d.index] = { ...d.content_block };
    const block = blocks[d.index];
    if (event !== 'content_block_delta' || !block || !d.delta) continue;
    if (d.delta.type === 'text_delta') block.text = `${String(block.text)}${String(d.delta.text)}`;
    if (d.delta.type === 'thinking_delta')
      block.thinking = `${String(block.thinking)}${String(d.delta.thinking)}`;
    if (d.delta.type === 'signature_delta') block.signature = d.delta.signature;
  }
  return blocks;
}

const usageOf = (message: SseMessage | undefined): Record<string, number> =>
  (message?.data as { message?: { usage?: Record<string, number> } }).message?.usage ??
  (message?.data as { usage?: Record<string, number> }).usage ??
  {};

/** Tokens a stream occupied in its slot: prompt (cached and not) plus output. */
function slotTokens(stream: SseMessage[]): number {
  const start = usageOf(stream.find((e) => e.event === 'message_start'));
  const end = usageOf(stream.find((e) => e.event === 'message_delta'));
  return (
    (start.cache_read_input_tokens ?? 0) + (start.input_tokens ?? 0) + (end.output_tokens ?? 0)
  );
}

// The think model wrote a thinking block, closed it and wrote text until the slot was full.
const FILL_SLOT = { thinking: ' the water'.repeat(10), text: ' the water'.repeat(10_000) };

/** Folded 1 against server L: the reply streams until prompt + output fill the 16384-token slot. */
async function fillSlot(url: string, exchange: Exchange) {
  const body = rebuild(FOLDED, exchange.request_summary);
  expect(roles(body)).toEqual(exchange.request_summary.message_roles);
  const { response, text } = await send(url, exchange, body);
  return { body, response, stream: parseSse(text) };
}

const DIRECT = loadExchanges('claude-code-direct-exchanges.json');
const FOLDED_EXCHANGES = loadExchanges('claude-code-folded-exchanges.json');
const REPLAYS: Record<string, (exchange: Exchange) => Promise<void>> = {
  direct: async (exchange) => {
    const emu = await emulator(A);
    const body = rebuild(VERBATIM, exchange.request_summary);
    expect(roles(body)).toEqual(exchange.request_summary.message_roles);
    // Tools without a recorded definition are left out only where APPROXIMATE says so.
    const defined = (body.tools as { name: string }[]).map((tool) => tool.name);
    const missing = exchange.request_summary.tools.filter((name) => !defined.includes(name));
    expect(missing.length === 0 || `direct ${exchange.n}` in APPROXIMATE).toBe(true);
    const { response, text } = await send(emu.url, exchange, body);
    expect(response.status).toBe(exchange.status);
    expectCapturedHeaders(response, exchange);
    // The whole error body was recorded: the template error, byte for byte.
    expect(exchange.response_body_head).toHaveLength(exchange.response_body_len);
    expect(text).toBe(exchange.response_body_head);
  },
  'folded 1': async (exchange) => {
    const emu = await emulator({ ...L, script: [FILL_SLOT] });
    const { response, stream } = await fillSlot(emu.url, exchange);
    expect(response.status).toBe(exchange.status);
    expectCapturedHeaders(response, exchange);
    expect(stream.map((e) => e.event).join(' ')).toMatch(LLAMA_STREAM);
    const head = completeEvents(exchange.response_body_head, 'head');
    const tail = completeEvents(exchange.response_body_tail, 'tail');
    // The recorded head and tail, event by event: names, block indices and types, JSON shapes.
    expect(stream.slice(0, head.length).map(eventLabel)).toEqual(head.map(eventLabel));
    expect(
      head.flatMap((event, index) => shapeDifferences(event.data, stream[index]?.data)),
    ).toEqual([]);
    const last = stream.slice(-tail.length);
    expect(last.map(eventLabel)).toEqual(tail.map(eventLabel));
    expect(tail.flatMap((event, index) => shapeDifferences(event.data, last[index]?.data))).toEqual(
      [],
    );
    // Generation stops at the slot window, not at max_tokens 32000: both sum to 16384.
    expect(slotTokens([...head, ...tail])).toBe(16384);
    expect(slotTokens(stream)).toBe(16384);
    expect(stream.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'max_tokens' } });
  },
  'folded resume': async (exchange) => {
    const emu = await emulator({ ...L, script: [FILL_SLOT] });
    const first = FOLDED_EXCHANGES.find((e) => e.n === 1);
    if (!first) throw new Error('folded 1 is missing');
    const { body, stream } = await fillSlot(emu.url, first);
    // Claude Code resumes with the full reply plus a reminder: it cannot fit in the full slot.
    const resumed = {
      ...rebuild(FOLDED, exchange.request_summary),
      messages: [
        ...(body.messages as unknown[]),
        { role: 'assistant', content: contentOf(stream) },
        {
          role: 'user',
          content: JSON.parse(exchange.request_summary.last_message_head) as unknown,
        },
      ],
    };
    expect(roles(resumed)).toEqual(exchange.request_summary.message_roles);
    const { response, text } = await send(emu.url, exchange, resumed);
    expect(response.status).toBe(exchange.status);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(exchange.response_body_head).toHaveLength(exchange.response_body_len);
    const captured = JSON.parse(exchange.response_body_head) as { error: Record<string, unknown> };
    const answer = JSON.parse(text) as { error: Record<string, unknown> };
    expect(shapeDifferences(captured, answer)).toEqual([]);
    const wording = (error: Record<string, unknown>): string =>
      `request (${String(error.n_prompt_tokens)} tokens) exceeds the available context size (${String(error.n_ctx)} tokens), try increasing it`;
    expect(captured.error.message).toBe(wording(captured.error));
    expect(answer.error).toMatchObject({
      code: 400,
      type: captured.error.type,
      n_ctx: captured.error.n_ctx,
      message: wording(answer.error),
    });
    expect(Number(answer.error.n_prompt_tokens)).toBeGreaterThan(16384);
  },
};

function planFor(key: string): string | undefined {
  if (key.startsWith('direct ')) return 'direct';
  if (key === 'folded 1') return key;
  if (key === 'folded 2' || key === 'folded 3') return 'folded resume';
  return undefined;
}

const EXCHANGES = [
  ...DIRECT.map((exchange) => [`direct ${exchange.n}`, exchange] as const),
  ...FOLDED_EXCHANGES.map((exchange) => [`folded ${exchange.n}`, exchange] as const),
];

describe('Claude Code session exchanges', () => {
  it('replays every exchange of both sessions or lists why not', () => {
    expect(EXCHANGE_FILES).toEqual([
      'claude-code-direct-exchanges.json',
      'claude-code-folded-exchanges.json',
    ]);
    const keys: string[] = EXCHANGES.map(([key]) => key);
    expect(keys.filter((key) => (planFor(key) === undefined) === !(key in NOT_REPLAYED))).toEqual(
      [],
    );
    const listed = [...Object.keys(NOT_REPLAYED), ...Object.keys(APPROXIMATE)];
    expect(listed.filter((key) => key !== 'direct' && !keys.includes(key))).toEqual([]);
  });

  it.each(EXCHANGES.filter(([key]) => planFor(key) !== undefined))(
    'reproduces %s',
    async (key, exchange) => {
      const replay = REPLAYS[planFor(key) ?? ''];
      if (!replay) throw new Error(`no replay for ${key}`);
      await replay(exchange);
    },
  );
});
