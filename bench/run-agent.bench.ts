/**
 * run_agent → first backend request, against a bare Agent SDK query() to the same emulator, in one run.
 * The subject is the MCP tool itself, called by a real MCP Client (in-memory transport), as Claude calls it.
 * Both start the same bundled `claude` with the same system prompt preset, tools and permission mode; the
 * subject adds what localagents does before and around it (registry probe and resolution, job record,
 * shim route, env building, transcript). The measured span ends when the emulator sees the first
 * /v1/messages request. Each iteration measures one pair, alternating which goes first; before each
 * measured span the previous session is allowed to finish (the scripted model ends it within a second),
 * so sessions never overlap. vitest's own table times whole pairs including those waits: the line printed
 * at the end, from the measured spans only, is the result.
 * Printed: both medians, the added milliseconds (target: within +100 ms) and the ratio.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { query, type Query } from '@anthropic-ai/claude-agent-sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, bench, describe } from 'vitest';
import { createApp } from '../src/app.js';
import { silentDiagnostics } from '../src/diagnostics.js';
import { startEmulator } from '../src/emulator/emulator.js';
import { configPaths } from '../src/registry/config.js';
import { claudeBenchEnv } from './support.js';

const TASK = 'Write hello.txt.';
const root = await mkdtemp(join(tmpdir(), 'localagents-bench-run-'));
const home = join(root, 'home');
await mkdir(join(home, '.claude'), { recursive: true });
const cwd = join(root, 'work');
await mkdir(cwd);
const emulator = await startEmulator();
await writeFile(
  join(root, 'models.yaml'),
  `endpoints:\n  emu:\n    base_url: ${emulator.url}\n    backend: llama.cpp\n`,
);

const env = claudeBenchEnv(home);
const app = createApp({
  stateDir: join(root, 'state'),
  configPaths: configPaths({ configFlag: join(root, 'models.yaml'), cwd: root, env }),
  env,
  diagnostics: silentDiagnostics,
  cwd,
});
await app.recovered;
const resolution = await app.registry.resolve({});
if (resolution.kind !== 'ready')
  throw new Error(`the emulator endpoint is not ready: ${resolution.message}`);
const servedId = resolution.servedId;

let run = 0;
/** A task text unique to this iteration, so a late request of the previous session can never match. */
function nextTask(): string {
  run += 1;
  return `${TASK} (run ${run})`;
}

async function firstRequestFor(task: string): Promise<{ path: string; model: unknown }> {
  const request = await emulator.waitForRequest(
    (candidate) => candidate.path.startsWith('/v1/messages') && candidate.rawBody.includes(task),
    60_000,
  );
  const body = request.body as { model?: unknown } | undefined;
  return { path: request.path, model: body?.model };
}

// --- subject: the run_agent tool, called by a real MCP client over an in-memory transport ------------
const mcpServer = app.createMcpServer();
const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
const client = new Client({ name: 'localagents-bench', version: '0.0.0' });
await Promise.all([mcpServer.connect(serverTransport), client.connect(clientTransport)]);

let jobId: string | undefined;
async function runAgentOnce(): Promise<{ path: string; model: unknown }> {
  const task = nextTask();
  const result = await client.callTool({ name: 'run_agent', arguments: { task, cwd } });
  const started = result.structuredContent as { id?: unknown; status?: unknown } | undefined;
  if (typeof started?.id !== 'string') throw new Error('run_agent did not start a job');
  jobId = started.id;
  return firstRequestFor(task);
}
/** Lets the previous job end on its own (the scripted model finishes quickly); cancels it if it does not. */
async function finishJob(): Promise<void> {
  if (jobId) {
    const record = await app.runner.wait(jobId, 30_000);
    if (record.finished_at === null) await app.runner.cancel(jobId);
  }
  jobId = undefined;
}

// --- baseline: a bare query() with the same options ---------------------------------------------------
let session: { query: Query; drained: Promise<void> } | undefined;
async function bareQueryOnce(): Promise<{ path: string; model: unknown }> {
  const task = nextTask();
  const running = query({
    prompt: task,
    options: {
      cwd,
      model: servedId,
      env: {
        ...env,
        ANTHROPIC_BASE_URL: emulator.url,
        ANTHROPIC_API_KEY: 'bench',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      systemPrompt: { type: 'preset', preset: 'claude_code' },
      permissionMode: 'acceptEdits',
      allowedTools: ['Read', 'Edit', 'Write', 'Glob', 'Grep', 'Bash'],
      settingSources: ['project', 'local'],
    },
  });
  const drained = (async () => {
    try {
      for await (const _message of running) {
        // drain
      }
    } catch {
      // an error result ends the stream the same way for both subjects
    }
  })();
  session = { query: running, drained };
  return firstRequestFor(task);
}
async function finishQuery(): Promise<void> {
  await session?.drained;
  session = undefined;
}

// Both subjects must reach the backend the same way before anything is timed.
const subject = await runAgentOnce();
await finishJob();
const baseline = await bareQueryOnce();
await finishQuery();
if (subject.path !== baseline.path || subject.model !== baseline.model) {
  throw new Error(`the subjects differ: ${JSON.stringify(subject)} vs ${JSON.stringify(baseline)}`);
}

const samples: Record<'run_agent' | 'query', number[]> = { run_agent: [], query: [] };
async function measure(name: 'run_agent' | 'query', fn: () => Promise<unknown>): Promise<void> {
  await finishJob();
  await finishQuery();
  const started = performance.now();
  await fn();
  samples[name].push(performance.now() - started);
}
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] ?? NaN)
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
};

let pair = 0;
describe('time to the first backend request', () => {
  // One pair per iteration, the order alternating, so machine load drifts hit both subjects alike.
  bench(
    'bare query() and run_agent, interleaved',
    async () => {
      pair += 1;
      if (pair % 2) {
        await measure('query', bareQueryOnce);
        await measure('run_agent', runAgentOnce);
      } else {
        await measure('run_agent', runAgentOnce);
        await measure('query', bareQueryOnce);
      }
    },
    { iterations: 6, warmupIterations: 0, time: 0 },
  );
});

afterAll(async () => {
  await finishJob();
  await finishQuery();
  const subjectMs = median(samples.run_agent);
  const baselineMs = median(samples.query);
  console.log(
    `run_agent → first backend request: median ${subjectMs.toFixed(0)} ms; bare query(): ${baselineMs.toFixed(0)} ms ` +
      `(${samples.query.length} pairs); added ${(subjectMs - baselineMs).toFixed(0)} ms (target ≤ +100 ms), ` +
      `ratio ${(subjectMs / baselineMs).toFixed(2)}×`,
  );
  await client.close();
  await mcpServer.close();
  await app.close();
  await emulator.close();
  await rm(root, { recursive: true, force: true });
});
