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
  /** Requests the job's shim route has open now (set once it runs): the scheduler's view of its own load. */
  inflight?: () => number;
  done: Promise<void>;
}
