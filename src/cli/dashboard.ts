import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createDiagnostics, type Diagnostics } from '../diagnostics.js';
import type { Dashboard } from '../dashboard/server.js';
import type { JobStore } from '../jobs/store.js';
import { resolveStateDir } from '../paths.js';
import { writeFileAtomic } from '../private-fs.js';
import type { Registry } from '../registry/registry.js';
import {
  integerFlag,
  parseCommandArgs,
  waitForAbort,
  type CommandContext,
  type CommandRun,
} from './context.js';
import { openRegistry } from './open-registry.js';

/** Where the last started dashboard's URL is kept (0600): `serve --dashboard` has no terminal to print it on. */
export const DASHBOARD_URL_FILE = 'dashboard.url';

/**
 * Starts the dashboard over `store` and `registry` and notes its URL in the state directory; the returned
 * close() stops it and removes the note if it is still this dashboard's.
 */
export async function openDashboard(
  context: CommandContext,
  parts: { store: JobStore; registry: Registry; diagnostics: Diagnostics },
  port: number,
): Promise<Dashboard> {
  const { startDashboard } = await import('../dashboard/server.js');
  const dashboard = await startDashboard({ ...parts, port });
  const note = join(resolveStateDir(context.env), DASHBOARD_URL_FILE);
  await writeFileAtomic(note, `${dashboard.url}\n`).catch((error: unknown) =>
    parts.diagnostics.warn(`cannot write ${note}: ${String(error)}`),
  );
  return {
    url: dashboard.url,
    async close() {
      await dashboard.close();
      const noted = await readFile(note, 'utf8').catch(() => '');
      if (noted.trim() === dashboard.url) await rm(note, { force: true });
    },
  };
}

/** `localagents dashboard [--port N]`: the page until Ctrl-C; its URL (with the token) first on stdout. */
export const runDashboard: CommandRun = async (context) => {
  const { values } = parseCommandArgs('dashboard', context.args, {
    config: { type: 'string' },
    port: { type: 'string' },
  });
  const port = integerFlag('dashboard', 'port', values.port, 0);
  const { createJobStore } = await import('../jobs/store.js');
  const diagnostics = createDiagnostics({ write: (line) => context.stderr.write(line) });
  const registry = openRegistry(context, values.config, diagnostics);
  const store = createJobStore(resolveStateDir(context.env));
  const dashboard = await openDashboard(context, { store, registry, diagnostics }, port);
  context.stdout.write(`${dashboard.url}\n`);
  context.stderr.write(
    'localagents: the dashboard of every job in the state directory, on this machine only (the URL is its key); Ctrl-C stops it\n',
  );
  try {
    await waitForAbort(context.signal);
  } finally {
    await dashboard.close();
  }
  return 0;
};
