/**
 * The same streamed requests sent straight to the emulator and through the shim, in one run: Claude Code's first
 * turn (~42 KB, a system message the shim folds) and a 1 MB body (nothing to rewrite: forwarded unparsed), each
 * answered with a ~2,000-event stream. The emulators run in their own processes (`localagents emulate`, so run
 * `npm run build` first), as a real backend would; the shim runs here.
 * Printed: added time to first event (p50/p99; targets <= 1 ms at 35 KB, <= 5 ms at 1 MB), added delay per event
 * on a paced stream (target: none measurable, i.e. no buffering), and throughput on an unpaced one, as ratios.
 * Both paths must produce the same events (ids aside): checked before anything is timed.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, bench, describe } from 'vitest';
import { normalizeRequest, type AnthropicRequest } from '../src/shim/normalize.js';
import { createShim } from '../src/shim/server.js';

const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const EVENTS = 2000;
const dir = await mkdtemp(join(tmpdir(), 'localagents-bench-'));
const script = join(dir, 'script.json');
await writeFile(script, JSON.stringify([{ text: ' tok'.repeat(EVENTS) }]));

/** `localagents emulate` in a child process; resolves with its URL (the first stdout line). */
async function emulator(decodeTokensPerSecond: number) {
  const child = spawn(process.execPath, [
    MAIN,
    'emulate',
    '--port',
    '0',
    '--no-strict-template',
    '--parallel',
    '1',
    '--n-ctx',
    '2000000',
    '--n-ctx-train',
    '2000000',
    '--script',
    script,
    '--decode-tokens-per-s',
    String(decodeTokensPerSecond),
  ]);
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return { url: line.trim(), child };
}

const instant = await emulator(0);
const paced = await emulator(8000);
/**
 * The floor for any extra HTTP hop on this machine: a bare `req.pipe()` relay that inspects and rewrites nothing.
 * Printed next to the shim so the shim's own cost can be told from the cost of one more loopback hop.
 */
async function pipeRelay(target: string) {
  const upstreamAgent = new Agent({ keepAlive: true });
  const url = new URL(target);
  const server = createServer((req, res) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
        agent: upstreamAgent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(outgoing);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () => (server.close(), upstreamAgent.destroy()),
  };
}

const pipe = await pipeRelay(instant.url);
const shim = await createShim();
const routeOf = (url: string) =>
  shim.addRoute({
    backendUrl: url,
    backend: 'llama.cpp',
    servedId: 'qwen-test',
    keepaliveMs: 60_000,
  });
const viaShim = { instant: routeOf(instant.url).baseUrl, paced: routeOf(paced.url).baseUrl };

const fixture = JSON.parse(
  readFileSync(
    new URL('../../shared/fixtures/claude-code/first-turn-request.json', import.meta.url),
    'utf8',
  ),
) as { body: AnthropicRequest };
const firstTurn = Buffer.from(
  JSON.stringify({ ...fixture.body, model: 'qwen-test', max_tokens: EVENTS + 100 }),
);

/** The first turn as forwarded plus a tool round whose result is a ~1 MB file: nothing left to rewrite. */
function megabyteBody(): Buffer {
  const folded = normalizeRequest(firstTurn, { backend: 'llama.cpp', servedId: 'qwen-test' });
  if (folded.kind !== 'rewritten') throw new Error('the first turn should need a rewrite');
  const body = JSON.parse(folded.body.toString('utf8')) as AnthropicRequest;
  const line = 'export const value = "the quick brown fox jumps over the lazy dog";\n';
  body.messages.push(
    {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { file_path: '/w/big.ts' } }],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 't1',
          content: line.repeat(Math.ceil(1_000_000 / line.length)),
        },
      ],
    },
  );
  return Buffer.from(JSON.stringify(body));
}
const megabyte = megabyteBody();
if (
  normalizeRequest(megabyte, { backend: 'llama.cpp', servedId: 'qwen-test' }).kind !== 'untouched'
) {
  throw new Error('the 1 MB body should take the fast path');
}

const agent = new Agent({ keepAlive: true });

interface Sample {
  /** CPU time of this process (client, plus the shim when it is in the path): robust on a loaded machine. */
  cpuMs: number;
  firstEventMs: number;
  streamMs: number;
  totalMs: number;
  text: string;
}

/** Milliseconds of CPU (user + system) this process used since `start`. */
function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function send(base: string, body: Buffer, keepText = false): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const cpu = process.cpuUsage();
    let first = 0;
    const chunks: Buffer[] = [];
    const req = request(`${base}/v1/messages?beta=true`, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': body.length,
        'x-api-key': 'x',
      },
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode} from ${base}`));
      res.on('data', (chunk: Buffer) => {
        if (first === 0) first = performance.now();
        if (keepText) chunks.push(chunk);
      });
      res.on('end', () => {
        const end = performance.now();
        resolve({
          cpuMs: cpuSince(cpu),
          firstEventMs: first - started,
          streamMs: end - first,
          totalMs: end - started,
          text: Buffer.concat(chunks).toString(),
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Event names and text, without the random ids, for the equal-output check. */
function eventsOf(text: string): string[] {
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('event:'))
    .map((event) =>
      event
        .replace(/"id":"[^"]*"/g, '"id":""')
        .replace(/"(input|cache_read_input|output)_tokens":\d+/g, ''),
    );
}

for (const [name, body] of [
  ['first turn', firstTurn],
  ['1 MB', megabyte],
] as const) {
  const direct = eventsOf((await send(instant.url, body, true)).text);
  const shimmed = eventsOf((await send(viaShim.instant, body, true)).text);
  if (direct.length < EVENTS || JSON.stringify(direct) !== JSON.stringify(shimmed)) {
    throw new Error(
      `${name}: the shim changed the stream (${direct.length} vs ${shimmed.length} events)`,
    );
  }
}

const samples = new Map<string, Sample[]>();
function record(key: string, sample: Sample): void {
  const list = samples.get(key) ?? [];
  list.push(sample);
  samples.set(key, list);
}
const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const median = (values: number[]): number => percentile(values, 50);
const ms = (value: number): string => `${value.toFixed(2)} ms`;

const options = { time: 2000, iterations: 15, warmupIterations: 3 };
const slow = { time: 500, iterations: 6, warmupIterations: 1 };

for (const [name, body] of [
  [`Claude Code first turn (${(firstTurn.length / 1e3).toFixed(0)} KB)`, firstTurn],
  [`1 MB body (${(megabyte.length / 1e6).toFixed(2)} MB)`, megabyte],
] as const) {
  describe(`${name}: ${EVENTS}-event stream, unpaced`, () => {
    bench(
      'direct to the emulator',
      async () => record(`${name}/direct`, await send(instant.url, body)),
      options,
    );
    bench(
      'through a bare pipe relay (floor)',
      async () => record(`${name}/pipe`, await send(pipe.url, body)),
      options,
    );
    bench(
      'through the shim',
      async () => record(`${name}/shim`, await send(viaShim.instant, body)),
      options,
    );
  });
}

describe(`first turn: ${EVENTS}-event stream paced at 8000 events/s`, () => {
  bench(
    'direct to the emulator',
    async () => record('paced/direct', await send(paced.url, firstTurn)),
    slow,
  );
  bench(
    'through the shim',
    async () => record('paced/shim', await send(viaShim.paced, firstTurn)),
    slow,
  );
});

afterAll(async () => {
  const lines: string[] = ['', 'shim relay vs direct:'];
  for (const name of [
    ...new Set([...samples.keys()].map((key) => key.slice(0, key.lastIndexOf('/')))),
  ]) {
    const direct = samples.get(`${name}/direct`) ?? [];
    const shimmed = samples.get(`${name}/shim`) ?? [];
    const first = (list: Sample[]) => list.map((s) => s.firstEventMs);
    const added50 = median(first(shimmed)) - median(first(direct));
    const added99 = percentile(first(shimmed), 99) - percentile(first(direct), 99);
    const perEvent =
      (median(shimmed.map((s) => s.streamMs)) - median(direct.map((s) => s.streamMs))) / EVENTS;
    const cpuAdded = median(shimmed.map((s) => s.cpuMs)) - median(direct.map((s) => s.cpuMs));
    const throughput = median(direct.map((s) => s.totalMs)) / median(shimmed.map((s) => s.totalMs));
    const piped = samples.get(`${name}/pipe`) ?? [];
    const floor =
      piped.length > 0
        ? ` [bare pipe relay: +${ms(median(first(piped)) - median(first(direct)))}]`
        : '';
    lines.push(
      `  ${name}: first event p50 ${ms(median(first(direct)))} direct, +${ms(added50)} through the shim (p99 +${ms(added99)})${floor}; ` +
        `per-event added ${(perEvent * 1000).toFixed(1)} µs; throughput ${throughput.toFixed(2)}× direct; ` +
        `shim CPU +${ms(cpuAdded)}/request ` +
        `(${direct.length}/${shimmed.length} samples)`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  agent.destroy();
  pipe.close();
  await shim.close();
  instant.child.kill();
  paced.child.kill();
  await rm(dir, { recursive: true, force: true });
});
