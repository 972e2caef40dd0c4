import { execFile } from 'node:child_process';
import { LocalAgentsError } from '../errors.js';

export interface GitOptions {
  signal?: AbortSignal | undefined;
  /** Exit codes that are answers rather than failures (e.g. `diff --quiet` → 1). */
  okCodes?: number[];
  /** Most stdout bytes to take (default 64 MiB); more fails the call (isOutputTooLarge). */
  maxOutputBytes?: number;
  /** Written to git's stdin (a patch for `git apply -`). */
  input?: string;
}

/** The call failed because git printed more than maxOutputBytes. */
export function isOutputTooLarge(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return (
    typeof cause === 'object' &&
    cause !== null &&
    'code' in cause &&
    cause.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER'
  );
}

export interface GitResult {
  stdout: string;
  code: number;
}

// Same settings for every call: no pager, no prompts, no locale-dependent output.
const GIT_ENV = {
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  LC_ALL: 'C',
  GIT_OPTIONAL_LOCKS: '0',
};

/** `git <args>` in `cwd`; a non-zero exit outside `okCodes` → LocalAgentsError('GIT_FAILED') with git's stderr. */
export function runGit(cwd: string, args: string[], options: GitOptions = {}): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      args,
      {
        cwd,
        env: { ...process.env, ...GIT_ENV },
        maxBuffer: options.maxOutputBytes ?? 64 * 1024 * 1024,
        signal: options.signal,
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, code: 0 });
        const code = typeof error.code === 'number' ? error.code : -1;
        if (options.okCodes?.includes(code)) return resolve({ stdout, code });
        const detail = stderr.trim() || error.message;
        reject(
          new LocalAgentsError('GIT_FAILED', `git ${args.join(' ')} failed in ${cwd}: ${detail}`, {
            hint: 'check that the directory is a git repository and that git works there',
            cause: error,
          }),
        );
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/**
 * The object `ref` names in the repository at `cwd` (`git rev-parse --verify --quiet`), or undefined when it names
 * none: exit 1, or 128 for what git cannot read as a ref at all.
 */
export async function verifyRef(cwd: string, ref: string): Promise<string | undefined> {
  const result = await runGit(cwd, ['rev-parse', '--verify', '--quiet', ref], {
    okCodes: [1, 128],
  });
  return result.code === 0 ? result.stdout.trim() : undefined;
}

/** stdout of a git command, trailing newline removed. */
export async function gitOutput(
  cwd: string,
  args: string[],
  signal?: AbortSignal,
): Promise<string> {
  const { stdout } = await runGit(cwd, args, { signal });
  return stdout.replace(/\n$/, '');
}
