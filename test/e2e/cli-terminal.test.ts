import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/cli/text-width.js';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import type { ScriptTurn } from '../../src/emulator/script.js';
import { newJobRecord } from '../../src/jobs/record.js';
import { createJobStore } from '../../src/jobs/store.js';
import { shellQuote } from '../../src/shell-quote.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { resetEmulatorAfterEach } from '../support/emulator-reset.js';
import { git, gitRepo } from '../support/git-repo.js';
import { emulatorConfig } from '../support/mcp-client.js';
import { CLI_MAIN as MAIN, runCliProcess as cli } from '../support/cli.js';
import { tempDir } from '../support/temp-dir.js';
import { startPane, tmuxAvailable, type Pane } from '../support/tmux.js';
import { waitFor } from '../support/wait.js';

/**
 * The CLI in a real terminal: tmux panes of 80 and 200 columns running the built CLI and the real
 * `claude` against the emulator, read back with capture-pane. Each final screen is kept (plain .txt and
 * coloured .ansi, `cat` it) in a directory printed at the end, for a person to look at.
 */

const LONG_FILE =
  'src/a/deeply/nested/directory/for/the/terminal/test/with/a-rather-long-file-name.txt';
const STATUS_ROW = /^\[(?:\d+\.\d|-)s?\] /;
// Turn 1 writes a file with a long path; turn 2 is decoded slowly, so the status line naming the
// Write is redrawn many times (every 500 ms) before the job ends.
const SCRIPT: ScriptTurn[] = [
  {
    text: 'I will write the file.',
    toolCalls: [
      { name: 'Write', input: { file_path: `\${cwd}/${LONG_FILE}`, content: 'hello\n' } },
    ],
  },
  {
    text: `Done: I wrote ${LONG_FILE}. ${'It holds one line of text, and nothing else changed in the repository. '.repeat(3)}`,
  },
];

function command(args: string[]): string {
  return [process.execPath, MAIN, ...args].map(shellQuote).join(' ');
}

let emulator: Emulator;
let screens: string;
beforeAll(async () => {
  if (!existsSync(MAIN))
    throw new Error('dist/cli/main.js is missing: run `npm run build` first (npm test does)');
  emulator = await startEmulator({ script: SCRIPT, latency: { decodeTokensPerSecond: 12 } });
  screens = mkdtempSync(join(tmpdir(), 'localagents-screens-'));
});
resetEmulatorAfterEach(() => emulator);
afterAll(async () => {
  await emulator.close();
  console.info(`terminal screens kept in ${screens}`);
});

async function setup() {
  const configDir = await tempDir(
    { 'models.yaml': emulatorConfig(emulator.url) },
    'localagents-config-',
  );
  const stateDir = await tempDir({}, 'localagents-state-');
  const env = await isolatedClaudeEnv({
    LOCALAGENTS_STATE_DIR: stateDir,
    LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
  });
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
  return { env, stateDir, cwd: configDir };
}

// CI installs tmux (.ci/run): there a missing tmux fails these tests instead of skipping them.
const skipTerminal = !tmuxAvailable() && !process.env.CI;
if (skipTerminal) process.stderr.write('terminal tests skipped: no tmux (apt-get install tmux)\n');

/**
 * A detached job whose first model request the emulator holds (running, not done), and `log -f` of it in an
 * 80-column pane, once it has printed the transcript so far.
 */
async function followHeldJob(
  { env, cwd }: { env: Record<string, string>; cwd: string },
  jobCwd: string,
): Promise<{ id: string; pane: Pane }> {
  emulator.injectFaults([{ kind: 'hold' }]);
  const detached = await cli(['run', 'Write the file.', '--cwd', jobCwd, '--detach'], { env, cwd });
  expect(detached.code).toBe(0);
  const id = detached.stdout.trim();
  await waitFor(() => emulator.heldRequests() > 0, {
    timeoutMs: 60_000,
    what: 'the job’s first request',
  });
  const pane = await startPane({ command: command(['log', id, '-f']), columns: 80, cwd, env });
  await pane.waitForScreen(
    (rows) => rows.some((row) => row.startsWith(`=== job ${id} start`)),
    'log -f to print the transcript so far',
  );
  return { id, pane };
}

describe.skipIf(skipTerminal)('localagents in a terminal (tmux)', () => {
  it.each([80, 200])(
    'run at %i columns keeps one status line within the width and leaves no stale rows',
    async (columns) => {
      const { env, cwd } = await setup();
      const repo = await gitRepo();
      const pane = await startPane({
        command: command(['run', 'Write the file.', '--cwd', repo, '--isolation', 'worktree']),
        columns,
        cwd,
        env,
      });
      const writeSeenAt = (rows: string[]): number | undefined => {
        const row = rows.find((text) => STATUS_ROW.test(text) && text.includes('Write('));
        return row === undefined ? undefined : Number(/^\[([\d.]+)s\]/.exec(row)?.[1]);
      };
      const first = await pane.waitForScreen(writeSeenAt, 'the status line naming the Write');
      // Redrawn every 500 ms: a second and a half later it has been redrawn at least twice.
      const live = await pane.waitForScreen((rows) => {
        const seen = writeSeenAt(rows);
        return seen !== undefined && seen >= first + 1.5
          ? rows.filter((row) => STATUS_ROW.test(row))
          : undefined;
      }, 'the status line redrawn');
      await pane.keep(screens, `run-${columns}-live`);
      expect(live).toHaveLength(1);
      const [line = ''] = live;
      expect(displayWidth(line)).toBeLessThan(columns);
      // The worktree is named once, in the first line; the status line names the file within it.
      expect(line).not.toContain('worktrees');
      if (columns === 80) expect(line).toMatch(/tool Write\(src\/a\/deep.*….*file-name\.txt\)/);
      else expect(line).toContain(`tool Write(${LONG_FILE})`);

      if (columns === 80) {
        // Narrowed while the line is up: tmux rewraps it, and the redraw must clear both rows.
        await pane.resize(50, 40);
        await pane.waitForScreen(
          (rows) =>
            rows.some((row) => STATUS_ROW.test(row) && row.includes('…') && row.length < 50),
          'the status line redrawn for 50 columns',
        );
        const status = (await pane.screen()).filter((row) => STATUS_ROW.test(row));
        expect(status).toHaveLength(1);
      }

      expect(await pane.exited()).toBe(0);
      await pane.keep(screens, `run-${columns}`);
      const history = await pane.screen({ history: true });
      expect(history.filter((row) => STATUS_ROW.test(row))).toEqual([]);
      expect(history.join('\n')).toMatch(/job \S+: succeeded/);
      const joined = await pane.screen({ history: true, joined: true });
      expect(joined.find((row) => row.startsWith('localagents: job '))).toContain(' in worktree ');
      // Named once on the whole screen: the summary points at the started line's path.
      expect(joined.join('\n').split('/worktrees/').length - 1).toBe(1);
      expect(joined.join('\n')).toContain('worktree: kept (the one above) on local-agent/');
    },
  );

  it('fits the jobs table to 80 columns, shows it whole at 200, and colours it unless NO_COLOR', async () => {
    const { env, cwd, stateDir } = await setup();
    const store = createJobStore(stateDir);
    const task =
      'Refactor the configuration loader so that every layer is validated with zod and names the fix';
    for (const [id, status] of [
      ['20261201-100000-aaaa', 'succeeded'],
      ['20261201-100001-bbbb', 'failed'],
    ] as const)
      await store.save({
        ...newJobRecord({
          id,
          task,
          cwd,
          isolation: 'none',
          permissionMode: 'acceptEdits',
          maxTurns: 5,
          timeoutS: 60,
        }),
        status,
        served_model: 'unsloth/Qwen3.8-27B-Instruct-GGUF:UD-Q4_K_XL',
      });

    const narrow = await startPane({ command: command(['jobs']), columns: 80, cwd, env });
    expect(await narrow.exited()).toBe(0);
    await narrow.keep(screens, 'jobs-80');
    const rows = (await narrow.screen({ history: true })).filter((row) => row.length > 0);
    expect(rows[0]).toMatch(/^ID\s+STATUS\s+MODEL\s+TIME\s+FILES\s+TASK$/);
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(displayWidth(row)).toBeLessThanOrEqual(80);
    // Joining wrapped rows changes nothing: no row was wrapped.
    expect(
      (await narrow.screen({ history: true, joined: true })).filter((row) => row.length > 0),
    ).toEqual(rows);
    const coloured = (await narrow.screen({ history: true, escapes: true })).join('\n');
    expect(coloured).toContain('\u001b[32msucceeded');
    expect(coloured).toContain('\u001b[31mfailed');

    const wide = await startPane({ command: command(['jobs']), columns: 200, cwd, env });
    expect(await wide.exited()).toBe(0);
    await wide.keep(screens, 'jobs-200');
    const wideRows = await wide.screen({ history: true });
    expect(wideRows.join('\n')).toContain(task);
    expect(wideRows.join('\n')).toContain('unsloth/Qwen3.8-27B-Instruct-GGUF:UD-Q4_K_XL');

    const plain = await startPane({
      command: command(['jobs']),
      columns: 80,
      cwd,
      env: { ...env, NO_COLOR: '1' },
    });
    expect(await plain.exited()).toBe(0);
    await plain.keep(screens, 'jobs-80-no-color');
    const plainScreen = (await plain.screen({ history: true, escapes: true })).join('\n');
    expect(plainScreen).toContain('succeeded');
    expect(plainScreen).not.toContain('\u001b[');
  });

  it('log -f shows a transcript line written after it started, and exits when the job ends', async () => {
    const { env, cwd, stateDir } = await setup();
    const repo = await gitRepo();
    const { id, pane } = await followHeldJob({ env, cwd }, repo);
    const transcript = join(stateDir, 'jobs', id, 'transcript.txt');
    const before = await readFile(transcript, 'utf8');
    expect(before).not.toContain('tool Write(');
    emulator.releaseHolds();
    await pane.waitForScreen(
      (rows) => rows.some((row) => row.startsWith('tool Write(')),
      'the Write, written to the transcript after log -f started',
    );
    expect(await pane.exited()).toBe(0);
    await pane.keep(screens, 'log-follow');
    const history = (await pane.screen({ history: true, joined: true })).join('\n');
    expect(history).toContain('=== done: succeeded');
  });

  it('log -f stops on Ctrl-C while the job still runs', async () => {
    const { env, cwd } = await setup();
    const { id, pane } = await followHeldJob({ env, cwd }, cwd);
    await pane.keys('C-c');
    expect(await pane.exited()).toBe(0);
    expect((await pane.screen({ history: true })).join('\n')).not.toContain('=== done');
    expect((await cli(['cancel', id], { env, cwd })).stdout).toBe(`job ${id}: cancelled\n`);
  });
});

describe('localagents completion bash, in bash', () => {
  it('completes commands, options and the job ids in the state dir', async () => {
    const stateDir = await tempDir({}, 'localagents-state-');
    for (const id of ['20261201-100000-aaaa', '20261201-100001-bbbb'])
      await mkdir(join(stateDir, 'jobs', id), { recursive: true });
    const complete = (words: string): Promise<string> =>
      new Promise((resolve, reject) => {
        execFile(
          'bash',
          [
            '-c',
            `source <(${command(['completion', 'bash'])}); COMP_WORDS=(${words}); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _localagents; printf '%s\\n' "\${COMPREPLY[@]}"`,
          ],
          { env: { ...process.env, LOCALAGENTS_STATE_DIR: stateDir } },
          (error, stdout) => (error ? reject(new Error(error.message)) : resolve(stdout)),
        );
      });
    expect(await complete('localagents lo')).toBe('log\n');
    expect(await complete('localagents log ""')).toBe(
      '20261201-100001-bbbb\n20261201-100000-aaaa\n',
    );
    expect(await complete('localagents jobs --w')).toBe('--wide\n');
    expect(await complete('localagents completion z')).toBe('zsh\n');
  });
});

describe('errors that name the fix for what the user did', () => {
  it('run --isolation worktree in a repository with no commit says to commit once, not to fix base_ref', async () => {
    const { env, cwd } = await setup();
    const repo = await tempDir({ 'README.md': '# new\n' }, 'localagents-repo-');
    await git(repo, 'init', '-q', '-b', 'main');
    const run = await cli(['run', 'Write the file.', '--cwd', repo, '--isolation', 'worktree'], {
      env,
      cwd,
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`the repository ${repo} has none yet`);
    expect(run.stderr).toContain(
      'fix: commit once (git add -A && git commit -m "initial"), or run the job without worktree isolation',
    );
    expect(run.stderr).not.toContain('base_ref');
  });

  it('run --isolation worktree outside a repository says where to run it, with or without --cwd', async () => {
    const { env, cwd } = await setup();
    const here = await cli(['run', 'x', '--isolation', 'worktree'], { env, cwd });
    expect(here.code).toBe(2);
    expect(here.stderr).toBe(
      `localagents run: --isolation worktree needs a git repository, and ${cwd} is not in one\n  fix: run it from inside a git repository (or point --cwd at one), or drop --isolation worktree\n`,
    );
    const there = await cli(['run', 'x', '--isolation', 'worktree', '--cwd', cwd], {
      env,
      cwd: tmpdir(),
    });
    expect(there.stderr).toContain(
      'fix: point --cwd at a directory inside a git repository, or drop --isolation worktree',
    );
  });

  it('run names --cwd and --base-ref in their fixes: a missing directory, a ref that is not a commit', async () => {
    const { env, cwd } = await setup();
    const missing = join(cwd, 'no-such-dir');
    const noDir = await cli(['run', 'x', '--cwd', 'no-such-dir'], { env, cwd });
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toBe(
      `localagents run: --cwd ${missing} is not a directory\n  fix: point --cwd at a directory that exists, or leave it out to run in the current directory\n`,
    );
    const repo = await gitRepo();
    const badRef = await cli(
      ['run', 'x', '--cwd', repo, '--isolation', 'worktree', '--base-ref', 'no-such-branch'],
      { env, cwd },
    );
    expect(badRef.code).toBe(2);
    expect(badRef.stderr).toContain(`--base-ref "no-such-branch" is not a commit in ${repo}`);
    expect(badRef.stderr).toContain('or leave --base-ref out to start from HEAD');
    expect(badRef.stderr).not.toContain('base_ref');
  });

  it('run --base-ref without --isolation worktree names the flags, not run_agent’s fields', async () => {
    const { env, cwd } = await setup();
    const run = await cli(['run', 'x', '--base-ref', 'main'], { env, cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'localagents run: --base-ref only applies with --isolation worktree\n  fix: add --isolation worktree, or drop --base-ref\n',
    );
  });
});
