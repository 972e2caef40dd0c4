import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../../test/support/git-repo.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { computeDiff, createWorktree, findRepo, finishWorktree } from './worktree.js';

describe('createWorktree', () => {
  it('adds a worktree on local-agent/<job> under the state dir, at the same relative directory', async () => {
    const repo = await gitRepo({ 'README.md': '# r\n', 'pkg/a.txt': 'a\n' });
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({
      stateDir: state,
      cwd: join(repo, 'pkg'),
      jobId: 'job-1',
    });
    expect(info.branch).toBe('local-agent/job-1');
    expect(info.path).toBe(join(state, 'worktrees', info.path.split('/').at(-2) ?? '', 'job-1'));
    expect(runCwd).toBe(join(info.path, 'pkg'));
    expect(await readFile(join(runCwd, 'a.txt'), 'utf8')).toBe('a\n');
    expect(info.base_commit).toBe((await git(repo, 'rev-parse', 'HEAD')).trim());
    expect(await git(repo, 'branch', '--list', 'local-agent/job-1')).toContain('local-agent/job-1');
  });

  it('refuses a directory that is not in a git repository, before anything starts', async () => {
    const plain = await tempDir({ 'x.txt': 'x' });
    const state = await tempDir();
    await expect(createWorktree({ stateDir: state, cwd: plain, jobId: 'job-2' })).rejects.toThrow(
      /needs a git repository/,
    );
    expect(existsSync(join(state, 'worktrees'))).toBe(false);
  });

  it('starts the worktree at base_ref', async () => {
    const repo = await gitRepo({ 'a.txt': 'one\n' });
    const first = (await git(repo, 'rev-parse', 'HEAD')).trim();
    await writeFile(join(repo, 'a.txt'), 'two\n');
    await git(repo, 'commit', '-q', '-am', 'two');
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({
      stateDir: state,
      cwd: repo,
      jobId: 'job-9',
      baseRef: 'HEAD~1',
    });
    expect(info.base_commit).toBe(first);
    expect(info.base_ref).toBe('HEAD~1');
    expect(await readFile(join(runCwd, 'a.txt'), 'utf8')).toBe('one\n');
  });

  it('names the bad base_ref', async () => {
    const repo = await gitRepo();
    const state = await tempDir();
    await expect(
      createWorktree({ stateDir: state, cwd: repo, jobId: 'job-3', baseRef: 'no-such-branch' }),
    ).rejects.toThrow(/base_ref "no-such-branch"/);
  });
});

describe('finishWorktree', () => {
  it('removes an unchanged worktree and its branch', async () => {
    const repo = await gitRepo();
    const state = await tempDir();
    const { info } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-4' });
    const done = await finishWorktree(info, 'job-4');
    expect(done.state).toBe('removed');
    expect(existsSync(info.path)).toBe(false);
    expect(await git(repo, 'branch', '--list', 'local-agent/job-4')).toBe('');
  });

  it('keeps a changed worktree with a diffstat that includes untracked files and review commands', async () => {
    const repo = await gitRepo({ 'README.md': 'one\ntwo\n' });
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-5' });
    await writeFile(join(runCwd, 'README.md'), 'one\n2\nthree\n');
    await mkdir(join(runCwd, 'new'), { recursive: true });
    await writeFile(join(runCwd, 'new/file.txt'), 'a\nb\nc\n');
    const done = await finishWorktree(info, 'job-5');
    expect(done.state).toBe('kept');
    expect(done.diffstat?.files).toEqual([
      { path: 'README.md', insertions: 2, deletions: 1, untracked: false },
      { path: 'new/file.txt', insertions: 3, deletions: 0, untracked: true },
    ]);
    expect(done.diffstat?.files_changed).toBe(2);
    expect(done.diffstat?.insertions).toBe(5);
    expect(done.review?.drop).toBe('discard_job(job_id: "job-5")');
    expect(existsSync(join(repo, 'new/file.txt'))).toBe(false);
    const diff = await computeDiff(info.path, info.base_commit);
    expect(diff).toContain('+three');
    expect(diff).toContain('+++ b/new/file.txt');
  });

  it('bounds the diff: a file too big on its own is named with how to see it, the rest is shown', async () => {
    const repo = await gitRepo({ 'big.txt': 'x\n', 'small.txt': 'a\n' });
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-7' });
    await writeFile(join(runCwd, 'big.txt'), 'line of a generated file\n'.repeat(400));
    await writeFile(join(runCwd, 'small.txt'), 'b\n');
    await writeFile(join(runCwd, 'dump.log'), 'log line\n'.repeat(1000));
    await writeFile(join(runCwd, 'note.txt'), 'new\n');
    const diff = await computeDiff(info.path, info.base_commit, 4096);
    expect(diff).toContain('+b');
    expect(diff).toContain('+new');
    expect(diff).toMatch(
      /# the diff of big\.txt is over 4 KB and is not shown; see it with: git -C \S+ diff [0-9a-f]+ -- big\.txt/,
    );
    expect(diff).toContain('# the diff of dump.log is over');
    expect(diff).not.toContain('line of a generated file');
    expect(diff).not.toContain('log line');
    // Without a bound that small, everything is there.
    expect(await computeDiff(info.path, info.base_commit)).toContain('+line of a generated file');
  });

  it('keeps a worktree whose only change is a commit', async () => {
    const repo = await gitRepo();
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-6' });
    await writeFile(join(runCwd, 'c.txt'), 'c\n');
    await git(runCwd, 'add', 'c.txt');
    await git(runCwd, 'commit', '-q', '-m', 'c');
    const done = await finishWorktree(info, 'job-6');
    expect(done.state).toBe('kept');
    expect(done.head_commit).not.toBe(info.base_commit);
    expect(done.diffstat?.files.map((file) => file.path)).toEqual(['c.txt']);
  });
});

describe('findRepo', () => {
  it('answers undefined outside a repository', async () => {
    expect(await findRepo(await tempDir())).toBeUndefined();
  });
});
