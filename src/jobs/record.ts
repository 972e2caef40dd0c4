import type { JobRecord, PermissionMode, WorktreeInfo } from './job.js';

export interface NewJobInput {
  id: string;
  task: string;
  cwd: string;
  isolation: 'none' | 'worktree';
  permissionMode: PermissionMode;
  maxTurns: number;
  timeoutS: number;
  requestedModel?: string | undefined;
  resumedFrom?: string | undefined;
  now?: Date;
}

export function newJobRecord(input: NewJobInput): JobRecord {
  return {
    version: 1,
    id: input.id,
    task: input.task,
    status: 'queued',
    created_at: (input.now ?? new Date()).toISOString(),
    started_at: null,
    finished_at: null,
    duration_ms: null,
    requested_model: input.requestedModel ?? null,
    served_model: null,
    endpoint: null,
    base_url: null,
    context_tokens: null,
    context_source: null,
    cwd: input.cwd,
    run_cwd: input.cwd,
    isolation: input.isolation,
    worktree: null,
    permission_mode: input.permissionMode,
    max_turns: input.maxTurns,
    timeout_s: input.timeoutS,
    resumed_from: input.resumedFrom ?? null,
    session_id: null,
    turns: 0,
    tool_calls: 0,
    files_touched: [],
    last_activity: null,
    result_text: null,
    terminal_reason: null,
    error: null,
    usage: null,
    backend: null,
    changed_on_disk: null,
    last_tool: null,
    possible_no_op: false,
    warnings: [],
    owner_pid: process.pid,
    claude_pid: null,
  };
}

/** Result text that says something: not empty, not just "Done." (contract: silent no-ops look like success). */
export function isMeaningfulResult(text: string | null): boolean {
  if (text === null) return false;
  const words = text
    .trim()
    .split(/\s+/)
    .filter((word) => word.length > 0);
  return words.length >= 4;
}

/** What run_agent, wait_job and job_status answer: the record without the bulky parts, plus what to do next. */
export interface JobSummary {
  id: string;
  status: JobRecord['status'];
  task: string;
  model: string | null;
  endpoint: string | null;
  elapsed_s: number | null;
  turns: number;
  tool_calls: number;
  files_touched: string[];
  last_activity: string | null;
  result_text: string | null;
  error: JobRecord['error'];
  possible_no_op: boolean;
  warnings: string[];
  worktree: {
    path: string;
    branch: string;
    state: string;
    diffstat: string | null;
    review: NonNullable<WorktreeInfo['review']> | null;
  } | null;
  run_cwd: string;
  next: string;
}

/** "1 file changed", "2 files changed". */
export function filesChanged(count: number): string {
  return `${count} ${count === 1 ? 'file' : 'files'} changed`;
}

function diffstatLine(record: JobRecord): string | null {
  const stat = record.worktree?.diffstat;
  if (!stat) return null;
  return `${filesChanged(stat.files_changed)}, +${stat.insertions} -${stat.deletions}: ${stat.files.map((file) => file.path).join(', ')}`;
}

function nextStep(record: JobRecord): string {
  switch (record.status) {
    case 'queued':
    case 'running':
      return `call wait_job with job_id ${record.id} (it returns within 110 s; call it again while the job runs)`;
    case 'succeeded':
      if (record.possible_no_op) {
        return 'the job ended without edits and without a real report: it may have done nothing; read job_log before trusting it';
      }
      if (record.worktree?.state === 'kept') {
        return 'review the worktree diff (job_diff), run the tests yourself, then merge or drop it with the commands in worktree.review';
      }
      return 'review files_touched and verify the work yourself: local models make mistakes';
    case 'failed':
    case 'timeout':
      return 'read job_log for what happened; retry with a clearer task, more time or another model';
    case 'cancelled':
    case 'interrupted':
      return 'the job did not finish; look at job_log and run it again if needed';
  }
}

export function summarizeJob(record: JobRecord, now: Date = new Date()): JobSummary {
  const start = record.started_at ? Date.parse(record.started_at) : null;
  const end = record.finished_at ? Date.parse(record.finished_at) : now.getTime();
  return {
    id: record.id,
    status: record.status,
    task: record.task.length > 300 ? `${record.task.slice(0, 300)}…` : record.task,
    model: record.served_model ?? record.requested_model,
    endpoint: record.endpoint,
    elapsed_s: start === null ? null : Math.round((end - start) / 100) / 10,
    turns: record.turns,
    tool_calls: record.tool_calls,
    files_touched: record.files_touched,
    last_activity: record.last_activity?.text ?? null,
    result_text: record.result_text,
    error: record.error,
    possible_no_op: record.possible_no_op,
    warnings: record.warnings,
    worktree: record.worktree
      ? {
          path: record.worktree.path,
          branch: record.worktree.branch,
          state: record.worktree.state,
          diffstat: diffstatLine(record),
          review: record.worktree.review ?? null,
        }
      : null,
    run_cwd: record.run_cwd,
    next: nextStep(record),
  };
}
