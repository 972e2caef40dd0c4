import type { Diagnostics } from '../diagnostics.js';
import type { ReadyResolution, ResolveRequest } from '../registry/resolve.js';
import type { ActiveJob } from './active-job.js';
import { watchCancelRequest } from './cancel-request.js';
import type { JobError, JobRecord, JobStatus } from './job.js';
import type { Lease } from './leases.js';
import type { Scheduler } from './scheduler.js';
import type { JobStore } from './store.js';
import { finishWorktree } from './worktree.js';

export interface QueueDeps {
  store: JobStore;
  scheduler: Scheduler;
  diagnostics: Diagnostics;
}

/**
 * A job's time in the queue (scheduler.ts): the record says its place and why it waits, and a cancel (here or
 * from another process's `localagents cancel`) ends it at once. Resolves with where it runs and the slot it
 * holds, or undefined when it ended in the queue (cancelled, shut down, or its model gone past the grace period);
 * its record is final and saved then, and its worktree, which nothing touched, removed.
 */
export async function waitForSlot(
  deps: QueueDeps,
  job: ActiveJob,
  request: ResolveRequest,
): Promise<{ resolution: ReadyResolution; lease: Lease } | undefined> {
  const id = job.record.id;
  const update = (patch: Partial<JobRecord>): void => {
    job.record = { ...job.record, ...patch };
    for (const listener of job.listeners) listener(job.record);
  };
  const save = (): Promise<void> =>
    deps.store.save(job.record).catch((error: unknown) => {
      deps.diagnostics.warn(`job ${id}: ${String(error)}`);
    });
  const cancelRequest = watchCancelRequest(deps.store.jobDir(id), () => {
    job.termination ??= 'cancelled';
    job.controller.abort();
  });
  const since = new Date().toISOString();
  let admission;
  try {
    admission = await deps.scheduler.admit({
      id,
      request,
      signal: job.controller.signal,
      onWait: (position, reason) => {
        update({ queue: { position, reason, since } });
        void save();
      },
    });
  } finally {
    cancelRequest.close();
  }
  if (admission.kind === 'admitted') {
    update({ queue: null });
    return { resolution: admission.resolution, lease: admission.lease };
  }
  const ended: { status: JobStatus; error: JobError } =
    admission.kind === 'not_ready'
      ? {
          status: 'failed',
          error: {
            kind: 'backend_down',
            message: `no endpoint served the model while the job waited: ${admission.resolution.message}`,
          },
        }
      : job.termination === 'shutdown'
        ? {
            status: 'interrupted',
            error: {
              kind: 'interrupted',
              message: 'the server shut down while the job waited for a slot',
            },
          }
        : {
            status: 'cancelled',
            error: {
              kind: 'cancelled',
              message: 'the job was cancelled while it waited for a slot',
            },
          };
  const worktree = job.record.worktree;
  update({
    ...ended,
    queue: null,
    finished_at: new Date().toISOString(),
    ...(worktree ? { worktree: await finishWorktree(worktree, id).catch(() => worktree) } : {}),
  });
  await save();
  return undefined;
}
