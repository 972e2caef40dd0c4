import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';

/** What the Agent SDK's `spawnClaudeCodeProcess` hands us (structurally its SpawnOptions). */
export interface ClaudeSpawnOptions {
  command: string;
  args: string[];
  cwd?: string | undefined;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
}

export interface ClaudeProcessHooks {
  onSpawn: (pid: number) => void;
  onStderr: (text: string) => void;
  onExit: () => void;
}

/**
 * Spawns `claude` the way the SDK would, but tells us its pid (recorded in job.json so an orphan left
 * by a killed server can be reaped, contract §0.10) and hands us its stderr for the transcript.
 */
export function spawnClaudeProcess(
  options: ClaudeSpawnOptions,
  hooks: ClaudeProcessHooks,
): ChildProcessByStdio<Writable, Readable, Readable> {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env,
    signal: options.signal,
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
  if (child.pid !== undefined) hooks.onSpawn(child.pid);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => hooks.onStderr(text));
  child.once('exit', () => hooks.onExit());
  // An abort makes spawn() emit 'error' (AbortError); the SDK listens for it too, we only keep it from being unhandled.
  child.on('error', () => {});
  return child;
}

/** process.kill(pid, 0): true while a process with that pid exists (EPERM also means it exists). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EPERM';
  }
}

/** Whether pid still runs a `claude` binary: guards against killing an unrelated process that reused the pid. */
export async function isClaudeProcess(pid: number): Promise<boolean> {
  if (!isProcessAlive(pid)) return false;
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return /claude/.test(cmdline) && cmdline.includes('stream-json');
  } catch {
    // No /proc (macOS): trust the recorded pid.
    return true;
  }
}

/** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone. `claude` exits ~1.4 s after SIGTERM. */
export async function terminateProcess(pid: number, graceMs = 5000): Promise<void> {
  if (!isProcessAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isProcessAlive(pid) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (isProcessAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * Starts `command args` in its own session, detached from this process, and resolves with the first line
 * it prints on stdout (a job id) — then lets it run on alone. Used by `localagents run --detach`.
 */
export function spawnDetached(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<string> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(
      () => finish(new Error('the detached job did not report its id in time')),
      options.timeoutMs ?? 60_000,
    );
    const finish = (error?: Error, line?: string): void => {
      clearTimeout(timer);
      child.stdout.removeAllListeners('data');
      child.stdout.destroy();
      child.unref();
      if (error) reject(error);
      else resolve(line ?? '');
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      buffer += text;
      const newline = buffer.indexOf('\n');
      if (newline !== -1) finish(undefined, buffer.slice(0, newline));
    });
    child.once('error', (error) => finish(error));
    child.once('exit', (code) =>
      finish(new Error(`the detached job exited (code ${code}) before reporting its id`)),
    );
  });
}

export interface ShellOutcome {
  /** null: it did not exit by itself (timed out, or stopped by the signal). */
  exitCode: number | null;
  timedOut: boolean;
  /** stdout and stderr as they interleaved, the last `keepBytes` of them. */
  output: string;
  durationMs: number;
}

/**
 * A user's shell command (a job's verify command) in `cwd`, in a process group of its own so a timeout or a
 * cancel stops whatever it started too; its output kept to the last `keepBytes`.
 */
export function runShellCommand(options: {
  command: string;
  cwd: string;
  env: Record<string, string | undefined>;
  timeoutMs: number;
  signal: AbortSignal;
  keepBytes: number;
}): Promise<ShellOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', options.command], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = Buffer.alloc(0);
    const keep = (chunk: Buffer): void => {
      output = Buffer.concat([output, chunk]);
      if (output.length > options.keepBytes * 2) output = output.subarray(-options.keepBytes);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const stop = (): void => {
      if (child.pid === undefined || child.exitCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = (): void => stop();
    options.signal.addEventListener('abort', onAbort, { once: true });
    const done = (exitCode: number | null): void => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      resolve({
        exitCode: timedOut || options.signal.aborted ? null : exitCode,
        timedOut,
        output: output.subarray(-options.keepBytes).toString('utf8'),
        durationMs: performance.now() - started,
      });
    };
    child.on('error', (error) => {
      keep(Buffer.from(`${String(error)}\n`));
      done(null);
    });
    child.on('close', (code) => done(code));
  });
}
