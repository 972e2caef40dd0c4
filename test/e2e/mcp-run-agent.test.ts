import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { git, gitRepo } from '../support/git-repo.js';
import { callTool, emulatorConfig, startTestApp } from '../support/mcp-client.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ metrics: true });
});
afterAll(() => emulator.close());

describe('run_agent over MCP', () => {
  it('runs a worktree job through the real claude and keeps the worktree with the written file', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const repo = await gitRepo({ 'README.md': '# demo\n' });

    const models = await callTool(client, 'list_models');
    expect(models.endpoints).toEqual([expect.objectContaining({ name: 'emu', up: true })]);

    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      cwd: repo,
      isolation: 'worktree',
    });
    expect(started.status).toMatch(/queued|running/);
    const id = String(started.id);

    let summary = await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
    expect(summary.status).toBe('succeeded');
    expect(summary.files_touched).toEqual(['hello.txt']);
    expect(summary.possible_no_op).toBe(false);

    const record = await app.store.read(id);
    expect(record.worktree?.state).toBe('kept');
    expect(record.worktree?.branch).toBe(`local-agent/${id}`);
    const worktreeFile = join(record.worktree?.path ?? '/nonexistent', 'hello.txt');
    expect(await readFile(worktreeFile, 'utf8')).toBe('hello from the local model\n');
    expect(existsSync(join(repo, 'hello.txt'))).toBe(false);
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    expect(record.worktree?.diffstat?.files).toEqual([
      { path: 'hello.txt', insertions: 1, deletions: 0, untracked: true },
    ]);
    expect(record.served_model).toBeTruthy();
    expect(record.endpoint).toBe('emu');
    expect(record.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(record.turns).toBeGreaterThanOrEqual(3);
    expect(record.tool_calls).toBe(2);
    expect(record.result_text).toContain('Done: I wrote hello.txt');
    expect(record.backend?.requests).toBeGreaterThanOrEqual(3);
    expect(record.backend?.speed_scope).not.toBe('unavailable');
    expect(record.claude_pid).toBeGreaterThan(0);

    const dir = app.store.jobDir(id);
    const transcript = await readFile(join(dir, 'transcript.txt'), 'utf8');
    expect(transcript).toMatch(
      /^=== job .* start: endpoint emu, model .*, window \d+ tokens \(probe\), cwd /,
    );
    expect(transcript).toContain('tool Write(');
    expect(transcript).toContain('tool Bash(cat hello.txt)');
    expect(transcript).toContain('thinking: I will write the file first.');
    expect(transcript).toMatch(/=== done: succeeded after \d+ turns, 2 tool calls/);
    const events = (await readFile(join(dir, 'events.jsonl'), 'utf8')).trim().split('\n');
    expect(events.map((line) => (JSON.parse(line) as { kind: string }).kind)).toContain(
      'result/success',
    );
    const requests = (await readFile(join(dir, 'requests.jsonl'), 'utf8')).trim().split('\n');
    expect(requests.length).toBe(record.backend?.requests);

    const diff = await callTool(client, 'job_diff', { job_id: id });
    expect(diff.diff).toContain('+hello from the local model');
    const log = await callTool(client, 'job_log', { job_id: id, tail_lines: 3 });
    expect(String(log.transcript)).toContain('=== done: succeeded');
    summary = await callTool(client, 'job_status', { job_id: id });
    expect(summary.status).toBe('succeeded');
  });

  it('removes the worktree and branch of a worktree job that changed nothing', async () => {
    const quiet = await startEmulator({
      script: [{ text: 'Nothing needed changing; the README is already correct.' }],
    });
    try {
      const { client, app } = await startTestApp(emulatorConfig(quiet.url));
      const repo = await gitRepo();
      const started = await callTool(client, 'run_agent', {
        task: 'Check the README.',
        cwd: repo,
        isolation: 'worktree',
      });
      const summary = await callTool(client, 'wait_job', { job_id: String(started.id) });
      expect(summary.status).toBe('succeeded');
      const record = await app.store.read(String(started.id));
      expect(record.worktree?.state).toBe('removed');
      expect(existsSync(record.worktree?.path ?? '/')).toBe(false);
      expect(await git(repo, 'branch', '--list', 'local-agent/*')).toBe('');
      expect(await git(repo, 'worktree', 'list')).not.toContain(record.id);
    } finally {
      await quiet.close();
    }
  });
});
