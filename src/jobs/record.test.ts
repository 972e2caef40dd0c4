import { describe, expect, it } from 'vitest';
import { isMeaningfulResult, newJobRecord, summarizeJob } from './record.js';

const base = newJobRecord({
  id: '20261129-000000-aaaa',
  task: 'do it',
  cwd: '/w',
  isolation: 'none',
  permissionMode: 'acceptEdits',
  maxTurns: 5,
  timeoutS: 60,
  now: new Date('2026-11-29T00:00:00Z'),
});

describe('isMeaningfulResult', () => {
  it.each([
    [null, false],
    ['', false],
    ['Done.', false],
    ['All tests pass now.', true],
    ['Changed src/a.ts: fixed the off-by-one; npm test passes.', true],
  ])('judges %j meaningful: %s', (text, expected) => {
    expect(isMeaningfulResult(text)).toBe(expected);
  });
});

describe('summarizeJob', () => {
  it('tells Claude to wait while a job runs', () => {
    const summary = summarizeJob(
      { ...base, status: 'running', started_at: '2026-11-29T00:00:00Z' },
      new Date('2026-11-29T00:00:12Z'),
    );
    expect(summary.elapsed_s).toBe(12);
    expect(summary.next).toMatch(/^call wait_job again/);
    expect(summary.possible_no_op).toBeUndefined();
  });

  it('says nothing that is null or empty for the status at hand', () => {
    const queued = summarizeJob({ ...base, task: `  ${'word '.repeat(40)}` });
    expect(Object.keys(queued)).toEqual(['id', 'status', 'task', 'next']);
    expect(queued.task).toHaveLength(80);
    expect(queued.task.endsWith('…')).toBe(true);
    const failed = summarizeJob({
      ...base,
      status: 'failed',
      started_at: '2026-11-29T00:00:00Z',
      finished_at: '2026-11-29T00:00:03Z',
      served_model: 'qwen',
      endpoint: 'desk',
      error: { kind: 'api_error', message: 'connection refused' },
      last_activity: { at: '', text: 'tool Bash(npm test)' },
    });
    expect(failed).toEqual({
      id: base.id,
      status: 'failed',
      task: base.task,
      model: 'qwen',
      endpoint: 'desk',
      elapsed_s: 3,
      turns: 0,
      tool_calls: 0,
      files_touched: [],
      error: { kind: 'api_error', message: 'connection refused' },
      next: expect.stringMatching(/job_log/) as unknown,
    });
    expect(JSON.stringify(failed)).not.toContain('null');
  });

  it('warns about a possible no-op and points a kept worktree at job_diff', () => {
    expect(summarizeJob({ ...base, status: 'succeeded', possible_no_op: true }).next).toMatch(
      /may have done nothing/,
    );
    const kept = summarizeJob({
      ...base,
      status: 'succeeded',
      worktree: {
        repo_root: '/r',
        path: '/s/w',
        branch: 'local-agent/x',
        base_ref: 'HEAD',
        base_commit: 'abc',
        state: 'kept',
        diffstat: {
          files_changed: 1,
          insertions: 2,
          deletions: 0,
          files: [{ path: 'a.txt', insertions: 2, deletions: 0, untracked: true }],
        },
      },
    });
    expect(kept.worktree).toEqual({
      state: 'kept',
      path: '/s/w',
      branch: 'local-agent/x',
      diffstat: '1 file changed, +2 -0: a.txt',
    });
    expect(kept.possible_no_op).toBeUndefined();
    expect(kept.next).toMatch(/job_diff/);
  });
});
