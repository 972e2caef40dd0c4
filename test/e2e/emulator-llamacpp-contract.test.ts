/**
 * Replays every llama-server capture in test/fixtures/llama.cpp against an emulator configured like
 * the captured server (README command table) and checks status, content type, error type/message, JSON
 * key structure, the content block types in order and the SSE event skeleton. Values that depend on the
 * real tokenizer or sampler (generated text, ids, timings, most token counts) are not compared; where the
 * sampler chose the blocks (a tool call, a closed </think>), the case's script plays them. See
 * APPROXIMATE and OTHER_BLOCKS for the listed deviations.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import type { Fault } from '../../src/emulator/faults.js';
import type { ScriptTurn } from '../../src/emulator/script.js';
import { EXCHANGE_FILES, RAW_CAPTURES } from '../support/llama-exchanges.js';
import {
  LLAMA_STREAM,
  listFixtureFiles,
  loadLlamaFixtures,
  parseSse,
  requestText,
  responseHeader,
  shapeDifferences,
  streamSkeleton,
  type LlamaFixture,
} from '../support/llama-fixtures.js';
import { waitFor } from '../support/wait.js';

const FIXTURES = loadLlamaFixtures();
const A: EmulatorOptions = { nCtx: 16384, parallel: 2, metrics: true };
const CONFIGS: Record<string, EmulatorOptions> = {
  A,
  B: { nCtx: 8192, parallel: 1, metrics: true },
  C: { nCtx: 16384, metrics: true },
  D: { nCtx: 16384, parallel: 2, kvUnified: true, metrics: true },
  E: { parallel: 2, metrics: true },
  F: { ...A, apiKey: 'sk-local-test' },
  G: { nCtx: 65536, parallel: 1, metrics: true },
  H: { ...A, servedNames: ['qwen3.5-tiny'] },
  J: { nCtx: 16384, parallel: 3, metrics: true },
  K: A,
  R: A,
  Z: { ...A, loadingMs: 600_000 },
};
// The tame model babbles until max_tokens: thinking with the template default, text with thinking off.
const BABBLE = ' the water'.repeat(150);
const PLAIN_REPLY = { thinking: BABBLE, text: BABBLE };

/** Captures whose values the emulator does not reproduce on purpose (structure is still checked). */
const APPROXIMATE: Record<string, string> = {
  A30: 'token count of a real BPE vocab',
  A31: 'token count of a real BPE vocab (tool JSON)',
  C55: 'token count of a real BPE vocab (Claude Code request)',
  C56: 'token count of a real BPE vocab (Claude Code request)',
  A57: 'n_prompt_tokens of a real BPE vocab; still overflows the 8192 slot',
  A58: 'n_prompt_tokens of a real BPE vocab; still overflows the 8192 slot',
  A59: 'n_prompt_tokens of a real BPE vocab; still overflows the 8192 slot',
  A59b: 'n_prompt_tokens of a real BPE vocab; still overflows the 8192 slot',
  A40: 'nlohmann parse message; JSON.parse cannot name the same column for every input',
  A14f: 'stop_sequences are not matched (end_turn); the prefill is not parsed, its text block is scripted',
  A14g: 'stop_sequences are not matched (end_turn); the prefill is not parsed, its text block is scripted',
  A14h: 'stop_sequences are not matched against scripted text',
  A48: 'stop_sequences are not matched against scripted text',
  A45: 'the scripted reply ends (end_turn) long before the 4096-token default',
};

/**
 * Answers whose content blocks (non-stream: `content[].type` in order; stream: the event skeleton with
 * the content_block_start types) are not the captured ones. Every other answer must match them.
 */
const OTHER_BLOCKS: Record<string, string> = {};

/**
 * Files of the fixtures folder that no test replays. The raw socket pairs and the Claude Code
 * exchanges are replayed by emulator-llamacpp-replay.test.ts, the tool_use captures' framing also by
 * emulator-llamacpp-tools.test.ts, each `.sse` here with its `.json`.
 */
const NOT_REPLAYED: Record<string, string> = {
  'README.md': 'the description of the captures and the findings, not an exchange',
  'llama-server-help.txt':
    "`llama-server --help` of b10108: where the emulator's flag names come from (--metrics, --no-slots, --parallel …)",
  'claude-code-direct.txt':
    'the session log behind claude-code-direct-exchanges.json, which is replayed',
  'claude-code-folded.txt':
    'the session log behind claude-code-folded-exchanges.json, which is replayed',
};

interface Scenario {
  options?: EmulatorOptions;
  faults?: Fault[];
  /** Sequential plain requests first, so that slots have been used (they then list id_task etc.). */
  warm?: number;
  /** Streams kept generating while the probe is sent (more than the slots → deferred). */
  busy?: number;
  /** A request answered before this one (prefix-cache captures). */
  before?: string;
  /** Concurrency captures with their own choreography. */
  special?: 'concurrent' | 'kv-exhausted';
  /**
   * The summarised request was sent with `chat_template_kwargs: {enable_thinking: false}`, which its
   * summary leaves out: the tame model answered in a `text` block, and input_tokens +
   * cache_read_input_tokens is count_tokens + 2 (A38 8161 + 2, B08 8111 + 2), the +2 of thinking off
   * (A92 vs A90).
   */
  thinkingOff?: true;
}

const SLOW = { latency: { decodeTokensPerSecond: 20 } };
const THINKING_OFF = { thinkingOff: true } as const;
// Captures whose request (with tools) holds an assistant turn, a prefill or Claude Code's first
// answer, get the script's second turn: the captured blocks, not the fallback final text.
const secondTurn = (turn: ScriptTurn): Scenario => ({ options: { script: [PLAIN_REPLY, turn] } });
const READ = { name: 'Read', input: { file_path: '/etc/hostname' } };
const BASH = { name: 'Bash', input: { command: 'ls -la' } };
const SCENARIOS: Record<string, Scenario> = {
  A60: { warm: 2, busy: 1, options: SLOW },
  A61: { warm: 2, busy: 1, options: SLOW },
  A62: { warm: 2, busy: 1, options: SLOW },
  A63: { warm: 2, busy: 2, options: SLOW },
  A64: { warm: 2, busy: 3, options: SLOW },
  A65: { busy: 1, options: SLOW },
  A69: { warm: 2, busy: 2, options: SLOW },
  A69b: { warm: 2, busy: 2, options: SLOW },
  A69c: { warm: 2, busy: 2, options: SLOW },
  A14b: secondTurn({ toolCalls: [READ] }),
  A14c: secondTurn({ toolCalls: [READ] }),
  A14d: secondTurn({ text: 'I will read it.\n\n', toolCalls: [READ, BASH] }),
  A14e: secondTurn({ text: 'I will read it.\n\n', toolCalls: [READ, BASH] }),
  // No tools: the plain reply answers. The prefill closed </think>, so the model went on in text.
  A14f: { options: { plainReply: { text: BABBLE } } },
  A14g: { options: { plainReply: { text: BABBLE } } },
  A38: THINKING_OFF,
  A39: THINKING_OFF,
  A70: THINKING_OFF,
  A71: { before: 'A70', ...THINKING_OFF },
  A72: { before: 'A70', ...THINKING_OFF },
  B08: THINKING_OFF,
  C08: THINKING_OFF,
  D08: THINKING_OFF,
  E08: THINKING_OFF,
  C53: secondTurn(PLAIN_REPLY),
  C54: secondTurn(PLAIN_REPLY),
  // The think model wrote </think> after a few tokens, then text until max_tokens.
  K01: { options: { plainReply: { thinking: ' the water', text: BABBLE } } },
  K02: { options: { plainReply: { thinking: ' the water', text: BABBLE } } },
  A80: { warm: 2 },
  A81: { warm: 2 },
  A82: { warm: 2 },
  A83: { warm: 2 },
  F15: { warm: 1 },
  C12: { warm: 4, busy: 2, options: SLOW },
  C13: { special: 'concurrent', options: { latency: { prefillMsPerToken: 0.05 } } },
  C14: { special: 'concurrent', options: { latency: { prefillMsPerToken: 0.05 } } },
  C15: { warm: 4 },
  C20: { special: 'kv-exhausted', options: SLOW, ...THINKING_OFF },
  C21: { special: 'kv-exhausted', options: SLOW, ...THINKING_OFF },
  C22: { warm: 4 },
  C23: { warm: 4 },
  // The random-weights model's parser failures, reproduced with faults.
  'R-messages-no-max-tokens-parse-error-500': { faults: [{ kind: 'sse_error', afterEvents: 0 }] },
  'R-messages-stream-midstream-error': { faults: [{ kind: 'sse_error', afterEvents: 6 }] },
  'R-messages-tools-stream-parse-error': { faults: [{ kind: 'sse_error', afterEvents: 4 }] },
};

const baseName = (fixture: LlamaFixture): string =>
  fixture.file.replace(/^.*\//, '').replace(/\.json$/, '');
const caseId = (fixture: LlamaFixture): string => baseName(fixture).split('-')[0] ?? '';
const scenarioOf = (fixture: LlamaFixture): Scenario =>
  SCENARIOS[caseId(fixture)] ?? SCENARIOS[baseName(fixture)] ?? {};
const prefixOf = (fixture: LlamaFixture): string =>
  fixture.file.startsWith('random-model/') ? 'R' : fixture.file.charAt(0);

interface Answer {
  status: number;
  contentType: string;
  server: string | null;
  text: string;
}

function requestHeaders(fixture: LlamaFixture): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(fixture.request.headers ?? {})) {
    if (!['content-length', 'host'].includes(key.toLowerCase())) headers[key] = value;
  }
  return headers;
}

const THINKING_OFF_KWARGS = { chat_template_kwargs: { enable_thinking: false } };

/** The request as the capture sent it (see Scenario.thinkingOff). */
function requestBody(fixture: LlamaFixture): string | undefined {
  const text = requestText(fixture, FIXTURES);
  if (!scenarioOf(fixture).thinkingOff || text === undefined) return text;
  return JSON.stringify({ ...(JSON.parse(text) as object), ...THINKING_OFF_KWARGS });
}

async function send(emulator: Emulator, fixture: LlamaFixture): Promise<Answer> {
  const body = requestBody(fixture);
  const response = await fetch(`${emulator.url}${fixture.request.path}`, {
    method: fixture.request.method,
    headers: requestHeaders(fixture),
    ...(body === undefined ? {} : { body }),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    server: response.headers.get('server'),
    text: await response.text(),
  };
}

const plainBody = (tag: string): string =>
  JSON.stringify({
    model: 'm',
    max_tokens: 4,
    stream: true,
    messages: [{ role: 'user', content: `${tag} hello` }],
  });

async function post(emulator: Emulator, body: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${emulator.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-local-test' },
    body,
    ...(signal ? { signal } : {}),
  });
}

async function prepare(emulator: Emulator, scenario: Scenario): Promise<void> {
  for (let index = 0; index < (scenario.warm ?? 0); index += 1) {
    // Prompts that share under 10% of their tokens land on the least recently used slot.
    await (await post(emulator, plainBody(`${index} ${'word '.repeat(40)}`))).text();
  }
  if (scenario.before) {
    const earlier = FIXTURES.find(
      (f) => caseId(f) === scenario.before && f.request.path === '/v1/messages',
    );
    const body = earlier && requestBody(earlier);
    if (body) await (await post(emulator, body)).text();
  }
  const busy = scenario.busy ?? 0;
  if (busy === 0) return;
  const controller = new AbortController();
  onTestFinished(() => controller.abort());
  const seen = emulator.requests.length;
  for (let index = 0; index < busy; index += 1) {
    const body = JSON.stringify({
      model: 'm',
      max_tokens: 2000,
      stream: true,
      messages: [{ role: 'user', content: `busy ${index}` }],
    });
    post(emulator, body, controller.signal).catch(() => undefined);
  }
  await emulator.waitForRequest((r) => r.id === seen + busy);
  // Busy means generating: wait for the slots to report it.
  await waitFor(
    async () => {
      const response = await fetch(`${emulator.url}/slots`, {
        headers: { 'x-api-key': 'sk-local-test' },
      });
      const slots = (await response.json()) as { is_processing: boolean }[];
      return slots.filter((slot) => slot.is_processing).length === Math.min(busy, slots.length);
    },
    { what: 'busy slots' },
  );
}

function bodyFor(id: string, content: string, extra: Record<string, unknown>): string {
  return JSON.stringify({
    model: 'tiny-qwen3',
    messages: [{ role: 'user', content: `${id}${content}` }],
    ...extra,
  });
}

/** C13/C14: two 9000-token prompts at once on 16384 shared cells; both fail with HTTP 500. */
async function runConcurrent(emulator: Emulator, fixture: LlamaFixture): Promise<Answer> {
  const answers = await Promise.all(
    ['req0 ', 'req1 '].map(async (tag) => {
      const response = await post(emulator, bodyFor(tag, 'hello '.repeat(9000), { max_tokens: 4 }));
      return {
        tag,
        status: response.status,
        contentType: response.headers.get('content-type') ?? '',
        server: response.headers.get('server'),
        text: await response.text(),
      };
    }),
  );
  const mine = answers.find((answer) =>
    baseName(fixture).endsWith(answer.tag.trim().replace('req', 'r')),
  );
  return mine ?? answers[0]!;
}

/** C20/C21: a stream is generating when a second big streamed prompt exhausts the unified KV. */
async function runKvExhausted(emulator: Emulator, fixture: LlamaFixture): Promise<Answer> {
  const kwargs = scenarioOf(fixture).thinkingOff ? THINKING_OFF_KWARGS : {};
  const first = await post(
    emulator,
    bodyFor('', 'hello '.repeat(9000), { max_tokens: 4000, stream: true, ...kwargs }),
  );
  const reader: ReadableStreamDefaultReader<Uint8Array> = first.body!.getReader();
  const decoder = new TextDecoder();
  let firstText = '';
  while (!firstText.includes('content_block_delta')) {
    const chunk = await reader.read();
    if (chunk.done) break;
    firstText += decoder.decode(chunk.value, { stream: true });
  }
  const second = await post(
    emulator,
    bodyFor('', 'hello '.repeat(8000), { max_tokens: 4, stream: true, ...kwargs }),
  );
  const secondText = await second.text();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    firstText += decoder.decode(chunk.value, { stream: true });
  }
  const chosen =
    caseId(fixture) === 'C20'
      ? { response: first, text: firstText }
      : { response: second, text: secondText };
  return {
    status: chosen.response.status,
    contentType: chosen.response.headers.get('content-type') ?? '',
    server: chosen.response.headers.get('server'),
    text: chosen.text,
  };
}

function metricValues(text: string, names: string[]): Record<string, string | undefined> {
  return Object.fromEntries(
    names.map((name) => [name, new RegExp(`^llamacpp:${name} (\\S+)$`, 'm').exec(text)?.[1]]),
  );
}

// Which free slot llama.cpp picked first is not reproduced: compare used slots with used slots.
const bySlotUse = (body: unknown): unknown =>
  Array.isArray(body)
    ? [...(body as object[])].sort((a, b) => Object.keys(a).length - Object.keys(b).length)
    : body;

const blockTypes = (message: Record<string, unknown>): unknown =>
  Array.isArray(message.content)
    ? message.content.map((block) => (block as { type?: unknown }).type)
    : message.content;

function checkJson(fixture: LlamaFixture, received: unknown): void {
  const isSlots = fixture.request.path.startsWith('/slots');
  const expected = isSlots ? bySlotUse(fixture.response.body) : fixture.response.body;
  const actual = isSlots ? bySlotUse(received) : received;
  expect(shapeDifferences(expected, actual)).toEqual([]);
  const approximate = caseId(fixture) in APPROXIMATE;
  const exp = expected as Record<string, unknown> & { error?: Record<string, unknown> };
  const act = actual as Record<string, unknown> & { error?: Record<string, unknown> };
  if (exp.error && act.error) {
    expect(act.error.type).toBe(exp.error.type);
    if (approximate) expect(act.error.n_ctx).toBe(exp.error.n_ctx);
    else expect(act.error).toEqual(exp.error);
    return;
  }
  const path = fixture.request.path.split('?')[0];
  if (path === '/v1/messages/count_tokens' && !approximate) expect(act).toEqual(exp);
  if (path === '/v1/models' || path === '/models') {
    const pick = (body: Record<string, unknown>): unknown => {
      const data = (body.data as { id: string; aliases: string[]; meta: { n_ctx: number } }[])[0];
      return [data?.id, data?.aliases, data?.meta.n_ctx];
    };
    expect(pick(act)).toEqual(pick(exp));
  }
  if (path === '/props') {
    const pick = (body: Record<string, unknown>): unknown => [
      (body.default_generation_settings as { n_ctx: number }).n_ctx,
      body.total_slots,
      body.model_alias,
      body.endpoint_metrics,
    ];
    expect(pick(act)).toEqual(pick(exp));
  }
  if (path === '/slots' && Array.isArray(exp) && Array.isArray(act)) {
    const pick = (slots: unknown[]): unknown =>
      slots.map((slot) => [
        (slot as { n_ctx: number }).n_ctx,
        (slot as { is_processing: boolean }).is_processing,
      ]);
    expect(pick(act)).toEqual(pick(exp));
  }
  if (path === '/v1/messages' && exp.type === 'message') {
    // K ran the think variant of the model file; the emulator always reports the tame one.
    if (!caseId(fixture).startsWith('K')) expect(act.model).toBe(exp.model);
    if (!approximate) expect(act.stop_reason).toBe(exp.stop_reason);
    if (!(caseId(fixture) in OTHER_BLOCKS)) expect(blockTypes(act)).toEqual(blockTypes(exp));
    if (caseId(fixture) === 'A71') expect(act.usage).toMatchObject({ input_tokens: 1 });
  }
}

function checkSse(fixture: LlamaFixture, text: string): void {
  const expected = parseSse(fixture.response.body_raw ?? '');
  const actual = parseSse(text);
  const expectedError = expected.find((event) => event.event === 'error');
  const startTypes = (events: typeof actual): unknown[] =>
    events
      .filter((event) => event.event === 'content_block_start')
      .map((event) => (event.data as { content_block: { type: string } }).content_block.type);
  if (expectedError) {
    expect(actual.at(-1)).toEqual(expectedError);
    // Where the error cuts the stream is timing; which blocks had opened is not.
    if (!(caseId(fixture) in OTHER_BLOCKS))
      expect(startTypes(actual)).toEqual(startTypes(expected));
    if (expected.length === 1) expect(actual).toHaveLength(1);
    else expect(actual[0]?.event).toBe('message_start');
    return;
  }
  expect(actual.map((event) => event.event).join(' ')).toMatch(LLAMA_STREAM);
  if (!(caseId(fixture) in OTHER_BLOCKS)) {
    expect(streamSkeleton(actual)).toEqual(streamSkeleton(expected));
  }
  const byName = (events: typeof actual, name: string): unknown =>
    events.find((event) => event.event === name)?.data;
  for (const name of ['message_start', 'message_delta', 'message_stop']) {
    expect(shapeDifferences(byName(expected, name), byName(actual, name))).toEqual([]);
  }
  const starts = (events: typeof actual): Map<string, unknown> =>
    new Map(
      events
        .filter((e) => e.event === 'content_block_start')
        .map((e) => [
          JSON.stringify((e.data as { content_block: { type: string } }).content_block.type),
          e.data,
        ]),
    );
  for (const [type, data] of starts(actual)) {
    const captured = starts(expected).get(type);
    if (captured) expect(shapeDifferences(captured, data)).toEqual([]);
  }
  const stops = actual.filter((event) => event.event === 'content_block_stop').length;
  expect(stops).toBe(actual.filter((event) => event.event === 'content_block_start').length);
}

describe('llama.cpp personality against the b10108 captures', () => {
  it.each(FIXTURES.map((fixture) => [fixture.file, fixture] as const))(
    'reproduces %s',
    async (_name, fixture) => {
      const scenario = scenarioOf(fixture);
      const config = CONFIGS[prefixOf(fixture)] ?? A;
      const emulator = await startEmulator({
        ...config,
        plainReply: PLAIN_REPLY,
        script: [PLAIN_REPLY],
        ...scenario.options,
      });
      onTestFinished(() => emulator.close());
      if (scenario.faults) emulator.injectFaults(scenario.faults);
      await prepare(emulator, scenario);
      const answer =
        scenario.special === 'concurrent'
          ? await runConcurrent(emulator, fixture)
          : scenario.special === 'kv-exhausted'
            ? await runKvExhausted(emulator, fixture)
            : await send(emulator, fixture);

      expect(answer.status).toBe(fixture.response.status);
      expect(answer.contentType).toBe(responseHeader(fixture, 'content-type'));
      expect(answer.server).toBe('llama.cpp');
      if (fixture.response.body !== undefined) checkJson(fixture, JSON.parse(answer.text));
      else if (answer.contentType === 'text/event-stream') checkSse(fixture, answer.text);
      else {
        const types = (text: string): string[] =>
          text.split('\n').filter((line) => line.startsWith('# TYPE'));
        expect(types(answer.text)).toEqual(types(fixture.response.body_raw ?? ''));
        const names = ['requests_processing', 'requests_deferred'];
        expect(metricValues(answer.text, names)).toEqual(
          metricValues(fixture.response.body_raw ?? '', names),
        );
      }
    },
  );
});

describe('fixture coverage', () => {
  it('replays every file of test/fixtures/llama.cpp or lists why not', () => {
    const files = listFixtureFiles();
    const loaded = new Set(FIXTURES.map((fixture) => fixture.file));
    const elsewhere = new Set<string>([
      ...RAW_CAPTURES.flatMap((name) => [`${name}.request.txt`, `${name}.raw.txt`]),
      ...EXCHANGE_FILES,
    ]);
    const companion = (file: string): boolean =>
      file.endsWith('.sse') && loaded.has(file.replace(/\.sse$/, '.json'));
    const unaccounted = files.filter(
      (file) =>
        !loaded.has(file) && !elsewhere.has(file) && !companion(file) && !(file in NOT_REPLAYED),
    );
    expect(unaccounted).toEqual([]);
    const stale = [...elsewhere, ...Object.keys(NOT_REPLAYED)].filter((f) => !files.includes(f));
    expect(stale).toEqual([]);
  });
});
