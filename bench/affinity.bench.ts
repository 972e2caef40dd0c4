/**
 * What a router without session affinity costs a job (docs/scaling.md): two emulated llama-server replicas, one
 * job of the default script through the real claude, three ways: through a relay that sends each request to the
 * next replica in turn (a round-robin router), pinned to one replica, and with the replicas listed as two
 * endpoints (the job's slot lease keeps it on one). Printed per run: the prompt tokens each /v1/messages turn
 * found cached on the replica that served it, and the job's wall time, prefill being paced at 0.05 ms a token.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import { createApp } from '../src/app.js';
import { silentDiagnostics } from '../src/diagnostics.js';
import { startEmulator, type Emulator } from '../src/emulator/emulator.js';
import { configPaths } from '../src/registry/config.js';
import { claudeBenchEnv } from './support.js';
import type { RequestLogLine } from '../src/shim/log.js';

const root = await mkdtemp(join(tmpdir(), 'localagents-bench-affinity-'));
const home = join(root, 'home');
await mkdir(join(home, '.claude'), { recursive: true });
const replica = (): Promise<Emulator> =>
  startEmulator({
    nCtx: 131072,
    nCtxTrain: 131072,
    parallel: 2,
    latency: { prefillMsPerToken: 0.05 },
  });
const replicas = [await replica(), await replica()];

/** A router without affinity: each request to the next replica, bytes passed through both ways. */
let next = 0;
const relay: Server = createServer((req, res) => {
  const target = replicas[next++ % replicas.length];
  const upstream = httpRequest(
    `${target?.url ?? ''}${req.url ?? '/'}`,
    { method: req.method, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
});
await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
const address = relay.address();
const relayUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

const env = claudeBenchEnv(home);

async function oneJob(
  name: string,
  endpoints: Record<string, string>,
): Promise<{ cached: number[]; ms: number }> {
  const dir = join(root, name);
  await mkdir(join(dir, 'work'), { recursive: true });
  const yaml = Object.entries(endpoints)
    .map(([endpoint, url]) => `  ${endpoint}:\n    base_url: ${url}\n    backend: llama.cpp\n`)
    .join('');
  await writeFile(join(dir, 'models.yaml'), `endpoints:\n${yaml}`);
  const app = createApp({
    stateDir: join(dir, 'state'),
    configPaths: configPaths({ configFlag: join(dir, 'models.yaml'), cwd: dir, env }),
    env,
    diagnostics: silentDiagnostics,
    cwd: dir,
  });
  try {
    const outcome = await app.runner.start({ task: 'Write hello.txt.', cwd: join(dir, 'work') });
    if (outcome.kind !== 'started') throw new Error(outcome.resolution.message);
    let record = await app.runner.wait(outcome.record.id, 120_000);
    while (record.finished_at === null) record = await app.runner.wait(record.id, 120_000);
    if (record.status !== 'succeeded') throw new Error(`${name}: the job ${record.status}`);
    const lines = (await readFile(join(app.store.jobDir(record.id), 'requests.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RequestLogLine)
      .filter((line) => line.path.startsWith('/v1/messages') && line.tools > 0);
    return {
      cached: lines.map((line) => line.usage?.cache_read_input_tokens ?? 0),
      ms: Date.parse(record.finished_at ?? '') - Date.parse(record.started_at ?? ''),
    };
  } finally {
    await app.close();
  }
}

const runs: Record<string, { cached: number[]; ms: number }> = {};
let round = 0;
describe('session affinity', () => {
  bench(
    'alternating replicas, pinned, listed separately',
    async () => {
      round += 1;
      runs.alternating = await oneJob(`alternating-${round}`, { pool: relayUrl });
      runs.pinned = await oneJob(`pinned-${round}`, { a: replicas[0]?.url ?? '' });
      runs.listed = await oneJob(`listed-${round}`, {
        a: replicas[0]?.url ?? '',
        b: replicas[1]?.url ?? '',
      });
    },
    { iterations: 1, warmupIterations: 0, time: 0 },
  );
});

afterAll(async () => {
  for (const [name, run] of Object.entries(runs))
    console.log(
      `affinity ${name}: cached prompt tokens per turn [${run.cached.join(', ')}], job wall time ${run.ms} ms`,
    );
  relay.close();
  for (const emu of replicas) await emu.close();
  await rm(root, { recursive: true, force: true });
});
