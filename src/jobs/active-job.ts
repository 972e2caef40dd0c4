import type { JobRecord } from './job.js';

export type TerminationReason =
  'timeout' | 'cancelled' | 'shutdown' | 'record_write_failed' | 'backend_failed';

/** One job while it runs in this process. */
export interface ActiveJob {
  record: JobRecord;
  readonly controller: AbortController;
  termination: TerminationReason | undefined;
  /** Set when another job used the same endpoint while this one ran (speeds become server-wide). */
  overlapped: boolean;
  readonly listeners: Set<(record: JobRecord) => void>;
  done: Promise<void>;
}
