import { join } from 'node:path';
import { createDiagnostics } from '../diagnostics.js';
import { LocalAgentsError } from '../errors.js';
import { readyEndpoint, routeConfigFor } from '../jobs/ready-endpoint.js';
import { claudeCodeSettings } from '../jobs/session-env.js';
import { resolveStateDir } from '../paths.js';
import { shellQuote } from '../shell-quote.js';
import { dumpRequestsFromEnv } from '../registry/config-defaults.js';
import type { BackendKind } from '../kinds.js';
import { probeEndpoint } from '../registry/probe.js';
import { createShim } from '../shim/server.js';
import type { RouteConfig } from '../shim/route.js';
import { redactUrl } from '../redact.js';
import {
  integerFlag,
  parseCommandArgs,
  waitForAbort,
  type CommandContext,
  type CommandRun,
} from './context.js';
import { openRegistry } from './open-registry.js';

const OPTIONS = {
  endpoint: { type: 'string' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  backend: { type: 'string' },
  'api-key-env': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'log-dir': { type: 'string' },
  'dump-requests': { type: 'boolean' },
  'keepalive-s': { type: 'string' },
  'probe-timeout-s': { type: 'string' },
  config: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseProxyArgs>;

function parseProxyArgs(args: string[]) {
  return parseCommandArgs('proxy', args, OPTIONS).values;
}

function backendFlag(value: string | undefined): BackendKind {
  if (value === undefined) return 'other';
  if (value === 'llama.cpp' || value === 'vllm' || value === 'other') return value;
  throw new LocalAgentsError(
    'BAD_ARGUMENT',
    `localagents proxy: --backend must be llama.cpp, vllm or other (got "${value}")`,
  );
}

/** The backend of a configured endpoint, through the registry (which probes it and picks the served id). */
async function routeForEndpoint(
  context: CommandContext,
  values: Values,
  name: string,
): Promise<RouteConfig> {
  const registry = openRegistry(context, values.config);
  const resolution = await registry.resolve(
    { endpoint: name, ...(values.model ? { model: values.model } : {}) },
    context.signal,
  );
  if (resolution.kind !== 'ready') {
    throw new LocalAgentsError(
      resolution.kind === 'config_error'
        ? 'CONFIG_INVALID'
        : resolution.kind === 'unknown_endpoint' || resolution.kind === 'ambiguous'
          ? 'BAD_ARGUMENT'
          : 'MODEL_NOT_RUNNING',
      resolution.message,
    );
  }
  return routeConfigFor(readyEndpoint(resolution));
}

/** A bare URL: probed for its backend kind, served ids and window (backends.md §3, registry items 2–3). */
async function routeForUrl(
  context: CommandContext,
  values: Values,
  baseUrl: string,
): Promise<RouteConfig> {
  const apiKeyEnv = values['api-key-env'];
  const timeoutS = integerFlag('proxy', 'probe-timeout-s', values['probe-timeout-s'], 5);
  const probe = await probeEndpoint(
    {
      name: 'cli',
      base_url: baseUrl,
      backend: backendFlag(values.backend),
      env: {},
      ...(apiKeyEnv ? { api_key_env: apiKeyEnv } : {}),
    },
    { timeoutMs: timeoutS * 1000, env: context.env, signal: context.signal },
  );
  if (probe.status === 'unauthorized' && !apiKeyEnv) {
    // The registry's sentence points at models.yaml; a --base-url proxy has no entry there, only the flag.
    throw new LocalAgentsError(
      'ENDPOINT_UNREACHABLE',
      `localagents proxy: ${redactUrl(baseUrl)} wants an API key and none was given`,
      {
        hint: 'export the key the server was started with in a variable and pass its name: --api-key-env VAR',
      },
    );
  }
  if (!probe.up) {
    throw new LocalAgentsError(
      'ENDPOINT_UNREACHABLE',
      `localagents proxy: ${redactUrl(baseUrl)}: ${probe.error ?? probe.status}`,
      {
        hint: 'start the server, or check --base-url (e.g. http://127.0.0.1:8080, without /v1)',
      },
    );
  }
  const servedId = values.model ?? probe.models[0];
  if (servedId === undefined) {
    throw new LocalAgentsError(
      'ENDPOINT_UNREACHABLE',
      `localagents proxy: ${redactUrl(baseUrl)} serves no model`,
    );
  }
  const contextTokens = probe.context[servedId] ?? Object.values(probe.context)[0];
  const apiKey = apiKeyEnv ? context.env[apiKeyEnv] : undefined;
  const { endpointName: _none, ...route } = routeConfigFor(
    {
      endpoint: { name: 'cli', base_url: baseUrl, backend: probe.backend, env: {} },
      servedId,
      servedIds: probe.models,
      contextTokens,
      contextSource: contextTokens ? 'probe' : 'unknown',
      apiKey: apiKey || undefined,
      apiKeyEnv: apiKeyEnv || undefined,
    },
    // No models.yaml entry behind this route: a 401 should point at the flag.
    { apiKeyFrom: 'proxy-flag' },
  );
  return route;
}

/** What a user exports before running `claude` against the proxy: the settings jobs get, less the job's own. */
export function proxyEnvironment(baseUrl: string, route: RouteConfig): Array<[string, string]> {
  return claudeCodeSettings({
    servedId: route.servedId,
    baseUrl,
    contextTokens: route.contextTokens,
  });
}

/** `localagents proxy`: the shim alone for an interactive `claude`; prints the env to export, serves until Ctrl-C. */
export const runProxy: CommandRun = async (context) => {
  const values = parseProxyArgs(context.args);
  const endpoint = values.endpoint;
  const baseUrl = values['base-url'];
  if ((endpoint === undefined) === (baseUrl === undefined)) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      'localagents proxy: give exactly one of --endpoint NAME and --base-url URL',
      {
        hint: 'for example: localagents proxy --base-url http://127.0.0.1:8080',
      },
    );
  }
  const port = integerFlag('proxy', 'port', values.port, 0);
  const keepaliveS = integerFlag('proxy', 'keepalive-s', values['keepalive-s'], 15);
  const route =
    endpoint !== undefined
      ? await routeForEndpoint(context, values, endpoint)
      : await routeForUrl(context, values, baseUrl ?? '');
  const logDir = values['log-dir'] ?? join(resolveStateDir(context.env), 'proxy');
  const diagnostics = createDiagnostics();
  const shim = await createShim({ host: values.host ?? '127.0.0.1', port, diagnostics });
  try {
    const added = shim.addRoute({
      ...route,
      logDir,
      dumpFullRequests: values['dump-requests'] === true || dumpRequestsFromEnv(context.env),
      keepaliveMs: keepaliveS * 1000,
    });
    // One write: a script (or `eval`) that reads up to ANTHROPIC_BASE_URL gets every line with it.
    context.stdout.write(
      proxyEnvironment(added.baseUrl, route)
        .map(([name, value]) => `${name}=${shellQuote(value)}\n`)
        .join(''),
    );
    context.stderr.write(
      `localagents proxy: ${route.servedId} on ${redactUrl(route.backendUrl)} (${route.backend}${route.contextTokens ? `, ${route.contextTokens}-token window` : ''}); ` +
        `requests logged to ${join(logDir, 'requests.jsonl')}. Export the lines above where you run claude; Ctrl-C stops.\n`,
    );
    await waitForAbort(context.signal);
    await added.close();
  } finally {
    await shim.close();
  }
  return 0;
};
