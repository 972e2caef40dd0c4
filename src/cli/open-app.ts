import type { App } from '../app.js';
import { createDiagnostics } from '../diagnostics.js';
import { resolveStateDir } from '../paths.js';
import type { CommandContext } from './context.js';

/** Options every job command shares. */
export const APP_OPTIONS = {
  config: { type: 'string' },
  'claude-path': { type: 'string' },
} as const;

export interface AppFlags {
  config?: string | undefined;
  'claude-path'?: string | undefined;
}

/**
 * The app for one CLI command: state dir and config from the environment, diagnostics to the command's
 * stderr. Imported on demand, so `serve` can answer the MCP handshake before the app has loaded.
 */
export async function openApp(context: CommandContext, values: AppFlags): Promise<App> {
  const [{ createApp }, { configPaths }] = await Promise.all([
    import('../app.js'),
    import('../registry/config.js'),
  ]);
  const env = context.env;
  return createApp({
    stateDir: resolveStateDir(env),
    configPaths: configPaths({
      cwd: context.cwd,
      env,
      ...(values.config ? { configFlag: values.config } : {}),
    }),
    env,
    diagnostics: createDiagnostics({ write: (line) => context.stderr.write(line) }),
    cwd: context.cwd,
    claudePath: values['claude-path'] ?? env.LOCALAGENTS_CLAUDE_PATH,
  });
}
