/** Every failure localagents reports on purpose. The code says what happened; the hint says what to do. */
export type ErrorCode =
  /** A command-line argument or tool argument is missing or malformed. */
  | 'BAD_ARGUMENT'
  /** models.yaml (or a layer above it) is missing, unreadable or invalid. */
  | 'CONFIG_INVALID'
  /** No endpoint serves the requested model right now. */
  | 'MODEL_NOT_RUNNING'
  /** An endpoint could not be reached or answered unexpectedly. */
  | 'ENDPOINT_UNREACHABLE'
  /** A git command failed (worktree isolation, diffstat). */
  | 'GIT_FAILED'
  /** No job record with that id exists in the state directory. */
  | 'JOB_NOT_FOUND'
  /** A job's job.json exists but is not a readable record (truncated, edited, another version's). */
  | 'RECORD_DAMAGED'
  /** A job's job.json could not be written (disk full, read-only, permissions). */
  | 'RECORD_WRITE_FAILED'
  /** The job exists but cannot do what was asked in its current state. */
  | 'JOB_STATE'
  /** An HTTP server could not be started (port in use, bad host). */
  | 'LISTEN_FAILED'
  /** A file localagents owns could not be read or written. */
  | 'IO_FAILED'
  /** `serve` was started by a delegate's Claude Code: delegates do not delegate. */
  | 'INSIDE_DELEGATE';

export interface LocalAgentsErrorOptions {
  hint?: string;
  cause?: unknown;
}

export class LocalAgentsError extends Error {
  override readonly name = 'LocalAgentsError';
  readonly code: ErrorCode;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: LocalAgentsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
  }
}

export function isLocalAgentsError(error: unknown): error is LocalAgentsError {
  return error instanceof LocalAgentsError;
}

/** One line for people: the message, then the fix when there is one. */
export function describeError(error: unknown): string {
  if (isLocalAgentsError(error)) {
    return error.hint ? `${error.message}\n  fix: ${error.hint}` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
