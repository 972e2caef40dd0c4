/**
 * What the shim adds to one request, against the floor of any extra HTTP hop: a bare `req.pipe()` relay
 * built here. Three bodies, each answered with a short stream (max_tokens 16) so the request itself is
 * what is timed: a small request and Claude Code's first turn already folded (~32 KB), neither needing a
 * rewrite, and the first turn as Claude Code sends it (a system message to fold). Direct, pipe and shim
 * are sent in rotation, round after round, so drift on a loaded machine hits all three alike.
 * Targets, as ratios of the time each relay adds to the direct request (p50 of the per-round differences, 300
 * rounds): a body that needs no rewrite
 * ≤ 1.3× what the pipe adds, one that needs a fold ≤ 2×. The emulator, the pipe and the shim each run in a process
 * of their own, as in production (run `npm run build` first). Also printed: each relay's CPU time per request, read
 * from its process, which holds steady on a loaded machine where wall-clock figures drift.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import { normalizeRequest } from '../src/shim/normalize.js';
import { emulatorProcess, firstTurnBody, relayProcess, type RelayProcess } from './support.js';

const ROUNDS = 300;
const dir = await mkdtemp(join(tmpdir(), 'localagents-bench-overhead-'));

const emulated = await emulatorProcess([
  '--no-strict-template',
  '--n-ctx',
  '262144',
  '--n-ctx-train',
  '262144',
]);
const direct = emulated.url;
const pipeRelayed = await relayProcess('pipe', direct);
const pipe = pipeRelayed.url;
// requests.jsonl is written as for a real job: its cost belongs in the figures.
const shimRelayed = await relayProcess('shim', direct, await mkdtemp(join(dir, 'route-')));
const viaShim = shimRelayed.url;

const asSent = firstTurnBody({ model: 'qwen-test', max_tokens: 16 });
const folded = normalizeRequest(asSent, { backend: 'llama.cpp', servedId: 'qwen-test' });
if (folded.kind !== 'rewritten') throw new Error('the first turn should need a fold');
const small = Buffer.from(
  JSON.stringify({
    model: 'qwen-test',
    max_tokens: 16,
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  }),
);
const CASES = [
  { name: 'small request, no rewrite', body: small, target: 1.3 },
  {
    name: `Claude Code body already folded (${(folded.body.length / 1e3).toFixed(0)} KB), no rewrite`,
    body: folded.body,
    target: 1.3,
  },
  {
    name: `Claude Code first turn (${(asSent.length / 1e3).toFixed(0)} KB), fold`,
    body: asSent,
    target: 2,
  },
] as const;
for (const { name, body } of CASES.slice(0, 2)) {
  if (normalizeRequest(body, { backend: 'llama.cpp', servedId: 'qwen-test' }).kind !== 'untouched')
    throw new Error(`${name}: should take the fast path`);
}

const agent = new Agent({ keepAlive: true });

/** One request; resolves with the milliseconds from sending to the end of the answer. */
function send(base: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(`${base}/v1/messages?beta=true`, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': body.length },
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode} from ${base}`));
      res.resume();
      res.on('end', () => resolve(performance.now() - started));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Figures {
  direct: number[];
  pipe: number[];
  shim: number[];
  /** CPU milliseconds per request in each relay's process. */
  cpu: { pipe: number; shim: number };
}
const times = new Map<string, Figures>();
const CPU_REQUESTS = 50;

/** The relay process's CPU time per request, over CPU_REQUESTS requests in a row. */
async function cpuPerRequest(relay: RelayProcess, body: Buffer): Promise<number> {
  const before = await relay.cpuMs();
  for (let index = 0; index < CPU_REQUESTS; index += 1) await send(relay.url, body);
  return ((await relay.cpuMs()) - before) / CPU_REQUESTS;
}
const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

describe(`shim overhead against a bare pipe relay (${ROUNDS} interleaved rounds per body)`, () => {
  for (const { name, body } of CASES) {
    bench(
      name,
      async () => {
        const entry: Figures = { direct: [], pipe: [], shim: [], cpu: { pipe: 0, shim: 0 } };
        for (let round = 0; round < 5; round += 1) {
          await send(direct, body);
          await send(pipe, body);
          await send(viaShim, body);
        }
        for (let round = 0; round < ROUNDS; round += 1) {
          entry.direct.push(await send(direct, body));
          entry.pipe.push(await send(pipe, body));
          entry.shim.push(await send(viaShim, body));
        }
        entry.cpu = {
          pipe: await cpuPerRequest(pipeRelayed, body),
          shim: await cpuPerRequest(shimRelayed, body),
        };
        times.set(name, entry);
      },
      { iterations: 1, time: 0, warmupIterations: 0 },
    );
  }
});

afterAll(async () => {
  const lines = ['', 'shim overhead vs a bare pipe relay (p50 of the time each adds to direct):'];
  for (const { name, target: limit } of CASES) {
    const entry = times.get(name);
    if (!entry) continue;
    const base = median(entry.direct);
    // Paired: each round's relay time less the same round's direct time, so the backend's own jitter
    // (a 42 KB prompt takes the emulator 3-5 ms) and drift on a loaded machine cancel out.
    const added = (times: number[]): number =>
      median(times.map((time, round) => time - (entry.direct[round] ?? Number.NaN)));
    const pipeAdds = added(entry.pipe);
    const shimAdds = added(entry.shim);
    const ratio = shimAdds / pipeAdds;
    const { cpu } = entry;
    lines.push(
      `  ${name}: direct ${base.toFixed(2)} ms; pipe adds ${pipeAdds.toFixed(2)} ms, shim adds ${shimAdds.toFixed(2)} ms = ${ratio.toFixed(2)}× the pipe (target ≤ ${limit}×: ${ratio <= limit ? 'met' : 'NOT met'})`,
      `    CPU per request: pipe ${cpu.pipe.toFixed(2)} ms, shim ${cpu.shim.toFixed(2)} ms = ${(cpu.shim / cpu.pipe).toFixed(2)}×`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  agent.destroy();
  pipeRelayed.close();
  shimRelayed.close();
  emulated.child.kill();
  await rm(dir, { recursive: true, force: true });
});
