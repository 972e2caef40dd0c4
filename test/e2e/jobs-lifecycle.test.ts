import { existsSync, readFileSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { resetEmulatorAfterEach } from '../support/emulator-reset.js';
import { gitRepo } from '../support/git-repo.js';
import {
  callTool,
  emulatorConfig,
  runningClaudePids,
  startTestApp,
  type TestApp,
} from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

let emulator: Emulator;
beforeAll(async () => {
  // Two slots of 32k each: Claude Code's own prompt needs about 9k tokens and compaction headroom.
  emulator = await startEmulator({ parallel: 2, nCtx: 65_536 });
});
resetEmulatorAfterEach(() => emulator);
afterAll(() => emulator.close());

/** Starts a job whose first backend request the emulator holds; resolves with its id once it is held. */
async function startHeldJob(client: TestApp['client']): Promise<string> {
  emulator.injectFaults([{ kind: 'hold' }]);
  const started = await callTool(client, 'run_agent', {
    task: 'Write hello.txt.',
    cwd: await tempDir(),
  });
  await waitFor(() => emulator.heldRequests() === 1, {
    timeoutMs: 30_000,
    what: 'the job’s first request held',
  });
  return String(started.id);
}

describe('job lifecycle', () => {
  it('stops a job at its timeout and leaves no claude process behind', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    emulator.injectFaults([{ kind: 'hold' }]);
    const cwd = await tempDir();
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd,
      timeout_s: 4,
    });
    const summary = await callTool(client, 'wait_job', {
      job_id: String(started.id),
      timeout_s: 60,
    });
    expect(summary.status).toBe('timeout');
    expect(summary.error).toMatchObject({ kind: 'timeout' });
    expect(JSON.stringify(summary.error)).toContain('timeout_s');
    const record = await app.store.read(String(started.id));
    expect(record.claude_pid).toBeGreaterThan(0);
    expect(await runningClaudePids()).not.toContain(record.claude_pid);
    expect(record.finished_at).not.toBeNull();
  });

  it('takes the original’s wait_job timeout_s 120, saying how long it waited while the job runs', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const id = await startHeldJob(client);
    const running = await callTool(client, 'wait_job', { job_id: id, timeout_s: 1 });
    expect(running).toMatchObject({ status: 'running', waited_s: 1 });
    expect(String(running.next)).toMatch(/call wait_job again/);
    emulator.releaseHolds();
    const done = await callTool(client, 'wait_job', { job_id: id, timeout_s: 120 });
    expect(done.status).toBe('succeeded');
    expect(done.waited_s).toBeUndefined();
  });

  it('cancels a running job, ending its claude process', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    emulator.injectFaults([{ kind: 'hold' }]);
    const before = emulator.requests.length;
    const cwd = await tempDir();
    const started = await callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd });
    const id = String(started.id);
    const pid = await waitFor(async () => (await app.runner.get(id)).claude_pid ?? undefined, {
      timeoutMs: 30_000,
      what: 'the claude pid',
    });
    await emulator.waitForRequest(
      (request) => request.id > before && request.path.startsWith('/v1/messages'),
      30_000,
    );
    expect(await runningClaudePids()).toContain(pid);
    const cancelled = await callTool(client, 'cancel_job', { job_id: id });
    expect(cancelled.status).toBe('cancelled');
    expect(await runningClaudePids()).not.toContain(pid);
    expect((await app.store.read(id)).status).toBe('cancelled');
  });

  it('cancels from another runner a job whose claude has not spoken yet, without waiting out the deadline', async () => {
    // A "claude" that never starts talking: the job is running, but there is no claude process to stop,
    // so only the owner's AbortController can end it. The other runner can reach it only via the marker.
    const bin = await tempDir({ 'silent-claude': '#!/bin/sh\nexec sleep 600\n' });
    const claudePath = join(bin, 'silent-claude');
    await chmod(claudePath, 0o755);
    const owner = await startTestApp(emulatorConfig(emulator.url), { claudePath });
    const started = await callTool(owner.client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: bin,
    });
    const id = String(started.id);
    const pid = await waitFor(
      async () => (await owner.app.runner.get(id)).claude_pid ?? undefined,
      {
        timeoutMs: 30_000,
        what: 'the wrapper pid',
      },
    );
    const other = await startTestApp(emulatorConfig(emulator.url), { stateDir: owner.stateDir });
    const cancelled = await other.app.runner.cancel(id);
    expect(cancelled.status).toBe('cancelled');
    expect(isLive(pid)).toBe(false);
  });

  it('waits from another runner for a job it does not own until the job ends', async () => {
    const owner = await startTestApp(emulatorConfig(emulator.url));
    // Holds the first answer back until the other runner waits, so the job is running when it starts.
    const id = await startHeldJob(owner.client);
    const other = await startTestApp(emulatorConfig(emulator.url), { stateDir: owner.stateDir });
    expect((await other.app.runner.get(id)).status).toBe('running');
    const progress: string[] = [];
    const waiting = other.app.runner.wait(id, 60_000, (record) => progress.push(record.status));
    expect(emulator.releaseHolds()).toBe(1);
    const waited = await waiting;
    expect(waited.status).toBe('succeeded');
    expect(progress.length).toBeGreaterThan(0);
  });

  it('runs two jobs at once on a two-slot backend and both succeed', async () => {
    // A slow prefill (1 ms per uncached token: seconds for Claude Code's first prompt) holds each slot
    // long enough to see both taken at once: the jobs really run side by side, not one after the other.
    const slow = await startEmulator({
      parallel: 2,
      nCtx: 65_536,
      metrics: true,
      latency: { prefillMsPerToken: 1 },
    });
    onTestFinished(() => slow.close());
    const { client, app } = await startTestApp(emulatorConfig(slow.url));
    const [first, second] = await Promise.all([gitRepo(), gitRepo()]);
    const ids = await Promise.all(
      [first, second].map(async (cwd) =>
        String((await callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd })).id),
      ),
    );
    await waitFor(
      async () => {
        const slots = (await (await fetch(`${slow.url}/slots`)).json()) as {
          is_processing: boolean;
        }[];
        return slots.every((slot) => slot.is_processing);
      },
      { timeoutMs: 60_000, what: 'both slots busy at once' },
    );
    const summaries = await Promise.all(
      ids.map((id) => callTool(client, 'wait_job', { job_id: id })),
    );
    expect(summaries.map((summary) => [summary.status, summary.error])).toEqual([
      ['succeeded', undefined],
      ['succeeded', undefined],
    ]);
    const records = await Promise.all(ids.map((id) => app.store.read(id)));
    expect(records.map((record) => record.files_touched)).toEqual([['hello.txt'], ['hello.txt']]);
    expect(records[0]?.session_id).not.toBe(records[1]?.session_id);
    // /metrics deltas covered both jobs: each record says its speeds are server-wide.
    expect(records.map((record) => record.backend?.speed_scope)).toEqual([
      'server_wide',
      'server_wide',
    ]);
  });

  it('continues a finished job’s session with resume_job', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const repo = await gitRepo();
    const first = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: repo,
      isolation: 'worktree',
      wait_s: 100,
    });
    expect(first.status).toBe('succeeded');
    const firstRecord = await app.store.read(String(first.id));
    const before = emulator.requests.length;
    const second = await callTool(client, 'run_agent', {
      task: 'Now say what you did.',
      resume_job: first.id,
      wait_s: 100,
    });
    expect(second.status).toBe('succeeded');
    expect(second.id).not.toBe(first.id);
    const record = await app.store.read(String(second.id));
    expect(record.resumed_from).toBe(first.id);
    expect(record.session_id).toBe(firstRecord.session_id);
    expect(record.run_cwd).toBe(firstRecord.run_cwd);
    expect(record.served_model).toBe(firstRecord.served_model);
    const resumed = emulator.requests
      .slice(before)
      .find((request) => request.path.startsWith('/v1/messages'));
    expect(resumed?.rawBody).toContain('Write hello.txt.');
    expect(resumed?.rawBody).toContain('Now say what you did.');
  });

  it('resumes a worktree job whose unchanged worktree was removed, in the same worktree path again', async () => {
    // Turn 1 changes nothing (the worktree is removed); the resumed session's next turn writes a file.
    const scripted = await startEmulator({
      script: [
        { text: 'Nothing needed changing.' },
        {
          toolCalls: [
            { name: 'Write', input: { file_path: '${cwd}/later.txt', content: 'later\n' } },
          ],
        },
        { text: 'Done: wrote later.txt.' },
      ],
    });
    onTestFinished(() => scripted.close());
    const { client, app } = await startTestApp(emulatorConfig(scripted.url));
    const repo = await gitRepo();
    const first = await callTool(client, 'run_agent', {
      task: 'Check the README.',
      cwd: repo,
      isolation: 'worktree',
      wait_s: 100,
    });
    const firstRecord = await app.store.read(String(first.id));
    expect(firstRecord.worktree?.state).toBe('removed');
    expect(existsSync(firstRecord.worktree?.path ?? '/')).toBe(false);

    const second = await callTool(client, 'run_agent', {
      task: 'Now write later.txt.',
      resume_job: first.id,
      wait_s: 100,
    });
    expect(second.status).toBe('succeeded');
    const record = await app.store.read(String(second.id));
    expect(record.session_id).toBe(firstRecord.session_id);
    expect(record.run_cwd).toBe(firstRecord.run_cwd);
    expect(record.worktree).toMatchObject({
      path: firstRecord.worktree?.path,
      branch: firstRecord.worktree?.branch,
      base_commit: firstRecord.worktree?.base_commit,
      state: 'kept',
    });
    expect(await readFile(join(record.run_cwd, 'later.txt'), 'utf8')).toBe('later\n');
    expect(existsSync(join(repo, 'later.txt'))).toBe(false);
  });

  it('keeps one job’s failure out of another job running at the same time', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const [failing, fine] = await Promise.all([
      callTool(client, 'run_agent', {
        task: 'Write hello.txt.',
        cwd: await tempDir(),
        max_turns: 1,
      }),
      callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd: await tempDir() }),
    ]);
    const [failed, succeeded] = await Promise.all(
      [failing, fine].map((job) => callTool(client, 'wait_job', { job_id: String(job.id) })),
    );
    expect(failed?.status).toBe('failed');
    expect(failed?.error).toMatchObject({ kind: 'max_turns' });
    expect(succeeded?.status).toBe('succeeded');
    expect((await app.store.read(String(fine.id))).files_touched).toEqual(['hello.txt']);
  });

  it('stops running jobs when the server shuts down and records them interrupted', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    emulator.injectFaults([{ kind: 'hold' }]);
    const before = emulator.requests.length;
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
    });
    const id = String(started.id);
    const pid = await waitFor(async () => (await app.runner.get(id)).claude_pid ?? undefined, {
      timeoutMs: 30_000,
    });
    await emulator.waitForRequest(
      (request) => request.id > before && request.path.startsWith('/v1/messages'),
      30_000,
    );
    await app.close();
    const record = await app.store.read(id);
    expect(record.status).toBe('interrupted');
    expect(record.error?.message).toContain('shut down');
    expect(await runningClaudePids()).not.toContain(pid);
  });

  const bundled = fileURLToPath(
    new URL(
      `../../node_modules/@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`,
      import.meta.url,
    ),
  );
  it.skipIf(!existsSync(bundled))('runs the claude binary given as claude_path', async () => {
    const dir = await tempDir();
    const marker = join(dir, 'wrapper-ran');
    const wrapper = join(dir, 'my-claude');
    await writeFile(wrapper, `#!/bin/sh\necho "$@" > '${marker}'\nexec '${bundled}' "$@"\n`);
    await chmod(wrapper, 0o755);
    const { client } = await startTestApp(emulatorConfig(emulator.url), { claudePath: wrapper });
    const summary = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(summary.status).toBe('succeeded');
    expect(await readFile(marker, 'utf8')).toContain('stream-json');
  });
});

/** Whether `pid` is a live process (not gone, not a zombie waiting to be reaped), from /proc. */
function isLive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
