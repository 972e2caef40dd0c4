import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { resetEmulatorAfterEach } from '../support/emulator-reset.js';
import { isProcessAlive } from '../../src/jobs/process.js';
import { createJobStore } from '../../src/jobs/store.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { git, gitRepo } from '../support/git-repo.js';
import {
  callTool,
  connectStdioClient,
  emulatorConfig,
  runningClaudePids,
} from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

let emulator: Emulator;
beforeAll(async () => {
  if (!existsSync(new URL('../../dist/cli/main.js', import.meta.url))) {
    throw new Error('dist/cli/main.js is missing: run `npm run build` first (npm test does)');
  }
  emulator = await startEmulator();
});
resetEmulatorAfterEach(() => emulator);
afterAll(() => emulator.close());

async function serverSetup() {
  const configDir = await tempDir(
    { 'models.yaml': emulatorConfig(emulator.url) },
    'localagents-config-',
  );
  const stateDir = await tempDir({}, 'localagents-state-');
  const env = await isolatedClaudeEnv({ LOCALAGENTS_STATE_DIR: stateDir });
  return { configFile: join(configDir, 'models.yaml'), configDir, stateDir, env };
}

describe('localagents serve over stdio (dist)', () => {
  it('lists models, runs a worktree job and reports it succeeded, as `claude mcp add … -- localagents --config F` runs it', async () => {
    const { configFile, configDir, stateDir, env } = await serverSetup();
    // No `serve`: the default command is what `claude mcp add` starts.
    const { client } = await connectStdioClient({
      args: ['--config', configFile],
      env,
      cwd: configDir,
    });
    const repo = await gitRepo();
    const models = await callTool(client, 'list_models');
    expect(models.endpoints).toEqual([expect.objectContaining({ name: 'emu', up: true })]);
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: repo,
      isolation: 'worktree',
    });
    const summary = await callTool(client, 'wait_job', { job_id: String(started.id) });
    expect(summary.status).toBe('succeeded');
    expect(summary.files_touched).toEqual(['hello.txt']);
    const store = createJobStore(stateDir);
    const record = await store.read(String(started.id));
    expect(record.worktree?.state).toBe('kept');
    expect(await readFile(join(record.run_cwd, 'hello.txt'), 'utf8')).toBe(
      'hello from the local model\n',
    );
    expect(existsSync(join(repo, 'hello.txt'))).toBe(false);
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    // The record is complete on disk: transcript to its done line, every SDK message, every request.
    const dir = store.jobDir(record.id);
    expect(await readFile(join(dir, 'transcript.txt'), 'utf8')).toMatch(
      /\n=== done: succeeded after \d+ turns, 2 tool calls/,
    );
    const events = (await readFile(join(dir, 'events.jsonl'), 'utf8')).trim().split('\n');
    expect(JSON.parse(events[0] ?? '{}')).toMatchObject({ kind: 'system/init' });
    expect(JSON.parse(events.at(-1) ?? '{}')).toMatchObject({ kind: 'result/success' });
    const requests = (await readFile(join(dir, 'requests.jsonl'), 'utf8')).trim().split('\n');
    expect(requests).toHaveLength(record.backend?.requests ?? -1);
    expect(requests.map((line) => (JSON.parse(line) as { status: number }).status)).toEqual(
      requests.map(() => 200),
    );

    // A worktree job that changes nothing leaves neither worktree nor branch behind. Its endpoint is
    // registered over MCP too (models.local.yaml beside the user's file, which stays as it was).
    const quiet = await startEmulator({ script: [{ text: 'Nothing to change.' }] });
    try {
      const userFile = await readFile(configFile, 'utf8');
      await callTool(client, 'register_endpoint', {
        name: 'quiet',
        base_url: quiet.url,
        backend: 'llama.cpp',
      });
      expect(await readFile(configFile, 'utf8')).toBe(userFile);
      const quietRun = await callTool(client, 'run_agent', {
        task: 'Check the README.',
        cwd: repo,
        endpoint: 'quiet',
        isolation: 'worktree',
        wait_s: 100,
      });
      expect(quietRun.status).toBe('succeeded');
      const quietRecord = await store.read(String(quietRun.id));
      expect(quietRecord.endpoint).toBe('quiet');
      expect(quietRecord.worktree?.state).toBe('removed');
      expect(existsSync(quietRecord.worktree?.path ?? '/')).toBe(false);
      expect(await git(repo, 'branch', '--list', `local-agent/${quietRecord.id}`)).toBe('');
    } finally {
      await quiet.close();
    }
  });

  it('marks the job of a killed server interrupted at the next start, stops its orphaned claude and lists old jobs', async () => {
    const { configFile, configDir, stateDir, env } = await serverSetup();
    const store = createJobStore(stateDir);
    const cwd = await tempDir();
    const first = await connectStdioClient({
      args: ['serve', '--config', configFile],
      env,
      cwd: configDir,
    });
    const done = await callTool(first.client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd,
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');

    emulator.injectFaults([{ kind: 'hold' }]);
    const before = emulator.requests.length;
    const hanging = await callTool(first.client, 'run_agent', { task: 'Write hello.txt.', cwd });
    const id = String(hanging.id);
    const claudePid = await waitFor(async () => (await store.read(id)).claude_pid ?? undefined, {
      timeoutMs: 30_000,
      what: 'the claude pid in job.json',
    });
    await emulator.waitForRequest(
      (request) => request.id > before && request.path.startsWith('/v1/messages'),
      30_000,
    );
    const serverPid = first.transport.pid;
    expect(serverPid).toBeGreaterThan(0);
    process.kill(serverPid ?? 0, 'SIGKILL');
    await waitFor(() => !isProcessAlive(serverPid ?? 0), { what: 'the server to die' });
    // Contract §0.10: the orphan keeps running with its request open.
    expect(await runningClaudePids()).toContain(claudePid);
    expect((await store.read(id)).status).toBe('running');

    const second = await connectStdioClient({
      args: ['serve', '--config', configFile],
      env,
      cwd: configDir,
    });
    const jobs = await callTool(second.client, 'list_jobs', { include_finished: true });
    expect(jobs.jobs).toEqual([
      expect.objectContaining({ id, status: 'interrupted' }),
      expect.objectContaining({ id: done.id, status: 'succeeded' }),
    ]);
    expect(await runningClaudePids()).not.toContain(claudePid);
    const record = await store.read(id);
    expect(record.error?.kind).toBe('interrupted');
    expect(record.finished_at).not.toBeNull();
  });
});
