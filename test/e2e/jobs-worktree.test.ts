import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWorktree, finishWorktree } from '../../src/jobs/worktree.js';
import { git, gitRepo } from '../support/git-repo.js';
import { tempDir } from '../support/temp-dir.js';

describe('a kept worktree', () => {
  it('remembers the branch it started from and names the calls that take or drop its work', async () => {
    const repo = await gitRepo();
    const state = await tempDir();
    const { info, runCwd } = await createWorktree({ stateDir: state, cwd: repo, jobId: 'job-7' });
    expect(info.base_branch).toBe('main');
    await writeFile(join(runCwd, 'm.txt'), 'merged\n');
    const done = await finishWorktree(info, 'job-7');
    expect(done.state).toBe('kept');
    expect(done.review).toEqual({
      diff: 'job_diff(job_id: "job-7")',
      merge: 'merge_job(job_id: "job-7", strategy: "merge" | "squash" | "cherry-pick"): into main',
      drop: 'discard_job(job_id: "job-7")',
    });
  });

  it('has no branch to merge into when it started from a commit', async () => {
    const repo = await gitRepo();
    const head = (await git(repo, 'rev-parse', 'HEAD')).trim();
    const { info } = await createWorktree({
      stateDir: await tempDir(),
      cwd: repo,
      jobId: 'job-8',
      baseRef: head,
    });
    expect(info.base_branch).toBeUndefined();
    const named = await createWorktree({
      stateDir: await tempDir(),
      cwd: repo,
      jobId: 'job-9',
      baseRef: 'main',
    });
    expect(named.info.base_branch).toBe('main');
  });
});
