import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { onTestFinished } from 'vitest';
import { waitFor } from './wait.js';

const run = promisify(execFile);

/** tmux as the terminal tests find it: on PATH, installed by .ci/run (Debian package `tmux`) when missing. */
export function tmuxAvailable(): boolean {
  return ['/usr/bin/tmux', '/usr/local/bin/tmux', '/bin/tmux'].some((path) => existsSync(path));
}

export interface Pane {
  /** The screen as a person sees it: one string per row (trailing blanks trimmed by tmux). */
  screen(options?: { history?: boolean; escapes?: boolean; joined?: boolean }): Promise<string[]>;
  /** Polls the screen until `check` returns something, or fails at the deadline naming what it waited for. */
  waitForScreen<T>(
    check: (rows: string[]) => T | undefined | false,
    what: string,
    timeoutMs?: number,
  ): Promise<T>;
  /** Waits until the command in the pane has exited; its exit status. */
  exited(timeoutMs?: number): Promise<number>;
  resize(columns: number, rows: number): Promise<void>;
  /** Types keys into the pane, in tmux's names (`C-c`, `Enter`). */
  keys(...keys: string[]): Promise<void>;
  /** Writes the screen (whole history, with and without colour escapes) where a person can look at it. */
  keep(dir: string, name: string): Promise<void>;
}

/**
 * `command` (a shell line) in a detached tmux session of `columns` × `rows`, on a private socket with no
 * user config; the server gets exactly `env` and is killed when the test finishes. The pane stays after
 * its command exits (remain-on-exit), so the last screen can still be read.
 */
export async function startPane(options: {
  command: string;
  columns: number;
  rows?: number;
  cwd: string;
  env: Record<string, string>;
}): Promise<Pane> {
  // Not tempDir(): the server must be gone before its socket's directory is, so one hook does both.
  const dir = await mkdtemp(join(tmpdir(), 'localagents-tmux-'));
  const socket = join(dir, 'socket');
  const config = join(dir, 'tmux.conf');
  const statusFile = join(dir, 'exit-status');
  await writeFile(
    config,
    'set -g remain-on-exit on\nset -g status off\nset -g history-limit 10000\nset -g default-terminal screen\n',
  );
  const env = { ...options.env };
  for (const name of ['TMUX', 'TMUX_PANE', 'COLUMNS', 'LINES']) delete env[name];
  const tmux = async (...args: string[]): Promise<string> =>
    (await run('tmux', ['-S', socket, ...args], { env, cwd: options.cwd })).stdout;
  onTestFinished(async () => {
    await tmux('kill-server').catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  await tmux(
    '-f',
    config,
    'new-session',
    '-d',
    '-s',
    'cli',
    '-x',
    String(options.columns),
    '-y',
    String(options.rows ?? 40),
    '-c',
    options.cwd,
    // The exit status goes to a file: tmux's #{pane_dead_status} stays empty when its server cannot
    // reap the pane's process (SIGCHLD blocked in the environment that started it).
    `${options.command}; echo $? > ${statusFile}`,
  );
  const screen: Pane['screen'] = async ({
    history = false,
    escapes = false,
    joined = false,
  } = {}) => {
    const args = ['capture-pane', '-p', '-t', 'cli'];
    if (history) args.push('-S', '-');
    if (escapes) args.push('-e');
    if (joined) args.push('-J');
    const text = await tmux(...args);
    // tmux's own "Pane is dead (status 0, …)" row, when it reaped the command, is not the CLI's.
    return text
      .replace(/\n+$/, '')
      .split('\n')
      .filter((row) => !row.startsWith('Pane is dead ('));
  };
  return {
    screen,
    waitForScreen: (check, what, timeoutMs = 60_000) =>
      waitFor(async () => check(await screen()), { timeoutMs, intervalMs: 100, what }),
    exited: async (timeoutMs = 100_000) => {
      const status = await waitFor(
        async () => {
          const text = await readFile(statusFile, 'utf8').catch(() => '');
          return text.endsWith('\n') ? Number(text.trim()) : undefined;
        },
        { timeoutMs, intervalMs: 100, what: 'the command in tmux to exit' },
      );
      return status;
    },
    resize: async (columns, rows) => {
      await tmux('resize-window', '-t', 'cli', '-x', String(columns), '-y', String(rows));
    },
    keys: async (...keys) => {
      await tmux('send-keys', '-t', 'cli', ...keys);
    },
    keep: async (into, name) => {
      const plain = await screen({ history: true });
      const coloured = await screen({ history: true, escapes: true });
      await writeFile(join(into, `${name}.txt`), `${plain.join('\n')}\n`);
      await writeFile(join(into, `${name}.ansi`), `${coloured.join('\n')}\n`);
    },
  };
}
