import { describeError } from '../errors.js';
import type { JobError, JobRecord, JobStatus } from './job.js';
import type { TerminationReason } from './active-job.js';
import { isMeaningfulResult } from './record.js';
import type { SdkResult } from './sdk-message.js';
import type { TranscriptStats } from './transcript.js';

/**
 * Success needs the SDK result's is_error false and, when it says one, terminal_reason `completed`: its
 * subtype says success even for API errors (contract §0.9), and an aborted or hook-stopped turn is no success.
 */
function classifyResult(
  result: SdkResult | undefined,
  thrown: unknown,
): { status: JobStatus; error: JobError | null } {
  const completed = result?.terminal_reason === undefined || result.terminal_reason === 'completed';
  if (result && !result.is_error && result.subtype === 'success' && completed)
    return { status: 'succeeded', error: null };
  if (result) {
    const said = result.result ?? result.errors?.join('; ');
    const message = result.is_error
      ? (said ?? result.subtype)
      : `the session stopped with terminal_reason "${result.terminal_reason ?? result.subtype}"${said ? `: ${said}` : ''}`;
    const kind =
      result.subtype === 'error_max_turns' || result.terminal_reason === 'max_turns'
        ? 'max_turns'
        : result.terminal_reason === 'api_error'
          ? 'api_error'
          : 'session_failed';
    return { status: 'failed', error: { kind, message } };
  }
  const message =
    thrown === undefined ? 'the session ended without a result' : describeError(thrown);
  return { status: 'failed', error: { kind: 'session_failed', message } };
}

const TERMINATION: Record<TerminationReason, { status: JobStatus; error: JobError }> = {
  timeout: {
    status: 'timeout',
    error: { kind: 'timeout', message: 'the job ran past its timeout_s and was stopped' },
  },
  cancelled: {
    status: 'cancelled',
    error: { kind: 'cancelled', message: 'the job was cancelled' },
  },
  shutdown: {
    status: 'interrupted',
    error: { kind: 'interrupted', message: 'the server shut down while the job ran' },
  },
  // run-job.ts replaces the message with the path and the errno of the write that failed.
  record_write_failed: {
    status: 'failed',
    error: { kind: 'record_write_failed', message: 'job.json could not be written' },
  },
  // run-job.ts replaces the error with the backend watch's (backend_config or backend_down).
  backend_failed: {
    status: 'failed',
    error: { kind: 'backend_down', message: 'the backend failed' },
  },
};

/** How a job ended: a stop we asked for (first reason wins) outranks whatever the session reported. */
export function decideOutcome(
  termination: TerminationReason | undefined,
  result: SdkResult | undefined,
  thrown: unknown,
): { status: JobStatus; error: JobError | null } {
  return termination ? TERMINATION[termination] : classifyResult(result, thrown);
}

/** The record fields a finished session settles: outcome, times, counts, result text and usage. */
export function finishedFields(
  stats: TranscriptStats,
  outcome: { status: JobStatus; error: JobError | null },
  startedAt: Date,
  finishedAt: Date,
  previous: JobRecord,
): Partial<JobRecord> {
  const usage = stats.result?.usage;
  return {
    status: outcome.status,
    error: outcome.error,
    finished_at: finishedAt.toISOString(),
    duration_ms: finishedAt.getTime() - startedAt.getTime(),
    session_id: stats.sessionId ?? previous.session_id,
    turns: stats.result?.num_turns ?? stats.turns,
    tool_calls: stats.toolCalls,
    files_touched: stats.filesTouched,
    result_text: stats.result?.result ?? stats.lastText ?? null,
    terminal_reason: stats.result?.terminal_reason ?? null,
    usage: usage
      ? {
          input_tokens: usage.input_tokens ?? 0,
          output_tokens: usage.output_tokens ?? 0,
          cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
          cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
        }
      : null,
  };
}

function edited(record: JobRecord): boolean {
  return (
    record.files_touched.length > 0 ||
    record.worktree?.state === 'kept' ||
    record.changed_on_disk === true
  );
}

/** Succeeded, yet no edits (no touched file, no kept worktree, no change git saw) and no real report. */
export function isPossibleNoOp(record: JobRecord): boolean {
  return (
    record.status === 'succeeded' && !edited(record) && !isMeaningfulResult(record.result_text)
  );
}

/** Words a report uses to say it did the work, not that it looked at it. */
const DONE_CLAIM =
  /\b(?:I (?:have )?(?:wrote|written|created|added|fixed|updated|implemented|changed|edited|refactored|renamed|removed|deleted|ran)|(?:tests?|build) (?:now )?pass(?:es|ed)?|all tests pass|done:?)\b/i;

/**
 * The report claims work the job has no trace of: it says it wrote, fixed or tested something, yet nothing
 * changed on disk (no touched file, no kept worktree, no change git saw) and it ran no command.
 */
export function claimWithoutTrace(record: JobRecord, commandsRun: number): string | undefined {
  if (record.status !== 'succeeded' || edited(record) || commandsRun > 0) return undefined;
  const claim = DONE_CLAIM.exec(record.result_text ?? '');
  return claim
    ? `the report says "${claim[0]}", yet nothing changed on disk and no command ran: check before trusting it`
    : undefined;
}
