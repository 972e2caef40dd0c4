import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from '../app.js';
import { LocalAgentsError } from '../errors.js';
import type { JobRecord } from '../jobs/job.js';
import { spawnDetached } from '../jobs/process.js';
import { verifyRef } from '../jobs/git.js';
import { findRepo } from '../jobs/worktree.js';
import { isPermissionMode, PERMISSION_MODES } from '../kinds.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { shortPath } from './display-paths.js';
import { APP_OPTIONS, openApp } from './open-app.js';
import { renderJob, renderProgress } from './render-jobs.js';
import { createStatusLine } from './status-line.js';
import { isTty, paintFor } from './terminal.js';

const OPTIONS = {
  ...APP_OPTIONS,
  model: { type: 'string' },
  endpoint: { type: 'string' },
  cwd: { type: 'string' },
  isolation: { type: 'string' },
  'base-ref': { type: 'string' },
  timeout: { type: 'string' },
  'max-turns': { type: 'string' },
  'permission-mode': { type: 'string' },
  'append-system-prompt': { type: 'string' },
  verify: { type: 'string' },
  agent: { type: 'string' },
  'verify-retries': { type: 'string' },
  detach: { type: 'boolean' },
  json: { type: 'boolean' },
  // Internal: the background half of --detach prints the id on stdout, then nothing more.
  'detached-child': { type: 'boolean' },
} as const;

/**
 * Live progress on stderr: on a TTY one status line redrawn in place, fitted to the terminal's width
 * and redrawn when it is resized; otherwise a plain line per change (a log file, CI).
 */
function progressReporter(context: CommandContext): {
  update(record: JobRecord): void;
  stop(): void;
} {
  const stderr = context.stderr;
  const paths = { cwd: context.cwd, home: context.env.HOME };
  let last: JobRecord | undefined;
  if (isTty(stderr) && 'columns' in stderr) {
    const line = createStatusLine(stderr as NodeJS.WriteStream);
    const paint = paintFor(stderr, context.env);
    const draw = (): void => {
      const record = last;
      if (record)
        line.show((room) => renderProgress(record, new Date(), { width: room, paths, paint }));
    };
    const ticker = setInterval(draw, 500);
    return {
      update(record) {
        last = record;
        draw();
      },
      stop() {
        clearInterval(ticker);
        line.stop();
      },
    };
  }
  let lastLine = '';
  const withoutTime = (line: string): string => line.replace(/^\[[^\]]*\] /, '');
  return {
    update(record) {
      last = record;
      const line = renderProgress(record, new Date(), { paths });
      if (withoutTime(line) !== withoutTime(lastLine)) stderr.write(`${line}\n`);
      lastLine = line;
    },
    stop() {},
  };
}

/**
 * Where the job would run, checked before the app starts so each fix names what this user typed (--cwd or
 * the current directory, --isolation, --base-ref) rather than run_agent's fields: a directory that is not
 * one, `--isolation worktree` outside a git repository, a --base-ref that is not a commit there.
 */
async function checkWhere(
  values: { cwd?: string | undefined; 'base-ref'?: string | undefined },
  isolation: 'none' | 'worktree',
  here: string,
): Promise<void> {
  const cwdFlag = values.cwd;
  const cwd = resolve(here, cwdFlag ?? '.');
  const isDirectory = await stat(cwd).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (!isDirectory)
    throw new LocalAgentsError('BAD_ARGUMENT', `localagents run: --cwd ${cwd} is not a directory`, {
      hint: 'point --cwd at a directory that exists, or leave it out to run in the current directory',
    });
  if (isolation !== 'worktree') return;
  const repo = await findRepo(cwd);
  if (!repo)
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents run: --isolation worktree needs a git repository, and ${cwd} is not in one`,
      {
        hint:
          cwdFlag === undefined
            ? 'run it from inside a git repository (or point --cwd at one), or drop --isolation worktree'
            : 'point --cwd at a directory inside a git repository, or drop --isolation worktree',
      },
    );
  const baseRef = values['base-ref'];
  if (baseRef === undefined || baseRef === 'working-tree') return;
  if ((await verifyRef(repo.root, `${baseRef}^{commit}`)) === undefined)
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents run: --base-ref "${baseRef}" is not a commit in ${repo.root}`,
      {
        hint: 'pass a branch, tag or commit that exists (git branch -a lists them), or leave --base-ref out to start from HEAD',
      },
    );
}

/** The first line: which job, on what, and (for a worktree job) where it runs, named this once. */
function startedLine(record: JobRecord, context: CommandContext): string {
  const where = record.worktree
    ? ` in worktree ${shortPath(record.worktree.path, { cwd: context.cwd, home: context.env.HOME })}`
    : '';
  return `localagents: job ${record.id} started (${record.served_model} on ${record.endpoint})${where}`;
}

async function waitToEnd(
  app: App,
  id: string,
  onProgress: (record: JobRecord) => void,
): Promise<JobRecord> {
  for (;;) {
    const record = await app.runner.wait(id, 60_000, onProgress);
    if (record.finished_at !== null) return record;
  }
}

/** `localagents run <task>`: one job from the terminal; exit 0 only when it succeeded. */
export const runRun: CommandRun = async (context) => {
  const { values, positionals } = parseCommandArgs('run', context.args, OPTIONS, true);
  const task = positionals.join(' ').trim();
  if (task.length === 0) {
    throw new LocalAgentsError('BAD_ARGUMENT', 'localagents run: the task is missing', {
      hint: 'localagents run "add a --verbose flag to src/cli.ts and test it" --isolation worktree',
    });
  }
  const isolation = values.isolation ?? 'none';
  if (isolation !== 'none' && isolation !== 'worktree') {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents run: --isolation must be none or worktree (got "${isolation}")`,
    );
  }
  // Checked here too, so the fix names the flags this user typed rather than run_agent's fields.
  if (values['base-ref'] !== undefined && isolation !== 'worktree') {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      'localagents run: --base-ref only applies with --isolation worktree',
      { hint: 'add --isolation worktree, or drop --base-ref' },
    );
  }
  const permissionMode = values['permission-mode'];
  if (permissionMode !== undefined && !isPermissionMode(permissionMode)) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents run: --permission-mode must be one of ${PERMISSION_MODES.join(', ')}`,
    );
  }
  await checkWhere(values, isolation, context.cwd);
  if (values.detach && !values['detached-child']) {
    const main = fileURLToPath(new URL('./main.js', import.meta.url));
    const args = context.args.filter((arg) => arg !== '--detach' && arg !== '--json');
    const id = await spawnDetached(process.execPath, [main, 'run', '--detached-child', ...args], {
      cwd: context.cwd,
      env: context.env,
    });
    if (!/^[0-9a-z-]+$/.test(id))
      throw new LocalAgentsError('JOB_STATE', `localagents run --detach: ${id}`);
    context.stdout.write(`${id}\n`);
    return 0;
  }
  const app = await openApp(context, values);
  try {
    await app.recovered;
    const outcome = await app.runner.start({
      task,
      model: values.model,
      endpoint: values.endpoint,
      cwd: resolve(context.cwd, values.cwd ?? '.'),
      isolation,
      baseRef: values['base-ref'],
      timeoutS:
        values.timeout === undefined
          ? undefined
          : integerFlag('run', 'timeout', values.timeout, 1800, 1),
      maxTurns:
        values['max-turns'] === undefined
          ? undefined
          : integerFlag('run', 'max-turns', values['max-turns'], 60, 1),
      permissionMode:
        permissionMode !== undefined && isPermissionMode(permissionMode)
          ? permissionMode
          : undefined,
      systemPromptAppend: values['append-system-prompt'],
      verify: values.verify,
      agent: values.agent,
      verifyRetries:
        values['verify-retries'] === undefined
          ? undefined
          : integerFlag('run', 'verify-retries', values['verify-retries'], 0, 0),
    });
    if (outcome.kind === 'not_ready') {
      const resolution = outcome.resolution;
      const message = resolution.message;
      if (values['detached-child']) context.stdout.write(`${message}\n`);
      else if (values.json) context.stdout.write(`${JSON.stringify(resolution, null, 2)}\n`);
      context.stderr.write(`localagents run: ${message}\n`);
      return 1;
    }
    const id = outcome.record.id;
    if (values['detached-child']) context.stdout.write(`${id}\n`);
    else context.stderr.write(`${startedLine(outcome.record, context)}\n`);
    const cancelOnSignal = (): void => void app.runner.cancel(id);
    context.signal.addEventListener('abort', cancelOnSignal, { once: true });
    const progress = values['detached-child'] ? undefined : progressReporter(context);
    let record: JobRecord;
    try {
      record = await waitToEnd(app, id, (update) => progress?.update(update));
    } finally {
      progress?.stop();
      context.signal.removeEventListener('abort', cancelOnSignal);
    }
    if (values['detached-child']) return record.status === 'succeeded' ? 0 : 1;
    if (values.json) context.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else
      context.stdout.write(
        `${renderJob(
          record,
          new Date(),
          // The started line went to stderr: on one terminal with stdout, the path is on screen already.
          { worktreeNamedAbove: isTty(context.stdout) && isTty(context.stderr) },
          {
            paths: { cwd: context.cwd, home: context.env.HOME },
            paint: paintFor(context.stdout, context.env),
          },
        )}\n`,
      );
    return record.status === 'succeeded' ? 0 : 1;
  } finally {
    await app.close();
  }
};
