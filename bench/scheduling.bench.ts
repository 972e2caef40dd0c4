/**
 * 16 jobs on 4 slots: the time to drain them against the ideal of 4 rounds, a round being 4 jobs started at
 * once on the same server, measured in the same run (the baseline: the same contention for the machine's cores
 * by 4 claude processes, none of it queueing); each job's wait in the queue; and that none is lost. Real claude,
 * the emulator as a llama-server with 4 slots, decoding paced so a job takes about a second. Printed: the
 * round, the drain time, its ratio to 4 rounds (1.00 = nothing lost between rounds), queue wait median and
 * max, jobs lost.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import { createApp } from '../src/app.js';
import { silentDiagnostics } from '../src/diagnostics.js';
import { startEmulator } from '../src/emulator/emulator.js';
import type { JobRecord } from '../src/jobs/job.js';
import { configPaths } from '../src/registry/config.js';
import { claudeBenchEnv } from './support.js';

const JOBS = 16;
const SLOTS = 4;
const root = await mkdtemp(join(tmpdir(), 'localagents-bench-sched-'));
const home = join(root, 'home');
await mkdir(join(home, '.claude'), { recursive: true });
const emulator = await startEmulator({
  nCtx: 32768 * SLOTS,
  parallel: SLOTS,
  latency: { decodeTokensPerSecond: 200 },
});
await writeFile(
  join(root, 'models.yaml'),
  `defaults:\n  timeout_s: 300\nendpoints:\n  desk:\n    base_url: ${emulator.url}\n    backend: llama.cpp\n`,
);
const env = claudeBenchEnv(home);
const app = createApp({
  stateDir: join(root, 'state'),
  configPaths: configPaths({ configFlag: join(root, 'models.yaml'), cwd: root, env }),
  env,
  diagnostics: silentDiagnostics,
  cwd: root,
});
await app.recovered;

async function runJobs(count: number): Promise<JobRecord[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const cwd = join(root, `work-${Date.now()}-${index}`);
    await mkdir(cwd);
    const outcome = await app.runner.start({ task: `Write hello.txt (job ${index}).`, cwd });
    if (outcome.kind !== 'started') throw new Error(outcome.resolution.message);
    ids.push(outcome.record.id);
  }
  const records: JobRecord[] = [];
  for (const id of ids) {
    let record = await app.runner.wait(id, 300_000);
    while (record.finished_at === null) record = await app.runner.wait(id, 300_000);
    records.push(record);
  }
  return records;
}

const span = (records: JobRecord[]): number =>
  Math.max(...records.map((record) => Date.parse(record.finished_at ?? ''))) -
  Math.min(...records.map((record) => Date.parse(record.created_at)));
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const results: { baseline: number[]; drain: number[]; waits: number[]; lost: number } = {
  baseline: [],
  drain: [],
  waits: [],
  lost: 0,
};

describe('scheduling', () => {
  bench(
    `${JOBS} jobs on ${SLOTS} slots, against one round of ${SLOTS}`,
    async () => {
      results.baseline.push(span(await runJobs(SLOTS)));
      const records = await runJobs(JOBS);
      results.drain.push(span(records));
      results.lost += records.filter((record) => record.status !== 'succeeded').length;
      results.waits.push(
        ...records.map(
          (record) => Date.parse(record.started_at ?? '') - Date.parse(record.created_at),
        ),
      );
    },
    { iterations: 2, warmupIterations: 0, time: 0 },
  );
});

afterAll(async () => {
  const baseline = median(results.baseline);
  const drain = median(results.drain);
  const ideal = (JOBS / SLOTS) * baseline;
  console.log(
    `scheduling: one round (${SLOTS} jobs at once) ${baseline.toFixed(0)} ms; ${JOBS} jobs on ${SLOTS} slots drained in ${drain.toFixed(0)} ms, ` +
      `${(drain / ideal).toFixed(2)}× the ideal of ${JOBS / SLOTS} rounds (${ideal.toFixed(0)} ms); queue wait median ` +
      `${median(results.waits).toFixed(0)} ms, max ${Math.max(...results.waits).toFixed(0)} ms; jobs lost: ${results.lost}`,
  );
  await app.close();
  await emulator.close();
  await rm(root, { recursive: true, force: true });
});
