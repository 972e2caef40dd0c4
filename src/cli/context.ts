import { parseArgs, type ParseArgsConfig } from 'node:util';
import { LocalAgentsError } from '../errors.js';

/** What every command gets instead of reading process globals, so tests can run commands in-process. */
export interface CommandContext {
  /** Arguments after the command name. */
  args: string[];
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborted on SIGINT/SIGTERM: long-running commands close and return. */
  signal: AbortSignal;
}

export type CommandRun = (context: CommandContext) => Promise<number>;

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs with errors that name the command and point at its --help. */
export function parseCommandArgs<T extends Options>(
  command: string,
  args: string[],
  options: T,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new LocalAgentsError('BAD_ARGUMENT', `localagents ${command}: ${message}`, {
      hint: `run \`localagents ${command} --help\` for the options`,
      cause: error,
    });
  }
}

/** A non-negative integer flag, or a BAD_ARGUMENT error naming it. */
export function integerFlag(
  command: string,
  name: string,
  value: string | undefined,
  fallback: number,
  min = 0,
): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min) {
    const expected = min === 0 ? 'a non-negative integer' : `a whole number of at least ${min}`;
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `localagents ${command}: --${name} must be ${expected} (got "${value}")`,
      { hint: `for example --${name} ${fallback}` },
    );
  }
  return parsed;
}

/** Resolves when the signal aborts: how long-running commands wait for Ctrl-C. */
export function waitForAbort(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}
