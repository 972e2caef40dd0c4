/**
 * What the CLI knows about the terminal it writes to: whether it is one, how wide it is, and whether to
 * colour (pure decisions from the stream's flags and the environment, so they are unit-tested).
 */

import type { PathView } from './display-paths.js';

/** How a screen shows things: its width, where the reader stands (paths), colour. All optional. */
export interface ScreenView {
  /** Columns to fit; undefined fits nothing. */
  width?: number | undefined;
  /** Every cell whole, whatever the width (`jobs --wide`). */
  wide?: boolean | undefined;
  paths?: PathView | undefined;
  paint?: Paint | undefined;
}

/** The variables that decide width and colour. */
export interface TerminalEnv {
  NO_COLOR?: string | undefined;
  FORCE_COLOR?: string | undefined;
  TERM?: string | undefined;
  COLUMNS?: string | undefined;
}

export function isTty(stream: NodeJS.WritableStream): boolean {
  return 'isTTY' in stream && stream.isTTY === true;
}

/**
 * Colour on a TTY unless NO_COLOR is set (non-empty, no-color.org) or TERM is dumb; FORCE_COLOR decides
 * before anything else ("0" or "false" off, any other value on, pipes included), the order Node's own
 * tty.getColorDepth() uses.
 */
export function colorEnabled(env: TerminalEnv, tty: boolean): boolean {
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return tty && env.TERM !== 'dumb';
}

/**
 * The width to fit: a TTY's own columns, else $COLUMNS when it is a positive whole number, else none
 * (a pipe gets every column; a reader like `less -S` or a script decides).
 */
export function terminalColumns(
  stream: NodeJS.WritableStream,
  env: TerminalEnv,
): number | undefined {
  if (
    isTty(stream) &&
    'columns' in stream &&
    typeof stream.columns === 'number' &&
    stream.columns > 0
  )
    return stream.columns;
  const fromEnv = Number(env.COLUMNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : undefined;
}

/** SGR wrappers; all of them return the text unchanged when colour is off. */
export interface Paint {
  enabled: boolean;
  /** A job status word in its colour: green done, red failed, yellow stopped, cyan running. */
  status: (status: string, text?: string) => string;
  warning: (text: string) => string;
  error: (text: string) => string;
  dim: (text: string) => string;
}

const STATUS_COLORS: Record<string, number> = {
  succeeded: 32,
  failed: 31,
  failed_verification: 31,
  interrupted: 31,
  timeout: 33,
  cancelled: 33,
  running: 36,
  queued: 34,
};

export function createPaint(enabled: boolean): Paint {
  const sgr = (code: number | undefined, text: string): string =>
    enabled && code !== undefined && text.length > 0 ? `\u001b[${code}m${text}\u001b[39m` : text;
  return {
    enabled,
    status: (status, text = status) => sgr(STATUS_COLORS[status], text),
    warning: (text) => sgr(33, text),
    error: (text) => sgr(31, text),
    dim: (text) => (enabled && text.length > 0 ? `\u001b[2m${text}\u001b[22m` : text),
  };
}

/** The paint for one stream of a command: its TTY flag and the environment decide. */
export function paintFor(stream: NodeJS.WritableStream, env: TerminalEnv): Paint {
  return createPaint(colorEnabled(env, isTty(stream)));
}
