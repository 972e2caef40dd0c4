import { LocalAgentsError } from '../errors.js';
import { validateJobId } from '../jobs/ids.js';
import { isTerminalStatus } from '../jobs/job.js';
import { MERGE_STRATEGIES, type MergeStrategy } from '../jobs/merge.js';
import { computeDiff } from '../jobs/worktree.js';
import { fitColumns } from './columns.js';
import { parseCommandArgs, type CommandRun } from './context.js';
import { APP_OPTIONS, openApp } from './open-app.js';
import { renderJob, renderJobTable } from './render-jobs.js';
import { paintFor, terminalColumns } from './terminal.js';

/** The job id a command was given, validated; an error naming the fix when there is none. */
export function jobArgument(command: string, positionals: string[]): string {
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
