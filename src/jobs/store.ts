import { createWriteStream, type WriteStream } from 'node:fs';
import { open, readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { LocalAgentsError } from '../errors.js';
import { shellQuote } from '../shell-quote.js';
import {
  makePrivateRoot,
  mkdirPrivate,
  PRIVATE_FILE_MODE,
  writeFileAtomic,
} from '../private-fs.js';
import { isJobId, validateJobId } from './ids.js';
import { jobRecordSchema, type JobRecord } from './job.js';

/** tail() looks at no more than this much of the end of a file. */
const TAIL_WINDOW_BYTES = 512 * 1024;

export const JOB_FILES = {
  record: 'job.json',
  transcript: 'transcript.txt',
  events: 'events.jsonl',
  requests: 'requests.jsonl',
  requestsFull: 'requests_full.jsonl',
  /** The brief as it was given (the Python original's task.txt). */
  task: 'task.txt',
  /** Written by `localagents cancel` in another process; the owning server treats it as a cancel. */
  cancelRequest: 'cancel-requested',
} as const;

/** An ordered, non-blocking append-only file: one write stream per file, flushed on close(). */
export interface Appender {
  write(text: string): void;
  close(): Promise<void>;
  /** The write error that stopped this file (disk full, permissions), if one did. */
  failure(): unknown;
}

/** A job folder whose job.json cannot be read as a record: listed as such, never hiding the others. */
export interface DamagedRecord {
  id: string;
  file: string;
  problem: string;
  fix: string;
}

export interface JobListing {
  /** Oldest first. */
  records: JobRecord[];
  damaged: DamagedRecord[];
}

export interface JobStore {
  readonly jobsDir: string;
  jobDir(id: string): string;
  /** Writes job.json through a temp file and rename, so a reader never sees half a record. */
  save(record: JobRecord): Promise<void>;
  /** JOB_NOT_FOUND without a job.json; RECORD_DAMAGED when it is not a record. */
  read(id: string): Promise<JobRecord>;
  /** Every readable record, oldest first (ids sort to the second, created_at within it). */
  /** Every record, and every job folder whose record is damaged (a folder still being created is neither). */
  list(): Promise<JobListing>;
  open(id: string, file: string): Appender;
  /** Writes a whole text file of the job (temp file + rename). */
  write(id: string, file: string, text: string): Promise<void>;
  /** The last `lines` lines of a job's text file ('' when the file does not exist yet). */
  tail(id: string, file: string, lines: number): Promise<string>;
}

function openAppender(path: string): Appender {
  let stream: WriteStream | undefined;
  let failure: unknown;
  return {
    write(text) {
      if (failure !== undefined) return;
      stream ??= createWriteStream(path, { flags: 'a', mode: PRIVATE_FILE_MODE }).on(
        'error',
        (error) => {
          failure = error;
        },
      );
      stream.write(text);
    },
    close() {
      const current = stream;
      if (!current || current.closed) return Promise.resolve();
      return new Promise((resolve) => {
        current.once('error', () => resolve());
        current.end(() => resolve());
      });
    },
    failure: () => failure,
  };
}

/** A failed write of a job's file (job.json, task.txt), said with its path and errno (ENOSPC, EROFS, EACCES). */
function jobFileWriteFailed(path: string, error: unknown): LocalAgentsError {
  const code = (error as NodeJS.ErrnoException).code;
  const reason = error instanceof Error ? error.message : String(error);
  return new LocalAgentsError(
    'RECORD_WRITE_FAILED',
    `cannot write ${path}: ${code ?? 'error'} (${reason})`,
    {
      hint:
        code === 'ENOSPC'
          ? 'the disk that holds the state directory is full: free space there (or set LOCALAGENTS_STATE_DIR elsewhere), then run the job again'
          : 'check that the state directory is writable (or set LOCALAGENTS_STATE_DIR elsewhere), then run the job again',
      cause: error,
    },
  );
}

/** job.json's text as a record, or why it is not one (empty, not JSON, not a record of this version). */
function recordProblem(
  text: string,
): { kind: 'record'; record: JobRecord } | { kind: 'damaged'; why: string } {
  if (text.trim() === '') return { kind: 'damaged', why: 'it is empty' };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return {
      kind: 'damaged',
      why: `it is not JSON (${error instanceof Error ? error.message : String(error)})`,
    };
  }
  const parsed = jobRecordSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the record';
    return {
      kind: 'damaged',
      why: `it is not a job record (${where}: ${issue?.message ?? 'invalid'})`,
    };
  }
  return { kind: 'record', record: parsed.data };
}

function damagedRecord(id: string, path: string, why: string): DamagedRecord {
  const dir = dirname(path);
  return {
    id,
    file: path,
    problem: `${path} is damaged: ${why}`,
    fix: `the job's other files (transcript.txt, events.jsonl, requests.jsonl) are still there; move the folder away to stop seeing it: mv ${shellQuote(dir)} ${shellQuote(`${dir}.damaged`)}`,
  };
}

export function createJobStore(stateDir: string): JobStore {
  const jobsDir = join(stateDir, 'jobs');
  // One chain per job: saves land in call order, so an older snapshot never overwrites a newer one.
  const saving = new Map<string, Promise<void>>();

  const jobDir = (id: string): string => join(jobsDir, validateJobId(id));

  // Once per store, before its first write: the state directory private, even one an older version made.
  let rootReady: Promise<void> | undefined;
  const privateJobDir = async (id: string): Promise<string> => {
    rootReady ??= makePrivateRoot(stateDir);
    await rootReady;
    const dir = jobDir(id);
    await mkdirPrivate(dir);
    return dir;
  };

  const writeRecord = async (record: JobRecord): Promise<void> => {
    const path = join(jobDir(record.id), JOB_FILES.record);
    try {
      await privateJobDir(record.id);
      await writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`);
    } catch (error) {
      throw jobFileWriteFailed(path, error);
    }
  };

  const read = async (id: string): Promise<JobRecord> => {
    const path = join(jobDir(id), JOB_FILES.record);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new LocalAgentsError('JOB_NOT_FOUND', `no job "${id}" in ${jobsDir}`, {
        hint: 'list the jobs with list_jobs or `localagents jobs`',
        cause: error,
      });
    }
    const problem = recordProblem(text);
    if (problem.kind === 'damaged') {
      const damaged = damagedRecord(id, path, problem.why);
      throw new LocalAgentsError('RECORD_DAMAGED', `job ${id}: ${damaged.problem}`, {
        hint: damaged.fix,
      });
    }
    return problem.record;
  };

  return {
    jobsDir,
    jobDir,
    save(record) {
      const previous = saving.get(record.id) ?? Promise.resolve();
      const next = previous.then(() => writeRecord(record));
      const settled = next.catch(() => {});
      saving.set(record.id, settled);
      void settled.then(() => {
        if (saving.get(record.id) === settled) saving.delete(record.id);
      });
      return next;
    },
    read,
    async list() {
      let names: string[];
      try {
        names = await readdir(jobsDir);
      } catch {
        return { records: [], damaged: [] };
      }
      const records: JobRecord[] = [];
      const damaged: DamagedRecord[] = [];
      for (const name of names.filter(isJobId).sort()) {
        const path = join(jobsDir, name, JOB_FILES.record);
        // A folder without job.json is a job being created (or not a job): nothing to list.
        const text = await readFile(path, 'utf8').catch(() => undefined);
        if (text === undefined) continue;
        const problem = recordProblem(text);
        if (problem.kind === 'record') records.push(problem.record);
        else damaged.push(damagedRecord(name, path, problem.why));
      }
      // Ids sort by their second (YYYYMMDD-HHMMSS); within one second, by when the jobs were created.
      const second = (record: JobRecord): string => record.id.slice(0, 15);
      records.sort(
        (a, b) =>
          second(a).localeCompare(second(b)) ||
          a.created_at.localeCompare(b.created_at) ||
          a.id.localeCompare(b.id),
      );
      return { records, damaged };
    },
    open(id, file) {
      return openAppender(join(jobDir(id), file));
    },
    async write(id, file, text) {
      const path = join(jobDir(id), file);
      try {
        await privateJobDir(id);
        await writeFileAtomic(path, text);
      } catch (error) {
        throw jobFileWriteFailed(path, error);
      }
    },
    async tail(id, file, lines) {
      // Reads at most the last TAIL_WINDOW_BYTES: a long transcript is never loaded whole.
      const handle = await open(join(jobDir(id), file), 'r').catch(() => undefined);
      if (!handle) return '';
      let text: string;
      try {
        const { size } = await handle.stat();
        const start = Math.max(0, size - TAIL_WINDOW_BYTES);
        const buffer = Buffer.alloc(size - start);
        await handle.read(buffer, 0, buffer.length, start);
        text = buffer.toString('utf8');
        if (start > 0) text = text.slice(text.indexOf('\n') + 1);
      } finally {
        await handle.close();
      }
      const all = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
      return all.slice(Math.max(0, all.length - lines)).join('\n');
    },
  };
}
