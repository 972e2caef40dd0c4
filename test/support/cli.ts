import { execFile } from 'node:child_process';

/** The built CLI (`npm run build` first; `npm test` does). */
export const CLI_MAIN = new URL('../../dist/cli/main.js', import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `localagents ARGS` to its end (100 s at most) and resolves with its exit code and output. */
export function runCliProcess(
  args: string[],
  options: { env: Record<string, string>; cwd: string },
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, ...args],
      { ...options, timeout: 100_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
