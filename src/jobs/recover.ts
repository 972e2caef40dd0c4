import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PRIVATE_FILE_MODE } from '../private-fs.js';
import { isTerminalStatus, type JobRecord } from './job.js';
import { isClaudeProcess, isProcessAlive, terminateProcess } from './process.js';
import { JOB_FILES, type JobStore } from './store.js';
import { finishWorktree } from './worktree.js';

/** How long a cancel waits for another process's runner to record it. */
const CROSS_PROCESS_CANCEL_MS = 15_000;

export interface Recovery {
  /** Jobs whose owning server died, now marked interrupted. */
  interrupted: string[];
  /** Orphaned `claude` processes that were stopped (contract §0.10: they outlive a SIGKILLed parent). */
  reaped: number[];
}

/** A job is orphaned when its owner is another process that no longer exists. */
function isOrphaned(record: JobRecord): boolean {
  return record.owner_pid !== process.pid && !isProcessAlive(record.owner_pid);
}

/** Marks every unfinished job of a dead server interrupted, stops its claude, and settles its worktree. */
export async function recoverJobs(
  store: JobStore,
  isActive: (id: string) => boolean,
): Promise<Recovery> {
  const recovery: Recovery = { interrupted: [], reaped: [] };
  for (const record of (await store.list()).records) {
    if (isTerminalStatus(record.status) || isActive(record.id) || !isOrphaned(record)) continue;
    const pid = record.claude_pid;
    if (pid !== null && (await isClaudeProcess(pid))) {
      await terminateProcess(pid);
      recovery.reaped.push(pid);
    }
    let worktree = record.worktree;
    if (worktree?.state === 'active') {
      worktree = await finishWorktree(worktree, record.id).catch(() => worktree);
    }
    await store.save({
      ...record,
      status: 'interrupted',
      worktree,
      finished_at: new Date().toISOString(),
      error: {
        kind: 'interrupted',
        message: `the server (pid ${record.owner_pid}) that ran this job stopped before it finished`,
      },
    });
    recovery.interrupted.push(record.id);
  }
  return recovery;
}

/**
 * Cancels a job this process does not run: a dead owner's job is recovered; a live owner (a server, a
 * `localagents run`) gets a marker file its runner checks, its claude is stopped, and we wait for its record.
 */
export async function cancelElsewhere(
  store: JobStore,
  record: JobRecord,
  recover: () => Promise<Recovery>,
): Promise<JobRecord> {
  if (isTerminalStatus(record.status)) return record;
  if (isOrphaned(record)) {
    await recover();
    return store.read(record.id);
  }
  await writeFile(
    join(store.jobDir(record.id), JOB_FILES.cancelRequest),
    `${new Date().toISOString()}\n`,
    { mode: PRIVATE_FILE_MODE },
  );
  if (record.claude_pid !== null && (await isClaudeProcess(record.claude_pid))) {
    await terminateProcess(record.claude_pid);
  }
  const deadline = Date.now() + CROSS_PROCESS_CANCEL_MS;
  for (;;) {
    const current = await store.read(record.id);
    if (isTerminalStatus(current.status) || Date.now() > deadline) return current;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
