import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../jobs/job.js';
import { newJobRecord } from '../jobs/record.js';
import { DIFFSTAT_FILES, jobView, TASK_CHARS } from './job-view.js';

const queued = newJobRecord({
  id: '20261201-100000-abcd',
  task: 'Fix the failing test\n\nThe details follow on later lines.',
  cwd: '/work/repo',
  isolation: 'worktree',
  permissionMode: 'acceptEdits',
  maxTurns: 20,
  timeoutS: 600,
  requestedModel: 'qwen',
});
const alive = () => true;
const dead = () => false;

describe('jobView', () => {
  it('shows the first line of the brief and what was asked for until the job starts', () => {
    const view = jobView(queued, alive);
    expect(view.task).toBe('Fix the failing test');
    expect(view.model).toBe('qwen');
    expect(view.orphaned).toBe(false);
    expect(view.finished).toBe(false);
    expect(view.figures).toBeNull();
  });

  it('clips a long first line', () => {
    const view = jobView({ ...queued, task: 'x'.repeat(500) }, alive);
    expect(view.task).toHaveLength(TASK_CHARS);
    expect(view.task.endsWith('…')).toBe(true);
  });

  it('marks an unfinished job whose owner is gone, and never a finished one', () => {
    expect(jobView({ ...queued, status: 'running' }, dead).orphaned).toBe(true);
    expect(jobView({ ...queued, status: 'succeeded' }, dead).orphaned).toBe(false);
  });

  it('carries the served model, the worktree diffstat (bounded) and the verification', () => {
    const files = Array.from({ length: DIFFSTAT_FILES + 5 }, (_, index) => ({
      path: `f${index}.ts`,
      insertions: 1,
      deletions: 0,
      untracked: false,
    }));
    const finished: JobRecord = {
      ...queued,
      status: 'failed_verification',
      served_model: 'qwen3-coder',
      worktree: {
        repo_root: '/work/repo',
        path: '/state/worktrees/x',
        branch: 'local-agent/20261201-100000-abcd',
        base_ref: 'HEAD',
        base_commit: 'abc',
        state: 'kept',
        diffstat: { files_changed: files.length, insertions: files.length, deletions: 0, files },
      },
      verification: {
        command: 'npm test',
        exit_code: 1,
        passed: false,
        duration_s: 3.5,
        output_tail: '1 failed',
        rounds: 1,
      },
    };
    const view = jobView(finished, dead);
    expect(view.finished).toBe(true);
    expect(view.model).toBe('qwen3-coder');
    expect(view.worktree).toEqual({ branch: 'local-agent/20261201-100000-abcd', state: 'kept' });
    expect(view.diffstat?.files_changed).toBe(DIFFSTAT_FILES + 5);
    expect(view.diffstat?.files).toHaveLength(DIFFSTAT_FILES);
    expect(view.verification).toMatchObject({ command: 'npm test', passed: false, exit_code: 1 });
    // Nothing of the record's private parts reaches the page.
    expect(JSON.stringify(view)).not.toContain('owner_pid');
    expect(JSON.stringify(view)).not.toContain('base_url');
  });
});
