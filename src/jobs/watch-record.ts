import { watch, type FSWatcher } from 'node:fs';
import { coalesce } from '../coalesce.js';
import { isTerminalStatus, type JobRecord } from './job.js';
import { isProcessAlive } from './process.js';
import type { JobStore } from './store.js';

/**
 * Waits for a job that another process runs (a second server, `localagents run --detach`) by watching
 * its directory: job.json is replaced atomically on every change, so each rename wakes us to re-read it.
 * Returns at the first terminal record, when the owner is gone (nothing will write again), or after
 * `timeoutMs` with the record as it is then.
 */
export async function waitForRecordElsewhere(
  store: JobStore,
  id: string,
  timeoutMs: number,
  onProgress?: (record: JobRecord) => void,
): Promise<JobRecord> {
  const settled = (record: JobRecord): boolean =>
    isTerminalStatus(record.status) || !isProcessAlive(record.owner_pid);
  let record = await store.read(id);
  if (settled(record) || timeoutMs <= 0) return record;
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      // One read at a time; a change that lands during a read is read again right after it, so the
      // last write (the terminal record) is never lost between two events.
      const reads = coalesce(async () => {
        // A read racing the rename sees no file for an instant; the next event reads again.
        const current = await store.read(id).catch(() => undefined);
        if (!current) return;
        if (current.last_activity?.at !== record.last_activity?.at) onProgress?.(current);
        record = current;
        if (settled(current)) resolve();
      });
      const reread = (): void => reads.trigger();
      try {
        watcher = watch(store.jobDir(id), reread);
        watcher.on('error', () => resolve());
      } catch {
        resolve();
      }
      // A change between the first read and the watch.
      reread();
    });
  } finally {
    clearTimeout(timer);
    watcher?.close();
  }
  return record;
}
