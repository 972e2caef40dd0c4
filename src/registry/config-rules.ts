import { dirname } from 'node:path';
import { backendKindOf } from '../kinds.js';
import { redactUrl } from '../redact.js';
import { builtinDefaults } from './config-defaults.js';
import { formatPath } from './config-messages.js';
import type { ParsedLayer } from './config-parse.js';
import type { EndpointLayer, ModelLayer } from './config-schema.js';
import type {
  AgentEntry,
  ConfigIssue,
  Defaults,
  EndpointConfig,
  ModelEntry,
  RegistryConfig,
} from './config-types.js';

interface Sourced<T> {
  value: T;
  from: ParsedLayer;
}

export interface MergeResult {
  config: RegistryConfig;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

function issueAt(
  from: ParsedLayer,
  path: PropertyKey[],
  message: string,
  fix?: string,
): ConfigIssue {
  const issue: ConfigIssue = {
    file: from.file,
    line: from.lineOf(path),
    path: formatPath(path),
    message,
  };
  return fix ? { ...issue, fix } : issue;
}

/** Drops trailing slashes and an OpenAI-style `/v1`: every path we probe is below the server root. */
function normaliseEndpoint(
  name: string,
  { value, from }: Sourced<EndpointLayer>,
  warnings: ConfigIssue[],
): EndpointConfig {
  let baseUrl = value.base_url.replace(/\/+$/, '');
  if (/\/v1$/.test(baseUrl)) {
    baseUrl = baseUrl.slice(0, -3);
    warnings.push(
      issueAt(
        from,
        ['endpoints', name, 'base_url'],
        `the /v1 suffix is ignored; using ${redactUrl(baseUrl)}`,
        'write the server root, e.g. http://127.0.0.1:8080',
      ),
    );
  }
  const endpoint: EndpointConfig = {
    name,
    base_url: baseUrl,
    backend: value.backend === undefined ? 'other' : (backendKindOf(value.backend) ?? 'other'),
    env: value.env ?? {},
  };
  if (value.host !== undefined) endpoint.host = value.host;
  if (value.notes !== undefined) endpoint.notes = value.notes;
  if (value.api_key_env !== undefined) endpoint.api_key_env = value.api_key_env;
  if (value.max_concurrent !== undefined) endpoint.max_concurrent = value.max_concurrent;
  return endpoint;
}

function normaliseModel(name: string, value: ModelLayer): ModelEntry {
  const entry: ModelEntry = { name };
  for (const key of ['notes', 'host', 'served_name', 'endpoint', 'bring_up'] as const) {
    const field = value[key];
    if (field !== undefined) entry[key] = field;
  }
  if (value.context !== undefined) entry.context = value.context;
  if (value.tags !== undefined) entry.tags = value.tags;
  if (value.env !== undefined) entry.env = value.env;
  if (value.max_turns !== undefined) entry.max_turns = value.max_turns;
  if (value.permission_mode !== undefined) entry.permission_mode = value.permission_mode;
  if (value.verify !== undefined) entry.verify = value.verify;
  return entry;
}

/** The keys of a parsed entry that are set (zod keeps absent optional keys out already; this says so to tsc). */
function definedOnly<T extends Record<string, unknown>>(
  value: T,
): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}

/** Layers lowest first; endpoints and models replace entry by entry, defaults key by key. */
export function mergeLayers(
  layers: ParsedLayer[],
  examplePath: string,
  userFile: string,
): MergeResult {
  const defaults: Defaults = builtinDefaults();
  const endpoints = new Map<string, Sourced<EndpointLayer>>();
  const models = new Map<string, Sourced<ModelLayer>>();
  const agents = new Map<string, AgentEntry>();
  for (const from of layers) {
    const layer = from.layer ?? {};
    for (const [key, value] of Object.entries(layer.defaults ?? {})) {
      if (value !== undefined) Object.assign(defaults, { [key]: value });
    }
    for (const [name, value] of Object.entries(layer.endpoints ?? {}))
      endpoints.set(name, { value, from });
    for (const [name, value] of Object.entries(layer.models ?? {}))
      models.set(name, { value, from });
    for (const [name, value] of Object.entries(layer.agents ?? {}))
      agents.set(name, { name, ...definedOnly(value) });
  }
  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const endpointList = [...endpoints].map(([name, sourced]) =>
    normaliseEndpoint(name, sourced, warnings),
  );
  const modelList = [...models].map(([name, { value }]) => normaliseModel(name, value));
  const files = layers.map((layer) => layer.file);

  if (endpointList.length === 0) {
    errors.push({
      file: files.length > 0 ? files.join(', ') : userFile,
      path: 'endpoints',
      message:
        files.length > 0
          ? 'no endpoint is defined in any layer'
          : 'no models.yaml found (nothing defines an endpoint)',
      fix: `copy the example and point base_url at your llama-server or vLLM: mkdir -p "${dirname(userFile)}" && cp "${examplePath}" "${userFile}"`,
    });
  }
  // A menu endpoint is a preference (tried first, the others still searched): one that does not exist
  // leaves the search as wide as without it, so it is worth a warning, not a broken configuration.
  for (const [name, { value, from }] of models) {
    if (value.endpoint !== undefined && !endpoints.has(value.endpoint)) {
      warnings.push(
        issueAt(
          from,
          ['models', name, 'endpoint'],
          `no endpoint is named "${value.endpoint}"; every endpoint is searched`,
          endpoints.size > 0
            ? `use one of: ${[...endpoints.keys()].join(', ')}`
            : 'define it under endpoints first',
        ),
      );
    }
  }
  const seen = new Map<string, string>();
  for (const endpoint of endpointList) {
    const earlier = seen.get(endpoint.base_url);
    const sourced = endpoints.get(endpoint.name);
    if (earlier && sourced) {
      warnings.push(
        issueAt(
          sourced.from,
          ['endpoints', endpoint.name, 'base_url'],
          `same base_url as endpoint ${earlier}`,
        ),
      );
    }
    seen.set(endpoint.base_url, earlier ?? endpoint.name);
  }
  return {
    config: {
      defaults,
      endpoints: endpointList,
      models: modelList,
      agents: [...agents.values()],
      files,
    },
    errors,
    warnings,
  };
}
