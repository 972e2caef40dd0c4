import type { PermissionMode } from '../kinds.js';
import type { JobRecord } from './job.js';

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
    queue: null,
    verification: null,
    agent: null,
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

/**
 * What run_agent, wait_job and cancel_job answer: every answer costs the caller's context, so each field is
 * there only when it says something for the status at hand (no nulls, no paths twice). job_status adds the
 * rest of the record, including the worktree's review commands.
 */
export interface JobSummary {
  id: string;
  status: JobRecord['status'];
  /** The brief's start, to tell jobs apart; the caller wrote the whole of it. */
  task: string;
  model?: string;
  endpoint?: string;
  elapsed_s?: number;
  turns?: number;
  tool_calls?: number;
  /** Relative to the job's directory (the worktree for an isolated job). */
  files_touched?: string[];
  last_activity?: string;
  result_text?: string;
  error?: NonNullable<JobRecord['error']>;
  /** While queued: its place among the jobs waiting for its model, and why it waits. */
  queue?: { position: number; reason: string };
  /** The verify command's last round, when the job has one. */
  verification?: NonNullable<JobRecord['verification']>;
  /** Only when true: the job ended without edits and without a real report. */
  possible_no_op?: true;
  warnings?: string[];
  worktree?: { state: string; path?: string; branch?: string; diffstat?: string };
  next: string;
}

const SUMMARY_TASK_CHARS = 80;

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
      return 'it starts by itself when a slot frees up: call wait_job with this job_id (each call returns within 110 s), or cancel_job';
    case 'running':
      return 'call wait_job again with this job_id (each call returns within 110 s)';
    case 'succeeded':
      if (record.possible_no_op) {
        return 'it ended without edits and without a real report: it may have done nothing; read job_log before trusting it';
      }
      if (record.worktree?.state === 'kept') {
        return 'review: job_diff, run the tests in worktree.path; job_status gives the merge and drop commands';
      }
      return 'review files_touched and verify the work yourself: local models make mistakes';
    case 'failed':
    case 'timeout':
      return 'read job_log for what happened; retry with a clearer task, more time or another model';
    case 'cancelled':
    case 'interrupted':
      return 'the job did not finish; look at job_log and run it again if needed';
    case 'failed_verification':
      return 'its verify command failed (verification.output_tail): resume it with run_agent resume_job and the failure as the task, or review job_diff yourself';
  }
}

/** Text on one line, at most `width` characters (the last an ellipsis when cut): tasks in answers and tables. */
export function clipText(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= width ? flat : `${flat.slice(0, width - 1)}…`;
}

function summarizeWorktree(record: JobRecord): JobSummary['worktree'] {
  const worktree = record.worktree;
  if (!worktree) return undefined;
  if (worktree.state === 'removed') return { state: worktree.state };
  const diffstat = diffstatLine(record);
  return {
    state: worktree.state,
    path: worktree.path,
    branch: worktree.branch,
    ...(diffstat === null ? {} : { diffstat }),
  };
}

export function summarizeJob(record: JobRecord, now: Date = new Date()): JobSummary {
  const start = record.started_at ? Date.parse(record.started_at) : null;
  const end = record.finished_at ? Date.parse(record.finished_at) : now.getTime();
  const active = record.status === 'queued' || record.status === 'running';
  const model = record.served_model ?? record.requested_model;
  const summary: Omit<JobSummary, 'next'> = {
    id: record.id,
    status: record.status,
    task: clipText(record.task, SUMMARY_TASK_CHARS),
  };
  if (model !== null) summary.model = model;
  if (record.endpoint !== null) summary.endpoint = record.endpoint;
  if (start !== null) {
    summary.elapsed_s = Math.round((end - start) / 100) / 10;
    summary.turns = record.turns;
    summary.tool_calls = record.tool_calls;
  }
  if (record.files_touched.length > 0 || (!active && start !== null))
    summary.files_touched = record.files_touched;
  if (active && record.last_activity) summary.last_activity = record.last_activity.text;
  if (record.status === 'queued' && record.queue)
    summary.queue = { position: record.queue.position, reason: record.queue.reason };
  if (record.result_text !== null) summary.result_text = record.result_text;
  if (record.error !== null) summary.error = record.error;
  if (record.verification) summary.verification = record.verification;
  if (record.possible_no_op) summary.possible_no_op = true;
  if (record.warnings.length > 0) summary.warnings = record.warnings;
  const worktree = summarizeWorktree(record);
  if (worktree) summary.worktree = worktree;
  return { ...summary, next: nextStep(record) };
}
