import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createWorktree, finishWorktree } from '../../src/jobs/worktree.js';
import { git, gitRepo } from '../support/git-repo.js';
import { tempDir } from '../support/temp-dir.js';

const identity = {
  GIT_AUTHOR_NAME: 'T',
  GIT_AUTHOR_EMAIL: 't@e.invalid',
  GIT_COMMITTER_NAME: 'T',
  GIT_COMMITTER_EMAIL: 't@e.invalid',
};

function sh(command: string) {
  return promisify(execFile)('sh', ['-c', command], { env: { ...process.env, ...identity } });
}

describe('worktree review commands', () => {
  it('merge the kept work into the repository', async () => {
    const repo = await gitRepo();
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-7' });
    await writeFile(join(runCwd, 'm.txt'), 'merged\n');
    const done = await finishWorktree(info, 'job-7');
    const diff = await sh(done.review?.diff ?? 'false');
    expect(diff.stdout).toContain('+merged');
    await sh(done.review?.merge ?? 'false');
    expect(await readFile(join(repo, 'm.txt'), 'utf8')).toBe('merged\n');
  });

  it('drop the worktree and its branch', async () => {
    const repo = await gitRepo();
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-8' });
    await writeFile(join(runCwd, 'x.txt'), 'x\n');
    const done = await finishWorktree(info, 'job-8');
    await sh(done.review?.drop ?? 'false');
    expect(await git(repo, 'branch', '--list', 'local-agent/*')).toBe('');
    expect(await git(repo, 'worktree', 'list')).not.toContain('job-8');
  });
});
