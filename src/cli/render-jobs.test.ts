import { describe, expect, it } from 'vitest';
import { newJobRecord } from '../jobs/record.js';
import type { JobRecord } from '../jobs/job.js';
import { renderJob, renderJobTable, renderProgress } from './render-jobs.js';
import { createPaint } from './terminal.js';
import { stripAnsi } from './text-width.js';

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

describe('renderJob of a kept worktree job', () => {
  const kept: JobRecord = {
    ...record,
    worktree: {
      repo_root: '/repo',
      path: '/state/worktrees/repo/20261129-100000-ab12',
      branch: 'local-agent/20261129-100000-ab12',
      base_ref: 'HEAD',
      base_commit: '0123456789abcdef0123',
      state: 'kept',
      diffstat: {
        files_changed: 1,
        insertions: 3,
        deletions: 0,
        files: [{ path: 'src/cli.ts', insertions: 3, deletions: 0, untracked: true }],
      },
    },
    backend: {
      requests: 4,
      failed_requests: 0,
      prompt_tokens: 40000,
      cached_tokens: 30000,
      cache_hit_rate: 0.75,
      generated_tokens: 900,
      rewrites: { fold_system: 4 },
      prefix_extends: 3,
      prefix_breaks: 0,
      prompt_tokens_per_s: null,
      generation_tokens_per_s: 41.5,
      speed_scope: 'server_wide',
    },
  };

  it('shows the diffstat in the singular, the backend figures and only the speeds it knows', () => {
    expect(renderJob(kept, now).split('\n').slice(8)).toMatchInlineSnapshot(`
      [
        "worktree: kept /state/worktrees/repo/20261129-100000-ab12 on local-agent/20261129-100000-ab12 (base 0123456789ab)",
        "diffstat: 1 file changed, +3 -0",
        "  src/cli.ts  +3 -0 (new)",
        "review: localagents diff 20261129-100000-ab12",
        "merge:  localagents merge 20261129-100000-ab12 [--strategy squash|cherry-pick]",
        "drop:   localagents discard 20261129-100000-ab12",
        "backend:",
        "  requests: 4 (0 failed)",
        "  prompt tokens: 40000, cached 30000 (cache hit rate 75%)",
        "  generated tokens: 900",
        "  prefix: 3 prompts extended the previous one, 0 changed it",
        "  rewrites: fold_system ×4",
        "  speed: generation 41.5 tok/s (server-wide: other jobs overlapped)",
      ]
    `);
  });

  it('leaves out the parts a caller prints on its own', () => {
    const text = renderJob(kept, now, { backend: false, diffstat: false });
    expect(text).toContain('worktree: kept');
    expect(text).not.toContain('diffstat:');
    expect(text).not.toContain('backend:');
  });

  it('points at the worktree instead of naming it again when run printed it on the same screen', () => {
    const again = renderJob(kept, now);
    expect(again.split('/state/worktrees/repo/20261129-100000-ab12').length - 1).toBe(1);
    const once = renderJob({ ...kept, run_cwd: kept.worktree?.path ?? '' }, now, {
      worktreeNamedAbove: true,
    });
    expect(once).not.toContain('/state/worktrees/');
    expect(once).toContain('(ran in the worktree above)');
    expect(once).toContain(
      'worktree: kept (the one above) on local-agent/20261129-100000-ab12 (base 0123456789ab)',
    );
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

  it('keeps the last tool in view while the model talks or thinks between calls', () => {
    const talking = {
      ...record,
      status: 'running' as const,
      finished_at: null,
      last_tool: 'Bash(npm test)',
      last_activity: { at: '', text: 'says: the tests pass' },
    };
    expect(renderProgress(talking, now)).toBe(
      '[29.0s] running · turn 7 · last tool Bash(npm test) · says: the tests pass',
    );
  });
});

describe('a queued job', () => {
  const queued: JobRecord = {
    ...record,
    status: 'queued',
    started_at: null,
    finished_at: null,
    queue: {
      position: 3,
      reason: 'waiting for a free slot on desk (2/2 busy)',
      since: '2026-11-29T10:00:02Z',
    },
  };
  it('says its place and why it waits, in the progress line, the table and the record', () => {
    expect(renderProgress(queued, now)).toBe(
      '[-] queued #3 · waiting for a free slot on desk (2/2 busy)',
    );
    expect(renderJobTable([queued], now)).toContain('queued #3');
    expect(renderJob(queued, now)).toContain(
      'queue: #3 since 2026-11-29T10:00:02Z: waiting for a free slot on desk (2/2 busy)',
    );
  });
});

describe('fitting the screen', () => {
  const worktreePath = '/home/ann/.local/state/localagents/worktrees/app/20261129-100000-ab12';
  const long: JobRecord = {
    ...record,
    cwd: '/home/ann/src/app',
    run_cwd: worktreePath,
    served_model: 'unsloth/Qwen3.8-27B-Instruct-GGUF:UD-Q4_K_XL',
    task: 'Refactor the configuration loader so that every layer is validated\nwith zod and its errors name the file, the line and the fix',
    worktree: {
      repo_root: '/home/ann/src/app',
      path: worktreePath,
      branch: 'local-agent/20261129-100000-ab12',
      base_ref: 'HEAD',
      base_commit: '0123456789abcdef0123',
      state: 'kept',
    },
  };
  const paths = { cwd: '/home/ann/src/app', home: '/home/ann' };

  it('cuts the task, then the model, so the jobs table fits 80 columns', () => {
    const table = renderJobTable([long, { ...record, status: 'failed_verification' }], now, {
      width: 80,
    });
    expect(table).toMatchInlineSnapshot(`
      "ID                    STATUS               MODEL         TIME   FILES  TASK
      20261129-100000-ab12  succeeded            unslot…_K_XL  24.0s  2      Refactor…
      20261129-100000-ab12  failed_verification  qwen3.8-27b   24.0s  2      Add a --…"
    `);
    for (const line of table.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
  });

  it('keeps the start of the task readable before it cuts the model further', () => {
    const [, row] = renderJobTable([long], now, { width: 80 }).split('\n');
    expect(row).toMatchInlineSnapshot(
      `"20261129-100000-ab12  succeeded  unslot…_K_XL  24.0s  2      Refactor the confi…"`,
    );
    expect(row?.length).toBe(80);
  });

  it('shows every cell whole with wide, the task on one line', () => {
    const table = renderJobTable([long], now, { width: 80, wide: true });
    expect(table).toContain('unsloth/Qwen3.8-27B-Instruct-GGUF:UD-Q4_K_XL');
    expect(table).toContain(
      'validated with zod and its errors name the file, the line and the fix',
    );
  });

  it('colours the status word without moving the columns', () => {
    const plain = renderJobTable([record], now);
    const painted = renderJobTable([record], now, { paint: createPaint(true) });
    expect(painted).toContain('\u001b[32msucceeded\u001b[39m');
    expect(stripAnsi(painted)).toBe(plain);
  });

  it('names the worktree once in the record, the cwd relative and under ~', () => {
    const text = renderJob(
      long,
      now,
      {},
      { paths: { cwd: '/home/ann/src/app/lib', home: '/home/ann' } },
    );
    expect(text).toContain('cwd: ~/src/app (ran in the worktree below)');
    expect(text).toContain(
      'worktree: kept ~/.local/state/localagents/worktrees/app/20261129-100000-ab12 on local-agent/',
    );
    expect(text.split(worktreePath.slice('/home/ann'.length)).length - 1).toBe(1);
  });

  it('fits the progress line to the width, keeping the head and the file name', () => {
    const writing: JobRecord = {
      ...long,
      status: 'running',
      finished_at: null,
      last_tool: 'Bash(npm test)',
      last_activity: {
        at: '',
        text: `tool Write(${worktreePath}/src/registry/config-loader-with-a-long-name.ts)`,
      },
    };
    expect(renderProgress(writing, now, { paths })).toBe(
      '[29.0s] running · turn 7 · tool Write(src/registry/config-loader-with-a-long-name.ts)',
    );
    const narrow = renderProgress(writing, now, { paths, width: 60 });
    expect(narrow).toBe('[29.0s] running · turn 7 · tool Write(src/r…-a-long-name.ts)');
    expect(narrow.length).toBeLessThanOrEqual(60);
    const tiny = renderProgress(writing, now, { paths, width: 20 });
    expect(tiny).toBe('[29.0s] running · t…');
  });

  it('drops the last tool before it cuts the activity', () => {
    const talking: JobRecord = {
      ...record,
      status: 'running',
      finished_at: null,
      last_tool: 'Bash(npm test)',
      last_activity: { at: '', text: 'says: the tests pass' },
    };
    expect(renderProgress(talking, now, { width: 60 })).toBe(
      '[29.0s] running · turn 7 · says: the tests pass',
    );
  });
});
