/** Diagnostics go to stderr, one line per event; stdout belongs to JSON-RPC and to `--json` output. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

const LEVEL_RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

export interface Diagnostics {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
}

export function parseLogLevel(value: string | undefined): LogLevel {
  return value === 'error' || value === 'warn' || value === 'info' || value === 'debug'
    ? value
    : 'warn';
}

export interface DiagnosticsOptions {
  level?: LogLevel;
  write?: (line: string) => void;
}

/** The level defaults to LOCALAGENTS_LOG (else `warn`); `write` defaults to stderr. */
export function createDiagnostics(options: DiagnosticsOptions = {}): Diagnostics {
  const level = options.level ?? parseLogLevel(process.env.LOCALAGENTS_LOG);
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const emit = (at: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    if (LEVEL_RANK[at] > LEVEL_RANK[level]) return;
    const suffix = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    write(`localagents ${at}: ${message}${suffix}\n`);
  };
  return {
    error: (message, fields) => emit('error', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    info: (message, fields) => emit('info', message, fields),
    debug: (message, fields) => emit('debug', message, fields),
  };
}

/** For tests and embedders that want silence. */
export const silentDiagnostics: Diagnostics = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
};
