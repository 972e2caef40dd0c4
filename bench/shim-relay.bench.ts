/**
 * The same streamed requests sent straight to the emulator and through the shim, in one run: Claude Code's first
 * turn (~42 KB, a system message the shim folds) and a 1 MB body (nothing to rewrite: forwarded unparsed), each
 * answered with a ~2,000-event stream. The emulators, the shim and a bare pipe relay each run in a process of their
 * own, as in production (`npm run build` first).
 * The shim's routes log to a temp dir, like a job's, so the request log's cost is in the figures.
 * Printed: added time to first event (p50/p99; targets <= 1 ms at 35 KB, <= 5 ms at 1 MB), time per event (on a
 * paced stream the target is no measurable addition, i.e. no buffering) and throughput, each absolute and as a
 * ratio to direct. Both paths must produce the same events (ids aside): checked before anything is timed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import { normalizeRequest } from '../src/shim/normalize.js';
import {
  emulatorProcess,
  firstTurnBody,
  megabyteBody,
  relayProcess,
  type RelayProcess,
} from './support.js';

const EVENTS = 2000;
const dir = await mkdtemp(join(tmpdir(), 'localagents-bench-'));
const script = join(dir, 'script.json');
await writeFile(script, JSON.stringify([{ text: ' tok'.repeat(EVENTS) }]));

/** `localagents emulate` in a child process, playing the long script at the given speed. */
const emulator = (decodeTokensPerSecond: number) =>
  emulatorProcess([
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

const instant = await emulator(0);
const paced = await emulator(8000);
const pipe = await relayProcess('pipe', instant.url);
// requests.jsonl is written as for a real job: its cost belongs in the figures.
const shimOf = async (url: string) => relayProcess('shim', url, await mkdtemp(join(dir, 'route-')));
const shims = { instant: await shimOf(instant.url), paced: await shimOf(paced.url) };

const firstTurn = firstTurnBody({ model: 'qwen-test', max_tokens: EVENTS + 100 });
const megabyte = megabyteBody(firstTurn, 'qwen-test');
if (
  normalizeRequest(megabyte, { backend: 'llama.cpp', servedId: 'qwen-test' }).kind !== 'untouched'
) {
  throw new Error('the 1 MB body should take the fast path');
}

const agent = new Agent({ keepAlive: true });

interface Sample {
  /** CPU time the relay's process spent on this request (0 direct): robust on a loaded machine. */
  relayCpuMs: number;
  firstEventMs: number;
  streamMs: number;
  totalMs: number;
  text: string;
}

/** One request to `target` (a relay, or a URL for direct); the relay's CPU is read around it, outside the timing. */
async function send(
  target: RelayProcess | string,
  body: Buffer,
  keepText = false,
): Promise<Sample> {
  if (typeof target === 'string') return timed(target, body, keepText);
  const before = await target.cpuMs();
  const sample = await timed(target.url, body, keepText);
  return { ...sample, relayCpuMs: (await target.cpuMs()) - before };
}

function timed(base: string, body: Buffer, keepText: boolean): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
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
          relayCpuMs: 0,
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
  const shimmed = eventsOf((await send(shims.instant, body, true)).text);
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
      async () => record(`${name}, unpaced/direct`, await send(instant.url, body)),
      options,
    );
    bench(
      'through a bare pipe relay (floor)',
      async () => record(`${name}, unpaced/pipe`, await send(pipe, body)),
      options,
    );
    bench(
      'through the shim',
      async () => record(`${name}, unpaced/shim`, await send(shims.instant, body)),
      options,
    );
  });
}

// Paced like a real backend (tokens trickle in after the prefill): the time to the first event is what
// Claude Code waits for, without the burst of the unpaced rows competing for this process's one thread.
for (const [name, body] of [
  ['first turn', firstTurn],
  ['1 MB body', megabyte],
] as const) {
  describe(`${name}: ${EVENTS}-event stream paced at 8000 events/s`, () => {
    bench(
      'direct to the emulator',
      async () => record(`${name} paced at 8000 events/s/direct`, await send(paced.url, body)),
      slow,
    );
    bench(
      'through the shim',
      async () => record(`${name} paced at 8000 events/s/shim`, await send(shims.paced, body)),
      slow,
    );
  });
}

const us = (value: number): string => `${(value * 1000).toFixed(2)} µs`;
const ratio = (value: number): string => `${value.toFixed(2)}× direct`;
const signed = (value: number, unit: (v: number) => string): string =>
  `${value < 0 ? '−' : '+'}${unit(Math.abs(value))}`;

/** One case's figures: direct and through the shim, absolute and as ratios. */
function report(name: string): string[] {
  const direct = samples.get(`${name}/direct`) ?? [];
  const shimmed = samples.get(`${name}/shim`) ?? [];
  const piped = samples.get(`${name}/pipe`) ?? [];
  const first = (list: Sample[]) => list.map((s) => s.firstEventMs);
  const perEvent = (list: Sample[]) => median(list.map((s) => s.streamMs)) / EVENTS;
  const eventsPerS = (list: Sample[]) => (EVENTS * 1000) / median(list.map((s) => s.totalMs));
  const [d50, s50] = [median(first(direct)), median(first(shimmed))];
  const [d99, s99] = [percentile(first(direct), 99), percentile(first(shimmed), 99)];
  const floor =
    piped.length > 0 ? `; bare pipe relay ${signed(median(first(piped)) - d50, ms)}` : '';
  const [dEvent, sEvent] = [perEvent(direct), perEvent(shimmed)];
  const [dRate, sRate] = [eventsPerS(direct), eventsPerS(shimmed)];
  const cpu = (list: Sample[]) => median(list.map((s) => s.relayCpuMs));
  return [
    `  ${name} (${direct.length}/${shimmed.length} samples):`,
    `    first event  p50 ${ms(d50)} direct, ${ms(s50)} shim (added ${signed(s50 - d50, ms)}${floor}); ` +
      `p99 ${ms(d99)} direct, ${ms(s99)} shim (added ${signed(s99 - d99, ms)})`,
    `    per event    ${us(dEvent)} direct, ${us(sEvent)} shim (${ratio(sEvent / dEvent)}, added ${signed(sEvent - dEvent, us)})`,
    `    throughput   ${dRate.toFixed(0)} events/s direct, ${sRate.toFixed(0)} events/s shim (${ratio(sRate / dRate)})` +
      (piped.length > 0
        ? `; pipe ${eventsPerS(piped).toFixed(0)} events/s: shim ${(sRate / eventsPerS(piped)).toFixed(2)}× the pipe (target ≥ 0.9×: ${sRate / eventsPerS(piped) >= 0.9 ? 'met' : 'NOT met'})`
        : ''),
    `    relay CPU    shim ${ms(cpu(shimmed))} per request` +
      (piped.length > 0
        ? `, pipe ${ms(cpu(piped))} (${(cpu(shimmed) / cpu(piped)).toFixed(2)}× the pipe)`
        : ''),
  ];
}

afterAll(async () => {
  const names = [...new Set([...samples.keys()].map((key) => key.slice(0, key.lastIndexOf('/'))))];
  const lines = ['', 'shim relay vs direct:', ...names.flatMap(report)];
  process.stdout.write(`${lines.join('\n')}\n`);
  agent.destroy();
  pipe.close();
  shims.instant.close();
  shims.paced.close();
  instant.child.kill();
  paced.child.kill();
  await rm(dir, { recursive: true, force: true });
});
