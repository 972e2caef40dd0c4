import type { Diagnostics } from './diagnostics.js';
import { createRunner, type Runner } from './jobs/runner.js';
import { createJobStore, type JobStore } from './jobs/store.js';
import { createMcpServer } from './mcp/server.js';
import { makePrivateRoot } from './private-fs.js';
import type { ConfigPaths } from './registry/config-types.js';
import { createRegistry, type Registry } from './registry/registry.js';
import { createShim, type Shim } from './shim/server.js';

export interface AppOptions {
  stateDir: string;
  configPaths: ConfigPaths;
  /** The server's environment: read for API keys and passed (without Anthropic credentials) to `claude`. */
  env: NodeJS.ProcessEnv;
  diagnostics: Diagnostics;
  /** Where run_agent runs without a cwd argument (default process.cwd()). */
  cwd?: string;
  /** The user's own `claude` instead of the SDK's bundled one. */
  claudePath?: string | undefined;
}

export interface App {
  registry: Registry;
  runner: Runner;
  store: JobStore;
  /** A new MCP server on this app's parts; connect a transport to it. */
  createMcpServer(): ReturnType<typeof createMcpServer>;
  /** `serve --http` says where it listens, so that no delegate connects back to this server. */
  noteMcpUrl(url: string): void;
  /** Interrupted jobs of dead servers and reaped orphans, found at start. */
  recovered: Promise<{ interrupted: string[]; reaped: number[] }>;
  /** Stops every running job (recording it), then the shim. Idempotent. */
  close(): Promise<void>;
}

/** The composition root: registry, job store, runner, a lazily started shim, and MCP servers over them. */
export function createApp(options: AppOptions): App {
  const registry = createRegistry({
    paths: options.configPaths,
    env: options.env,
    diagnostics: options.diagnostics,
  });
  const store = createJobStore(options.stateDir);
  // The shim listens only once a job needs it: `serve` answers list_models without opening a port.
  let shim: Promise<Shim> | undefined;
  const mcpUrls: string[] = [];
  const runner = createRunner({
    stateDir: options.stateDir,
    store,
    registry,
    shim: () =>
      (shim ??= createShim({
        diagnostics: options.diagnostics,
        // Only a unified KV cache runs out of shared cells: what the traffic proves, list_models says.
        onBackendError: (route, error) => {
          if (error.kind === 'kv_exhausted') registry.noteUnifiedKv(route.backendUrl);
        },
      })),
    baseEnv: options.env,
    diagnostics: options.diagnostics,
    claudePath: options.claudePath,
    mcpUrls: () => mcpUrls,
  });
  // Closed at start too: a state directory an earlier version made readable is private before any job writes.
  makePrivateRoot(options.stateDir).catch((error: unknown) =>
    options.diagnostics.warn(`cannot make the state directory private: ${String(error)}`),
  );
  const recovered = runner.recover().catch((error: unknown) => {
    options.diagnostics.warn(`could not check earlier jobs: ${String(error)}`);
    return { interrupted: [], reaped: [] };
  });
  let closing: Promise<void> | undefined;
  const cwd = options.cwd ?? process.cwd();
  return {
    registry,
    runner,
    store,
    recovered,
    noteMcpUrl: (url) => void mcpUrls.push(url),
    createMcpServer: () => createMcpServer({ registry, runner, store, cwd }),
    close: () =>
      (closing ??= (async () => {
        await recovered;
        await runner.close();
        if (shim) await (await shim).close();
      })()),
  };
}
