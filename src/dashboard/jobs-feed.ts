import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { isJobId } from '../jobs/ids.js';
import { isTerminalStatus } from '../jobs/job.js';
import { isProcessAlive } from '../jobs/process.js';
import { JOB_FILES, type JobStore } from '../jobs/store.js';
import { mkdirPrivate } from '../private-fs.js';
import { coalesce } from '../coalesce.js';
import { followLines, type LineFollower } from './line-follower.js';
import { jobView, type JobView } from './job-view.js';
import { requestPoint, type RequestPoint } from './request-point.js';

/** The page lists this many jobs, newest first; older ones stay on disk and in `localagents jobs`. */
export const LISTED_JOBS = 200;
/** How often an unfinished job's record is read again to see whether its owner is still alive. */
const OWNER_CHECK_MS = 5000;

/** What one job's stream on the page receives: its record, its requests and its transcript as they grow. */
export interface JobFollowListener {
  onJob(view: JobView): void;
  onRequests(points: RequestPoint[]): void;
  onTranscript(lines: string[]): void;
}

export interface JobsFeed {
  /** Newest first, at most LISTED_JOBS. */
  list(): JobView[];
  /** Every change of any job's record (a new job included). */
  subscribe(listener: (view: JobView) => void): () => void;
  /** undefined: no such job. The returned function stops following. */
  follow(id: string, listener: JobFollowListener): Promise<(() => void) | undefined>;
  close(): void;
}

/** One job's folder while someone cares about it: the record while it runs, its files while followed. */
interface JobDirWatch {
  watcher: FSWatcher | undefined;
  fileListeners: Set<(file: string) => void>;
  rereadRecord: () => void;
}

/**
 * Jobs as their records and files say, whichever process runs them: everything is read from the state
 * directory, woken by fs.watch (inotify on Linux) rather than polled. The jobs folder is watched for new jobs;
 * each job's folder only while it is queued or running, or while the page follows it.
 */
export async function createJobsFeed(store: JobStore): Promise<JobsFeed> {
  const views = new Map<string, JobView>();
  const listeners = new Set<(view: JobView) => void>();
  const dirs = new Map<string, JobDirWatch>();
  let closed = false;

  const publish = (view: JobView): void => {
    const previous = views.get(view.id);
    if (previous && JSON.stringify(previous) === JSON.stringify(view)) return;
    views.set(view.id, view);
    for (const listener of listeners) listener(view);
  };

  const live = (id: string): boolean => {
    const view = views.get(id);
    return view === undefined || !isTerminalStatus(view.status);
  };

  /** Stops watching a folder nobody needs any more: its job is finished and no page follows it. */
  const release = (id: string): void => {
    const dir = dirs.get(id);
    if (!dir || dir.fileListeners.size > 0 || live(id)) return;
    dir.watcher?.close();
    dirs.delete(id);
  };

  const readRecord = async (id: string): Promise<void> => {
    // A folder still being created has no job.json yet; its creation wakes us again.
    const record = await store.read(id).catch(() => undefined);
    if (!record || closed) return;
    publish(jobView(record, isProcessAlive));
    release(id);
  };

  const watchDir = (id: string): JobDirWatch => {
    const existing = dirs.get(id);
    if (existing) return existing;
    const reads = coalesce(() => readRecord(id));
    const dir: JobDirWatch = {
      watcher: undefined,
      fileListeners: new Set(),
      rereadRecord: () => reads.trigger(),
    };
    dirs.set(id, dir);
    try {
      dir.watcher = watch(store.jobDir(id), (_event, file) => {
        // job.json is replaced by rename: the event names it (or, on some systems, nothing).
        if (file === null || file === JOB_FILES.record) dir.rereadRecord();
        for (const listener of dir.fileListeners) listener(file ?? '');
      });
      dir.watcher.on('error', () => {
        dir.watcher?.close();
        dir.watcher = undefined;
      });
    } catch {
      // The folder went away (moved aside as damaged): its record stays as last read.
    }
    // A change between the first read and the watch.
    dir.rereadRecord();
    return dir;
  };

  await mkdirPrivate(store.jobsDir);
  const listing = await store.list();
  for (const record of listing.records.slice(-LISTED_JOBS)) {
    views.set(record.id, jobView(record, isProcessAlive));
    if (!isTerminalStatus(record.status)) watchDir(record.id);
  }

  const jobsWatcher = watch(store.jobsDir, (_event, name) => {
    if (closed) return;
    if (name !== null && isJobId(name) && !views.has(name)) watchDir(name);
  });
  jobsWatcher.on('error', () => jobsWatcher.close());

  // A process killed mid-job never writes its record again, so no event says its jobs are orphaned.
  const ownerCheck = setInterval(() => {
    for (const view of views.values()) {
      if (!isTerminalStatus(view.status) && !view.orphaned) dirs.get(view.id)?.rereadRecord();
    }
  }, OWNER_CHECK_MS);
  ownerCheck.unref();

  return {
    list() {
      return [...views.values()]
        .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id))
        .slice(0, LISTED_JOBS);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async follow(id, listener) {
      if (!isJobId(id)) return undefined;
      const record = await store.read(id).catch(() => undefined);
      if (!record || closed) return undefined;
      listener.onJob(jobView(record, isProcessAlive));
      const jobDir = store.jobDir(id);
      const followers: Record<string, LineFollower> = {
        [JOB_FILES.requests]: followLines(join(jobDir, JOB_FILES.requests), (lines) => {
          const points = lines.flatMap((line) => requestPoint(line) ?? []);
          if (points.length > 0) listener.onRequests(points);
        }),
        [JOB_FILES.transcript]: followLines(
          join(jobDir, JOB_FILES.transcript),
          (lines) => listener.onTranscript(lines),
          { fromTail: true },
        ),
      };
      const onFile = (file: string): void => {
        if (file === '') Object.values(followers).forEach((follower) => follower.poke());
        else followers[file]?.poke();
      };
      const onJob = (view: JobView): void => {
        if (view.id !== id) return;
        listener.onJob(view);
        // The last lines are written before the final record: read them once more.
        if (isTerminalStatus(view.status)) onFile('');
      };
      const dir = watchDir(id);
      dir.fileListeners.add(onFile);
      listeners.add(onJob);
      onFile('');
      return () => {
        listeners.delete(onJob);
        dir.fileListeners.delete(onFile);
        Object.values(followers).forEach((follower) => follower.close());
        release(id);
      };
    },
    close() {
      closed = true;
      clearInterval(ownerCheck);
      jobsWatcher.close();
      for (const dir of dirs.values()) dir.watcher?.close();
      dirs.clear();
      listeners.clear();
    },
  };
}
