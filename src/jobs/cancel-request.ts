import { existsSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { JOB_FILES } from './store.js';

/**
 * `localagents cancel` run from another process cannot reach this process's AbortController, so it
 * leaves a marker file in the job's directory. The owner watches for it while the job runs: a cancel
 * then stops a job even before its claude has a pid on record, and a job that finishes first is not
 * relabelled afterwards. `onCancel` runs at most once.
 */
export function watchCancelRequest(jobDir: string, onCancel: () => void): { close(): void } {
  const marker = JOB_FILES.cancelRequest;
  let fired = false;
  const fire = (): void => {
    if (fired) return;
    fired = true;
    onCancel();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(jobDir, (_event, name) => {
      if (name === marker && existsSync(join(jobDir, marker))) fire();
    });
    // A watch that fails later (the directory removed) must not crash the server.
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  // Written before the watch began.
  if (existsSync(join(jobDir, marker))) fire();
  return {
    close: () => {
      fired = true;
      watcher?.close();
    },
  };
}
