import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { git, gitRepo } from '../support/git-repo.js';
import { callTool, callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';

/** merge_job and discard_job on real temp repositories, after a real worktree job (the default script writes hello.txt). */
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ nCtx: 65536, parallel: 2 });
});
afterAll(() => emulator.close());

async function finishedWorktreeJob() {
  const { client, app } = await startTestApp(emulatorConfig(emulator.url));
  const repo = await gitRepo({ 'README.md': '# demo\n' });
  const done = await callTool(client, 'run_agent', {
    task: 'Write hello.txt and show it.',
    cwd: repo,
    isolation: 'worktree',
    wait_s: 100,
  });
  expect(done.status).toBe('succeeded');
  const id = String(done.id);
  const record = await app.store.read(id);
  return { client, app, repo, id, worktree: record.worktree?.path ?? '' };
}

/** Everything a refused call must leave as it was: HEAD, branch, status and the files. */
async function treeState(repo: string): Promise<string> {
  const files = await git(repo, 'ls-files', '--others', '--cached', '--exclude-standard');
  const contents = await Promise.all(
    files
      .split('\n')
      .filter(Boolean)
      .map(async (file) => `${file}:${await readFile(join(repo, file), 'utf8')}`),
  );
  return [
    await git(repo, 'rev-parse', 'HEAD'),
    await git(repo, 'symbolic-ref', 'HEAD'),
    await git(repo, 'status', '--porcelain'),
    ...contents,
  ].join('\n');
}

const errorText = (result: Awaited<ReturnType<typeof callToolRaw>>): string =>
  result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

describe('merge_job', () => {
  it.each([
    ['merge', 2],
    ['squash', 1],
    ['cherry-pick', 1],
  ] as const)(
    '%s: the work lands on main, the worktree and branch are gone',
    async (strategy, commits) => {
      const { client, app, repo, id, worktree } = await finishedWorktreeJob();
      const before = (await git(repo, 'rev-parse', 'HEAD')).trim();
      const answer = await callTool(client, 'merge_job', { job_id: id, strategy });
      expect(answer.merged).toMatchObject({ strategy, into: 'main' });
      expect(await readFile(join(repo, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
      expect(await git(repo, 'status', '--porcelain')).toBe('');
      const log = await git(repo, 'log', '--format=%s%n%b', `${before}..HEAD`);
      expect(log).toContain(`Local-Agent-Job: ${id}`);
      expect(log).toContain('Local-Agent-Model: ');
      expect((await git(repo, 'rev-list', '--count', `${before}..HEAD`)).trim()).toBe(
        String(commits),
      );
      if (strategy === 'merge')
        expect((await git(repo, 'rev-list', '--merges', '--count', `${before}..HEAD`)).trim()).toBe(
          '1',
        );
      expect(existsSync(worktree)).toBe(false);
      expect(await git(repo, 'branch', '--list', `local-agent/${id}`)).toBe('');
      const record = await app.store.read(id);
      expect(record.worktree).toMatchObject({
        state: 'merged',
        merged: { strategy, into: 'main' },
      });
      expect(record.worktree?.merged?.commit).toBe((await git(repo, 'rev-parse', 'HEAD')).trim());
      // Nothing left to take.
      const again = await callToolRaw(client, 'merge_job', { job_id: id });
      expect(again.isError).toBe(true);
      expect(errorText(again)).toContain('nothing left to merge');
    },
  );

  it('refuses a conflict and leaves the tree byte-identical', async () => {
    const { client, repo, id } = await finishedWorktreeJob();
    await writeFile(join(repo, 'hello.txt'), 'hello from a human\n');
    await git(repo, 'add', 'hello.txt');
    await git(repo, 'commit', '-q', '-m', 'my own hello');
    const before = await treeState(repo);
    const refused = await callToolRaw(client, 'merge_job', { job_id: id });
    expect(refused.isError).toBe(true);
    expect(errorText(refused)).toContain("the job's work conflicts with main in hello.txt");
    expect(await treeState(repo)).toBe(before);
  });

  it('refuses when uncommitted changes touch the same files, or another branch is checked out', async () => {
    const { client, repo, id } = await finishedWorktreeJob();
    await writeFile(join(repo, 'hello.txt'), 'work in progress\n');
    const dirty = await treeState(repo);
    const refused = await callToolRaw(client, 'merge_job', { job_id: id, strategy: 'squash' });
    expect(errorText(refused)).toContain('you have uncommitted changes to hello.txt');
    expect(await treeState(repo)).toBe(dirty);
    await git(repo, 'stash', '-u');
    await git(repo, 'checkout', '-q', '-b', 'other');
    const elsewhere = await callToolRaw(client, 'merge_job', { job_id: id });
    expect(errorText(elsewhere)).toContain('has other checked out, not main');
    await git(repo, 'checkout', '-q', 'main');
    expect((await callTool(client, 'merge_job', { job_id: id })).merged).toMatchObject({
      into: 'main',
    });
  });
});

describe('discard_job', () => {
  it('removes the worktree and the branch and touches nothing else', async () => {
    const { client, app, repo, id, worktree } = await finishedWorktreeJob();
    const before = await treeState(repo);
    const answer = await callTool(client, 'discard_job', { job_id: id });
    expect(answer.worktree).toEqual({ state: 'removed' });
    expect(existsSync(worktree)).toBe(false);
    expect(await git(repo, 'branch', '--list', `local-agent/${id}`)).toBe('');
    expect(await treeState(repo)).toBe(before);
    expect((await app.store.read(id)).worktree?.state).toBe('removed');
  });
});

describe('base_ref "working-tree"', () => {
  it('starts from the uncommitted state, and merging applies only the job’s own changes to it', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const repo = await gitRepo({
      'README.md': '# demo\n',
      '.gitignore': 'ignored.txt\n',
      'a.txt': 'a\n',
    });
    await writeFile(join(repo, 'a.txt'), 'a staged\n');
    await git(repo, 'add', 'a.txt');
    await writeFile(join(repo, 'README.md'), '# demo, being edited\n');
    await writeFile(join(repo, 'new.txt'), 'not yet added\n');
    await writeFile(join(repo, 'ignored.txt'), 'secret scratch\n');
    const head = (await git(repo, 'rev-parse', 'HEAD')).trim();
    const status = await git(repo, 'status', '--porcelain');

    const done = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      cwd: repo,
      isolation: 'worktree',
      base: 'working-tree',
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    const record = await app.store.read(String(done.id));
    const worktree = record.worktree?.path ?? '';
    // The job saw the work in progress: staged, unstaged and untracked; not what git ignores.
    expect(await readFile(join(worktree, 'a.txt'), 'utf8')).toBe('a staged\n');
    expect(await readFile(join(worktree, 'README.md'), 'utf8')).toBe('# demo, being edited\n');
    expect(await readFile(join(worktree, 'new.txt'), 'utf8')).toBe('not yet added\n');
    expect(existsSync(join(worktree, 'ignored.txt'))).toBe(false);
    // Its diff is its own work only.
    expect(record.worktree?.diffstat?.files.map((file) => file.path)).toEqual(['hello.txt']);
    expect(record.worktree).toMatchObject({ base_ref: 'working-tree', base_branch: 'main' });

    const merged = await callTool(client, 'merge_job', { job_id: String(done.id) });
    expect(merged.merged).toMatchObject({ strategy: 'apply', into: 'main', commit: head });
    expect(await readFile(join(repo, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
    // The user's work in progress is as it was, HEAD too; the job's file is there, uncommitted.
    expect((await git(repo, 'rev-parse', 'HEAD')).trim()).toBe(head);
    const lines = (text: string) => text.split('\n').filter(Boolean).sort();
    expect(lines(await git(repo, 'status', '--porcelain'))).toEqual(
      lines(`${status}?? hello.txt\n`),
    );
    expect(await readFile(join(repo, 'ignored.txt'), 'utf8')).toBe('secret scratch\n');
    expect(existsSync(worktree)).toBe(false);
  });
});
