import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../app.js';
import { createDiagnostics } from '../diagnostics.js';
import { startEmulator, type EmulatorOptions } from '../emulator/emulator.js';
import type { Dialect } from '../emulator/message-format.js';
import { LocalAgentsError } from '../errors.js';
import { runGit } from '../jobs/git.js';
import type { JobRecord } from '../jobs/job.js';
import { filesChanged } from '../jobs/record.js';
import { JOB_FILES } from '../jobs/store.js';
import { backendKindOf } from '../kinds.js';
import { configPaths } from '../registry/config.js';
import { parseCommandArgs, type CommandContext, type CommandRun } from './context.js';
import { describeBackend, renderJob, renderProgress } from './render-jobs.js';

const TASK = 'Create hello.txt with a greeting, then show its content with cat to verify it.';
/**
 * Speeds of a mid-size model on one good GPU, so the record's speed and cache figures read like a real
 * run's (at the emulator's default of no latency they come out in the hundred-thousands of tokens/s).
 * Cached prompt tokens skip prefill, as on llama-server, so the KV-cache reuse shows in the time too.
 */
const DEMO_SPEED = { prefillMsPerToken: 0.1, decodeTokensPerSecond: 200 };
const GIT_IDENTITY = [
  '-c',
  'user.name=localagents demo',
  '-c',
  'user.email=demo@localagents.invalid',
];

async function makeRepo(root: string): Promise<string> {
  const repo = join(root, 'demo-repo');
  await mkdir(repo, { recursive: true });
  await writeFile(
    join(repo, 'README.md'),
    '# demo repository\n\nlocalagents demo: a worktree job adds a file here.\n',
  );
  await runGit(repo, ['init', '-q', '-b', 'main']);
  await runGit(repo, ['add', '-A']);
  await runGit(repo, [...GIT_IDENTITY, 'commit', '-q', '-m', 'initial']);
  return repo;
}

function section(context: CommandContext, title: string, body: string): void {
  context.stdout.write(
    `\n── ${title} ${'─'.repeat(Math.max(0, 60 - title.length))}\n${body.trimEnd()}\n`,
  );
}

/** The servers the demo can play, each started as a user would start it for Claude Code. */
const DEMO_BACKENDS: Record<Dialect, { label: string; options: EmulatorOptions }> = {
  'llama.cpp': { label: 'llama-server', options: { metrics: true } },
  // vLLM needs --enable-auto-tool-choice for Claude Code's tools (docs/backends.md).
  vllm: { label: 'vLLM', options: { toolChoice: true } },
  // Started as docs/backends.md says: a 65536-token window (OLLAMA_CONTEXT_LENGTH, lms load --context-length).
  ollama: { label: 'Ollama', options: { nCtx: 65536 } },
  lmstudio: { label: 'LM Studio', options: { nCtx: 65536 } },
};

function demoBackend(value: string | undefined): Dialect {
  const kind = value === undefined ? 'llama.cpp' : backendKindOf(value);
  if (kind === undefined || kind === 'other')
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents demo: --backend must be llama.cpp, vllm, ollama or lmstudio (got "${value ?? ''}")`,
    );
  return kind;
}

/** `localagents demo`: the whole pipeline on the emulator, in a temp dir, in well under a minute. */
export const runDemo: CommandRun = async (context) => {
  const { values } = parseCommandArgs('demo', context.args, {
    keep: { type: 'boolean' },
    backend: { type: 'string' },
  });
  const backend = demoBackend(values.backend);
  const played = DEMO_BACKENDS[backend];
  const started = Date.now();
  context.stdout.write(
    `localagents demo: the model is a scripted emulator (${played.label} look-alike, no GPU, no network,\n` +
      `emulated speed ${1000 / DEMO_SPEED.prefillMsPerToken} prompt / ${DEMO_SPEED.decodeTokensPerSecond} generated tokens per second);\n` +
      'everything else is real: the claude binary, the shim, the job runner, git worktrees and the records.\n',
  );
  const root = await mkdtemp(join(tmpdir(), 'localagents-demo-'));
  const emulator = await startEmulator({ ...played.options, backend, latency: DEMO_SPEED });
  try {
    const repo = await makeRepo(root);
    const stateDir = join(root, 'state');
    const configFile = join(root, 'models.yaml');
    await writeFile(
      configFile,
      `defaults:\n  timeout_s: 120\nendpoints:\n  emulator:\n    base_url: ${emulator.url}\n    backend: ${backend}\n    host: this machine (scripted emulator)\n`,
    );
    // A private HOME for claude: nothing of the user's Claude Code settings or history is read or written.
    const env = {
      ...context.env,
      HOME: join(root, 'home'),
      XDG_CONFIG_HOME: join(root, 'home', '.config'),
    };
    await mkdir(join(root, 'home', '.claude'), { recursive: true });
    const app = createApp({
      stateDir,
      configPaths: configPaths({ configFlag: configFile, cwd: root, env }),
      env,
      diagnostics: createDiagnostics({ write: (line) => context.stderr.write(line) }),
      cwd: repo,
    });
    try {
      context.stdout.write(
        `emulator: ${emulator.url}\nrepository: ${repo}\nstate: ${stateDir}\ntask: ${TASK}\n\n`,
      );
      const outcome = await app.runner.start({ task: TASK, cwd: repo, isolation: 'worktree' });
      if (outcome.kind === 'not_ready') {
        context.stderr.write(
          `localagents demo: the emulator endpoint is not ready: ${JSON.stringify(outcome.resolution)}\n`,
        );
        return 1;
      }
      let lastLine = '';
      const show = (record: JobRecord): void => {
        const line = renderProgress(record).replace(/^\[[^\]]*\] /, '');
        if (line !== lastLine) context.stdout.write(`  ${renderProgress(record)}\n`);
        lastLine = line;
      };
      let record = outcome.record;
      while (record.finished_at === null) record = await app.runner.wait(record.id, 60_000, show);
      // The request log and the diffstat get sections of their own below.
      section(
        context,
        `job ${record.id}`,
        renderJob(record, new Date(), { backend: false, diffstat: false }),
      );
      const transcript = await app.store.tail(record.id, JOB_FILES.transcript, 24);
      section(context, 'transcript (last lines)', transcript);
      section(
        context,
        'request log (requests.jsonl, written by the shim)',
        record.backend ? describeBackend(record.backend).join('\n') : 'no request log',
      );
      const stat = record.worktree?.diffstat;
      const statLines = stat
        ? [
            `${filesChanged(stat.files_changed)}, +${stat.insertions} -${stat.deletions} on ${record.worktree?.branch ?? '?'}`,
            ...stat.files.map(
              (file) =>
                `  ${file.path} | +${file.insertions ?? '?'} -${file.deletions ?? '?'}${file.untracked ? ' (new file)' : ''}`,
            ),
          ]
        : ['(no changes: the worktree was removed)'];
      const userTree = (await runGit(repo, ['status', '--porcelain'])).stdout.trim();
      statLines.push(
        `your repository ${repo}: ${userTree === '' ? 'untouched (clean)' : `changed!\n${userTree}`}`,
      );
      section(context, 'diffstat', statLines.join('\n'));
      section(
        context,
        'record',
        `job.json, transcript.txt, events.jsonl and requests.jsonl are in ${app.store.jobDir(record.id)}${values.keep ? '' : ' (removed at exit; --keep keeps them)'}`,
      );
      context.stdout.write(
        `\n${record.status === 'succeeded' ? 'demo succeeded' : `demo FAILED: ${record.status}`} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
      );
      return record.status === 'succeeded' ? 0 : 1;
    } finally {
      await app.close();
    }
  } finally {
    await emulator.close();
    if (values.keep) context.stdout.write(`kept ${root}\n`);
    else await rm(root, { recursive: true, force: true });
  }
};
