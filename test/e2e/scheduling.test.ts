import { spawn } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import type { RecordedRequest } from '../../src/emulator/state.js';
import { callTool, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * Jobs wait for a free slot and spread across every box (docs/scaling.md), with the real claude: the backend's
 * own request log says how many jobs it served at once.
 */
async function box(options: EmulatorOptions = {}): Promise<Emulator> {
  // llama-server -c 65536 --parallel 2: two slots of 32768; decoding slow enough that jobs overlap.
  const emu = await startEmulator({
    nCtx: 65536,
    parallel: 2,
    latency: { decodeTokensPerSecond: 400 },
    ...options,
  });
  onTestFinished(() => emu.close());
  return emu;
}

function endpoints(boxes: Record<string, Emulator>, extra = ''): string {
  const lines = Object.entries(boxes).map(
    ([name, emu]) => `  ${name}:\n    base_url: ${emu.url}\n    backend: llama.cpp\n`,
  );
  return `defaults:\n  timeout_s: 120\n  backend_grace_s: 1\n${extra}endpoints:\n${lines.join('')}`;
}

/** The most jobs (claude sessions) whose /v1/messages requests the backend had open at one moment. */
function mostSessionsAtOnce(requests: RecordedRequest[]): number {
  const spans = new Map<string, { from: number; to: number }>();
  for (const request of requests) {
    if (!request.path.startsWith('/v1/messages') || request.path.includes('count_tokens')) continue;
    const session = request.headers['x-claude-code-session-id'] ?? String(request.id);
    const span = spans.get(session) ?? { from: request.receivedAt, to: 0 };
    span.from = Math.min(span.from, request.receivedAt);
    span.to = Math.max(span.to, request.finishedAt ?? Number.POSITIVE_INFINITY);
    spans.set(session, span);
  }
  const edges = [...spans.values()].flatMap(({ from, to }) => [
    { at: from, step: 1 },
    { at: to, step: -1 },
  ]);
  // An end and a start at the same millisecond do not overlap.
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let open = 0;
  let most = 0;
  for (const edge of edges) {
    open += edge.step;
    most = Math.max(most, open);
  }
  return most;
}

const sessions = (emu: Emulator): number =>
  new Set(
    emu.requests
      .filter((request) => request.path.startsWith('/v1/messages'))
      .map((request) => request.headers['x-claude-code-session-id']),
  ).size;

describe('jobs wait for a free slot', () => {
  it('runs 6 jobs on a 2-slot server 2 at a time, first come first served, the rest queued with their place', async () => {
    const emu = await box();
    const { client, app } = await startTestApp(endpoints({ desk: emu }));
    const ids: string[] = [];
    for (let index = 0; index < 6; index++) {
      const started = await callTool(client, 'run_agent', {
        task: `Write hello.txt (job ${index}).`,
        cwd: await tempDir(),
      });
      ids.push(String(started.id));
    }
    // The last one waits behind four others of its model, and says so.
    const last = ids[5] ?? '';
    const queued = await waitFor(
      async () => {
        const status = await callTool(client, 'job_status', { job_id: last });
        return status.status === 'queued' && status.queue ? status : undefined;
      },
      { what: 'the sixth job to report its place in the queue' },
    );
    expect(queued.queue).toMatchObject({
      position: expect.any(Number) as unknown,
      reason: 'waiting for a free slot on desk (2/2 busy)',
    });
    const listed = await callTool(client, 'list_jobs');
    expect(JSON.stringify(listed)).toContain('waiting for a free slot on desk');

    const records = [];
    for (const id of ids) {
      const done = await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
      expect(done.status).toBe('succeeded');
      records.push(await app.store.read(id));
    }
    expect(mostSessionsAtOnce(emu.requests)).toBe(2);
    expect(sessions(emu)).toBe(6);
    // First come, first served: they started in the order they were asked for.
    const starts = records.map((record) => Date.parse(record.started_at ?? ''));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(records.every((record) => record.queue === null)).toBe(true);
  });

  it('spreads jobs over three boxes; when one dies its jobs fail clearly and the queued ones go elsewhere', async () => {
    const boxes = { a: await box(), b: await box(), c: await box() };
    // Box c answers nothing until it dies: its two jobs hang there, the others finish on a and b.
    boxes.c.injectFaults([{ kind: 'hold', count: 1000 }]);
    const { client, app } = await startTestApp(endpoints(boxes));
    const ids: string[] = [];
    for (let index = 0; index < 9; index++) {
      const started = await callTool(client, 'run_agent', {
        task: `Write hello.txt (job ${index}).`,
        cwd: await tempDir(),
      });
      ids.push(String(started.id));
    }
    await waitFor(() => boxes.c.heldRequests() >= 2, { what: 'two jobs running on box c' });
    await boxes.c.close();
    const records = [];
    for (const id of ids) {
      await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
      records.push(await app.store.read(id));
    }
    const onC = records.filter((record) => record.endpoint === 'c');
    expect(onC).toHaveLength(2);
    for (const record of onC) {
      expect(record.status).toBe('failed');
      expect(record.error?.kind).toBe('backend_down');
      expect(record.error?.message).toContain('endpoint c');
    }
    const rest = records.filter((record) => record.endpoint !== 'c');
    expect(rest.map((record) => record.status)).toEqual(Array(7).fill('succeeded'));
    expect(new Set(rest.map((record) => record.endpoint))).toEqual(new Set(['a', 'b']));
    expect(sessions(boxes.a)).toBeGreaterThan(0);
    expect(sessions(boxes.b)).toBeGreaterThan(0);
    expect(mostSessionsAtOnce(boxes.a.requests)).toBeLessThanOrEqual(2);
    expect(mostSessionsAtOnce(boxes.b.requests)).toBeLessThanOrEqual(2);
  });

  it('cancels a queued job at once, and its place goes to the next', async () => {
    const emu = await box({ parallel: 1, nCtx: 32768 });
    emu.injectFaults([{ kind: 'hold', count: 1000 }]);
    const { client } = await startTestApp(endpoints({ desk: emu }));
    const first = await callTool(client, 'run_agent', { task: 'one', cwd: await tempDir() });
    const second = await callTool(client, 'run_agent', { task: 'two', cwd: await tempDir() });
    await waitFor(() => emu.heldRequests() >= 1, { what: 'the first job on the slot' });
    const cancelled = await callTool(client, 'cancel_job', { job_id: String(second.id) });
    expect(cancelled).toMatchObject({
      status: 'cancelled',
      error: { kind: 'cancelled', message: 'the job was cancelled while it waited for a slot' },
    });
    expect(cancelled.elapsed_s).toBeUndefined();
    await callTool(client, 'cancel_job', { job_id: String(first.id) });
    emu.releaseHolds();
  });
});

describe('two localagents processes on one box', () => {
  it('never run two jobs at once on a 1-slot server', async () => {
    const emu = await box({ parallel: 1, nCtx: 32768, latency: { decodeTokensPerSecond: 200 } });
    const { client, app, stateDir, configFile, env } = await startTestApp(endpoints({ desk: emu }));
    // The other process: `localagents run`, same state directory, same models.yaml.
    const cwd = await tempDir();
    const other = spawn(
      process.execPath,
      [
        'dist/cli/main.js',
        'run',
        'Write hello.txt.',
        '--cwd',
        cwd,
        '--config',
        configFile,
        '--json',
      ],
      { env: { ...env, LOCALAGENTS_STATE_DIR: stateDir }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number>((resolve) =>
      other.on('exit', (code) => resolve(code ?? -1)),
    );
    onTestFinished(() => {
      other.kill();
    });
    const mine = [];
    for (let index = 0; index < 2; index++) {
      const started = await callTool(client, 'run_agent', {
        task: `Write hello.txt (job ${index}).`,
        cwd: await tempDir(),
      });
      mine.push(String(started.id));
    }
    expect(await exited).toBe(0);
    for (const id of mine) {
      const done = await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
      expect(done.status).toBe('succeeded');
    }
    expect(sessions(emu)).toBe(3);
    expect(mostSessionsAtOnce(emu.requests)).toBe(1);
    expect((await app.store.list()).records).toHaveLength(3);
  });
});
