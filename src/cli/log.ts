import { watch } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isTerminalStatus } from '../jobs/job.js';
import { JOB_FILES } from '../jobs/store.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { jobArgument } from './jobs.js';
import { APP_OPTIONS, openApp } from './open-app.js';

const FOLLOW_INTERVAL_MS = 250;

/**
 * Resolves on the next change in `dir` (a transcript append, a job.json rename), after `ms` at the
 * latest, or at once when `signal` aborts: `log -f` shows a line as soon as it is written and stops on
 * Ctrl-C without waiting out a poll interval. The timer alone still ends the wait where the directory
 * cannot be watched.
 */
function nextChange(dir: string, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const watching = new AbortController();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      watching.abort();
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    if (signal.aborted) return done();
    try {
      watch(dir, { signal: watching.signal }, done).on('error', done);
    } catch {
      // Not watchable (gone, or no inotify left): the timer ends the wait.
    }
  });
}

/** Copies the transcript from `offset` to stdout; returns the new offset. Streams, never reads it whole. */
async function copyFrom(path: string, offset: number, context: CommandContext): Promise<number> {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return offset;
  try {
    const buffer = Buffer.alloc(64 * 1024);
    let position = offset;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) return position;
      context.stdout.write(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

/** `localagents log <job> [-f]`: the transcript; -f follows it until the job ends. */
export const runLog: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs(
    'log',
    context.args,
    {
      ...APP_OPTIONS,
      follow: { type: 'boolean', short: 'f' },
      lines: { type: 'string', short: 'n' },
    },
    true,
  );
  const id = jobArgument('log', positionals);
  const app = await openApp(context, values);
  try {
    const record = await app.runner.get(id);
    const path = join(app.store.jobDir(record.id), JOB_FILES.transcript);
    if (values.lines !== undefined) {
      const tail = await app.store.tail(
        id,
        JOB_FILES.transcript,
        integerFlag('log', 'lines', values.lines, 80),
      );
      context.stdout.write(tail.length > 0 ? `${tail}\n` : '');
      if (!values.follow) return 0;
    }
    let offset =
      values.lines === undefined
        ? 0
        : await stat(path).then(
            (info) => info.size,
            () => 0,
          );
    for (;;) {
      offset = await copyFrom(path, offset, context);
      if (!values.follow || context.signal.aborted) return 0;
      const current = await app.store.read(id);
      if (isTerminalStatus(current.status)) {
        await copyFrom(path, offset, context);
        return 0;
      }
      await nextChange(app.store.jobDir(id), FOLLOW_INTERVAL_MS, context.signal);
    }
  } finally {
    await app.close();
  }
};
