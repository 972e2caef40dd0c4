import { describe, expect, it } from 'vitest';
import { newJobRecord } from '../jobs/record.js';
import type { JobRecord } from '../jobs/job.js';
import { renderJob, renderJobTable, renderProgress } from './render-jobs.js';

const now = new Date('2026-11-29T10:00:30Z');
const record: JobRecord = {
  ...newJobRecord({
    id: '20261129-100000-ab12',
    task: 'Add a --verbose flag to the CLI and test it',
    cwd: '/repo',
    isolation: 'worktree',
    permissionMode: 'acceptEdits',
    maxTurns: 60,
    timeoutS: 1800,
    now: new Date('2026-11-29T10:00:00Z'),
  }),
  status: 'succeeded',
  started_at: '2026-11-29T10:00:01Z',
  finished_at: '2026-11-29T10:00:25Z',
  served_model: 'qwen3.8-27b',
  endpoint: 'gpu',
  context_tokens: 131072,
  context_source: 'probe',
  run_cwd: '/state/worktrees/repo/20261129-100000-ab12',
  turns: 7,
  tool_calls: 9,
  files_touched: ['src/cli.ts', 'test/cli.test.ts'],
  result_text: 'Added --verbose; npm test passes.',
  owner_pid: 1,
};

describe('renderJobTable', () => {
  it('prints one aligned row per job', () => {
    expect(renderJobTable([record], now)).toMatchInlineSnapshot(`
      "ID                    STATUS     MODEL        TIME   FILES  TASK
      20261129-100000-ab12  succeeded  qwen3.8-27b  24.0s  2      Add a --verbose flag to the CLI and test it"
    `);
  });

  it('says how to start a job when there is none', () => {
    expect(renderJobTable([])).toMatch(/^no jobs yet/);
  });
});

describe('renderJob', () => {
  it('shows status, model, time, files and result', () => {
    expect(renderJob(record, now)).toMatchInlineSnapshot(`
      "job 20261129-100000-ab12: succeeded
      task: Add a --verbose flag to the CLI and test it
      model: qwen3.8-27b on gpu (window 131072 tokens, probe)
      cwd: /state/worktrees/repo/20261129-100000-ab12 (for /repo)
      time: 24.0s, 7 turns, 9 tool calls
      files touched: src/cli.ts, test/cli.test.ts
      result:
        Added --verbose; npm test passes."
    `);
  });
});

describe('renderProgress', () => {
  it('prints elapsed time, turn and the last activity', () => {
    const running = {
      ...record,
      status: 'running' as const,
      finished_at: null,
      last_activity: { at: '', text: 'tool Bash(npm test)' },
    };
    expect(renderProgress(running, now)).toBe('[29.0s] running · turn 7 · tool Bash(npm test)');
  });
});
