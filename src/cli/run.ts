import { fileURLToPath } from 'node:url';
import type { App } from '../app.js';
import { LocalAgentsError } from '../errors.js';
import type { JobRecord } from '../jobs/job.js';
import { spawnDetached } from '../jobs/process.js';
import { isPermissionMode, PERMISSION_MODES } from '../kinds.js';
import { integerFlag, parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { APP_OPTIONS, openApp } from './open-app.js';
import { renderJob, renderProgress } from './render-jobs.js';

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

function isTty(stream: NodeJS.WritableStream): boolean {
  return 'isTTY' in stream && stream.isTTY === true;
}

/** Live progress on stderr: a rewritten status line on a TTY, a plain line per change otherwise. */
function progressReporter(context: CommandContext): {
  update(record: JobRecord): void;
  stop(): void;
} {
  const tty = isTty(context.stderr);
  let last: JobRecord | undefined;
  let lastLine = '';
  const draw = (): void => {
    if (!last) return;
    const line = renderProgress(last);
    if (tty) context.stderr.write(`\r\x1b[K${line}`);
    else if (line.replace(/^\[[^\]]*\] /, '') !== lastLine.replace(/^\[[^\]]*\] /, ''))
      context.stderr.write(`${line}\n`);
    lastLine = line;
  };
  const ticker = tty ? setInterval(draw, 500) : undefined;
  return {
    update(record) {
      last = record;
      draw();
    },
    stop() {
      clearInterval(ticker);
      if (tty && lastLine) context.stderr.write('\r\x1b[K');
    },
  };
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
  const permissionMode = values['permission-mode'];
  if (permissionMode !== undefined && !isPermissionMode(permissionMode)) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents run: --permission-mode must be one of ${PERMISSION_MODES.join(', ')}`,
    );
  }
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
      cwd: values.cwd ?? context.cwd,
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
    else
      context.stderr.write(
        `localagents: job ${id} started (${outcome.record.served_model} on ${outcome.record.endpoint})\n`,
      );
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
    else context.stdout.write(`${renderJob(record)}\n`);
    return record.status === 'succeeded' ? 0 : 1;
  } finally {
    await app.close();
  }
};
