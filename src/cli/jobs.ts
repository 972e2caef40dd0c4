import { watch } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LocalAgentsError } from '../errors.js';
import { validateJobId } from '../jobs/ids.js';
import { isTerminalStatus } from '../jobs/job.js';
import { MERGE_STRATEGIES, type MergeStrategy } from '../jobs/merge.js';
import { JOB_FILES } from '../jobs/store.js';
import { computeDiff } from '../jobs/worktree.js';
import { fitColumns } from './columns.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { APP_OPTIONS, openApp } from './open-app.js';
import { renderJob, renderJobTable } from './render-jobs.js';
import { paintFor, terminalColumns } from './terminal.js';

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

function jobArgument(command: string, positionals: string[]): string {
  const [id] = positionals;
  if (id === undefined) {
    throw new LocalAgentsError('BAD_ARGUMENT', `localagents ${command}: the job id is missing`, {
      hint: 'list the jobs with `localagents jobs`',
    });
  }
  return validateJobId(id, 'job id');
}

/** `localagents jobs`: the job records, newest first. */
export const runJobs: CommandRun = async (context) => {
  const { values } = parseCommandArgs('jobs', context.args, {
    ...APP_OPTIONS,
    json: { type: 'boolean' },
    all: { type: 'boolean' },
    wide: { type: 'boolean' },
  });
  const app = await openApp(context, values);
  try {
    await app.recovered;
    const listing = await app.runner.list(true);
    const records = listing.records.reverse();
    const shown = values.all ? records : records.slice(0, 30);
    if (values.json) context.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
    else
      context.stdout.write(
        `${renderJobTable(shown, new Date(), {
          width: terminalColumns(context.stdout, context.env),
          wide: values.wide,
          paint: paintFor(context.stdout, context.env),
        })}\n`,
      );
    // On stderr, so the table (or the JSON) stays what it was; every damaged record is named with its fix.
    const warn = paintFor(context.stderr, context.env).warning;
    for (const damaged of listing.damaged)
      context.stderr.write(
        `${warn('damaged:')} job ${damaged.id}: ${damaged.problem}\n  fix: ${damaged.fix}\n`,
      );
    return 0;
  } finally {
    await app.close();
  }
};

/** `localagents show <job>`: one record, for people or (--json) as job.json. */
export const runShow: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs(
    'show',
    context.args,
    { ...APP_OPTIONS, json: { type: 'boolean' } },
    true,
  );
  const id = jobArgument('show', positionals);
  const app = await openApp(context, values);
  try {
    const record = await app.runner.get(id);
    context.stdout.write(
      values.json
        ? `${JSON.stringify(record, null, 2)}\n`
        : `${renderJob(
            record,
            new Date(),
            {},
            {
              paths: { cwd: context.cwd, home: context.env.HOME },
              paint: paintFor(context.stdout, context.env),
            },
          )}\n`,
    );
    return 0;
  } finally {
    await app.close();
  }
};

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

/** `localagents diff <job>`: the worktree diff against its base, new files included. */
export const runDiff: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs('diff', context.args, APP_OPTIONS, true);
  const id = jobArgument('diff', positionals);
  const app = await openApp(context, values);
  try {
    const record = await app.runner.get(id);
    const worktree = record.worktree;
    if (!worktree || worktree.state === 'removed') {
      context.stderr.write(
        worktree
          ? `job ${id} changed nothing; its worktree was removed\n`
          : `job ${id} ran without a worktree; files it edited: ${record.files_touched.join(', ') || 'none'}\n`,
      );
      return 0;
    }
    context.stdout.write(await computeDiff(worktree.path, worktree.base_commit));
    return 0;
  } finally {
    await app.close();
  }
};

/** `localagents merge <job> [--strategy S] [--message M]`: a worktree job's work into its branch (merge.ts). */
export const runMerge: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs(
    'merge',
    context.args,
    {
      ...APP_OPTIONS,
      json: { type: 'boolean' },
      strategy: { type: 'string' },
      message: { type: 'string' },
    },
    true,
  );
  const id = jobArgument('merge', positionals);
  const strategy = values.strategy ?? 'merge';
  if (!MERGE_STRATEGIES.some((known) => known === strategy))
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents merge: --strategy must be merge, squash or cherry-pick (got "${strategy}")`,
    );
  const app = await openApp(context, values);
  try {
    const record = await app.runner.merge(id, strategy as MergeStrategy, values.message);
    const merged = record.worktree?.merged;
    if (values.json) context.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else
      context.stdout.write(
        `job ${id}: merged into ${merged?.into ?? '?'} (${merged?.strategy ?? strategy}, now ${merged?.commit.slice(0, 12) ?? '?'}); worktree and branch removed\n`,
      );
    return 0;
  } finally {
    await app.close();
  }
};

/** `localagents discard <job>`: a worktree job's worktree and branch removed. */
export const runDiscard: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs(
    'discard',
    context.args,
    { ...APP_OPTIONS, json: { type: 'boolean' } },
    true,
  );
  const id = jobArgument('discard', positionals);
  const app = await openApp(context, values);
  try {
    const record = await app.runner.discard(id);
    if (values.json) context.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else context.stdout.write(`job ${id}: worktree and branch removed\n`);
    return 0;
  } finally {
    await app.close();
  }
};

/** `localagents agents [--cwd D] [--json]`: the user's subagents a job here can run as, with their model. */
export const runAgents: CommandRun = async (context) => {
  const { values } = parseCommandArgs('agents', context.args, {
    ...APP_OPTIONS,
    json: { type: 'boolean' },
    cwd: { type: 'string' },
  });
  const app = await openApp(context, values);
  try {
    const agents = await app.runner.agents(values.cwd ?? context.cwd);
    if (values.json) context.stdout.write(`${JSON.stringify(agents, null, 2)}\n`);
    else if (agents.length === 0)
      context.stdout.write(
        'no agents: write .claude/agents/<name>.md (Claude Code subagent format) in the project or ~/.claude\n',
      );
    else
      context.stdout.write(
        `${fitColumns(
          [
            ['NAME', 'MODEL', 'TOOLS', 'SCOPE', 'DESCRIPTION'],
            ...agents.map((agent) => [
              agent.name,
              agent.model ?? '(default)',
              agent.tools?.join(',') ?? '(default)',
              agent.scope,
              agent.description ?? '',
            ]),
          ],
          {
            // The description gives way first, then the tool list.
            width: terminalColumns(context.stdout, context.env),
            shrink: [
              { column: 4, min: 12 },
              { column: 2, min: 10 },
            ],
          },
        ).join('\n')}\n`,
      );
    return 0;
  } finally {
    await app.close();
  }
};

/** `localagents cancel <job>`: stops a job, also one run by another process (its server or `run`). */
export const runCancel: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs(
    'cancel',
    context.args,
    { ...APP_OPTIONS, json: { type: 'boolean' } },
    true,
  );
  const id = jobArgument('cancel', positionals);
  const app = await openApp(context, values);
  try {
    const record = await app.runner.cancel(id);
    if (values.json) context.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else context.stdout.write(`job ${id}: ${record.status}\n`);
    return isTerminalStatus(record.status) ? 0 : 1;
  } finally {
    await app.close();
  }
};
