import { isTerminalStatus, type JobRecord } from '../jobs/job.js';

/**
 * What the dashboard shows of one job: the record's fields a page needs, named for the page, and nothing
 * else (no environment, no pids, no base URL with its userinfo). Pure, so it is unit-tested without a server.
 */
export interface JobView {
  id: string;
  status: JobRecord['status'];
  /** The status is final (the page stops its elapsed clock): decided here, so the page keeps no status list. */
  finished: boolean;
  /** The brief's first line, at most TASK_CHARS characters (the whole brief is in task.txt). */
  task: string;
  agent: string | null;
  /** The served id when the job started, else what was asked for. */
  model: string | null;
  endpoint: string | null;
  cwd: string;
  isolation: JobRecord['isolation'];
  turns: number;
  max_turns: number;
  tool_calls: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
  queue: { position: number; reason: string } | null;
  last_activity: { at: string; text: string } | null;
  last_tool: string | null;
  error: { kind: string; message: string } | null;
  worktree: { branch: string; state: string } | null;
  diffstat: {
    files_changed: number;
    insertions: number;
    deletions: number;
    files: { path: string; insertions: number | null; deletions: number | null }[];
  } | null;
  verification: {
    command: string;
    passed: boolean;
    exit_code: number | null;
    duration_s: number;
    output_tail: string;
  } | null;
  figures: {
    requests: number;
    failed_requests: number;
    prompt_tokens: number;
    cached_tokens: number;
    cache_hit_rate: number | null;
    generated_tokens: number;
    prefix_breaks: number;
    prompt_tokens_per_s: number | null;
    generation_tokens_per_s: number | null;
  } | null;
  /** A queued or running job whose owning process is gone: nothing will update it until a server recovers it. */
  orphaned: boolean;
}

export const TASK_CHARS = 160;
/** A diffstat of a huge change lists its first files only; the totals stay whole. */
export const DIFFSTAT_FILES = 50;

function firstLine(text: string): string {
  const line = text.trimStart().split('\n', 1)[0] ?? '';
  return line.length > TASK_CHARS ? `${line.slice(0, TASK_CHARS - 1)}…` : line;
}

/** `ownerAlive` is asked only for a job that is not finished: a finished record's owner does not matter. */
export function jobView(record: JobRecord, ownerAlive: (pid: number) => boolean): JobView {
  const live = !isTerminalStatus(record.status);
  const worktree = record.worktree;
  const diffstat = worktree?.diffstat;
  const backend = record.backend;
  return {
    id: record.id,
    status: record.status,
    finished: isTerminalStatus(record.status),
    task: firstLine(record.task),
    agent: record.agent,
    model: record.served_model ?? record.requested_model,
    endpoint: record.endpoint,
    cwd: record.cwd,
    isolation: record.isolation,
    turns: record.turns,
    max_turns: record.max_turns,
    tool_calls: record.tool_calls,
    created_at: record.created_at,
    started_at: record.started_at,
    finished_at: record.finished_at,
    duration_ms: record.duration_ms,
    queue: record.queue ? { position: record.queue.position, reason: record.queue.reason } : null,
    last_activity: record.last_activity,
    last_tool: record.last_tool,
    error: record.error ? { kind: record.error.kind, message: record.error.message } : null,
    worktree: worktree ? { branch: worktree.branch, state: worktree.state } : null,
    diffstat: diffstat
      ? {
          files_changed: diffstat.files_changed,
          insertions: diffstat.insertions,
          deletions: diffstat.deletions,
          files: diffstat.files.slice(0, DIFFSTAT_FILES).map((file) => ({
            path: file.path,
            insertions: file.insertions,
            deletions: file.deletions,
          })),
        }
      : null,
    verification: record.verification
      ? {
          command: record.verification.command,
          passed: record.verification.passed,
          exit_code: record.verification.exit_code,
          duration_s: record.verification.duration_s,
          output_tail: record.verification.output_tail,
        }
      : null,
    figures: backend
      ? {
          requests: backend.requests,
          failed_requests: backend.failed_requests,
          prompt_tokens: backend.prompt_tokens,
          cached_tokens: backend.cached_tokens,
          cache_hit_rate: backend.cache_hit_rate,
          generated_tokens: backend.generated_tokens,
          prefix_breaks: backend.prefix_breaks,
          prompt_tokens_per_s: backend.prompt_tokens_per_s,
          generation_tokens_per_s: backend.generation_tokens_per_s,
        }
      : null,
    orphaned: live && !ownerAlive(record.owner_pid),
  };
}
