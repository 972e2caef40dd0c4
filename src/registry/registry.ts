import type { Diagnostics } from '../diagnostics.js';
import type { ContextSource } from '../kinds.js';
import { builtinDefaults, dumpRequestsFromEnv } from './config-defaults.js';
import { formatConfigIssue } from './config-messages.js';
import { createConfigCache, loadRegistryConfig } from './config.js';
import type {
  ConfigPaths,
  ConfigResult,
  Defaults,
  EndpointConfig,
  RegistryConfig,
} from './config-types.js';
import { probeAll, type EndpointProbe } from './probe.js';
import {
  assessHit,
  chooseHit,
  resolveModel,
  type Resolution,
  type ResolveRequest,
} from './resolve.js';
import { registerEndpoint, registerModel, type SidecarResult } from './sidecar.js';

/**
 * One menu entry now. `available`, `endpoint`, `served_model` and `context` are the Python original's names;
 * `running` and `served_as` say the same under the names this tool started with.
 */
export interface MenuStatus {
  name: string;
  notes?: string;
  host?: string;
  tags?: string[];
  available: boolean;
  running: boolean;
  endpoint?: string;
  served_model?: string;
  served_as?: string;
  /** The window a job would get (the menu's rules applied), or the menu's own while it is not running. */
  context?: number;
  context_source?: ContextSource;
  /**
   * Ollama and LM Studio: false when the server has the model installed but not loaded (`available` then says
   * whether a job could still start on it: only when the window it will load with is known and large enough).
   */
  loaded?: boolean;
  /** What the window will be once an unloaded model loads, or what decides it. */
  context_note?: string;
  /** Why a job would not start on it although a server has it (a window too small, or unknown until loaded). */
  reason?: string;
  /** Relayed only while it is not running. */
  bring_up?: string;
  /** The name fits several served ids: which ones (nothing is picked). */
  candidates?: { endpoint: string; served_model: string }[];
}

export interface RegistrySnapshot {
  config: ConfigResult;
  endpoints: EndpointProbe[];
  models: MenuStatus[];
}

export interface Registry {
  /** Config plus a fresh probe of every endpoint plus which menu entries are running where. */
  snapshot(signal?: AbortSignal): Promise<RegistrySnapshot>;
  resolve(request: ResolveRequest, signal?: AbortSignal): Promise<Resolution>;
  /** The merged defaults; the built-in ones while models.yaml is invalid. */
  defaults(): Promise<Defaults>;
  /** Every variable models.yaml names as a backend key (`api_key_env`): kept out of delegates' environments. */
  keyVariables(): Promise<string[]>;
  config(): Promise<ConfigResult>;
  /** Input is validated with zod (RegisterEndpointInput); writes models.local.yaml only. */
  registerEndpoint(input: unknown): Promise<SidecarResult>;
  /** A fresh probe of one configured endpoint (undefined: no such endpoint, or models.yaml is invalid). */
  probeEndpoint(name: string, signal?: AbortSignal): Promise<EndpointProbe | undefined>;
  registerModel(input: unknown): Promise<SidecarResult>;
  /**
   * Evidence from the traffic (the shim): the llama.cpp server at base_url ran out of shared KV cells
   * (500 `Context size has been exceeded.`), which only a unified cache does. Probes of it say
   * `kvUnified: true` from then on, in this process; nothing a probe reads can tell it (docs/registry.md).
   */
  noteUnifiedKv(baseUrl: string): void;
}

export interface RegistryOptions {
  paths: ConfigPaths;
  env: NodeJS.ProcessEnv;
  diagnostics?: Diagnostics;
}

/** Which menu entries run where, by the same matching rules resolve() uses. */
export function menuStatus(config: RegistryConfig, probes: EndpointProbe[]): MenuStatus[] {
  return config.models.map((entry) => {
    const status: MenuStatus = { name: entry.name, available: false, running: false };
    if (entry.notes !== undefined) status.notes = entry.notes;
    if (entry.host !== undefined) status.host = entry.host;
    if (entry.tags !== undefined) status.tags = entry.tags;
    const choice = chooseHit(probes, entry.name, entry);
    if (choice.kind !== 'hit') {
      if (entry.context !== undefined) Object.assign(status, { context: entry.context });
      if (entry.bring_up !== undefined) status.bring_up = entry.bring_up;
      if (choice.kind === 'ambiguous') status.candidates = choice.candidates;
      return status;
    }
    const { hit } = choice;
    const { context, refusal } = assessHit(hit, entry);
    Object.assign(status, {
      available: refusal === undefined,
      running: hit.installed === undefined,
      endpoint: hit.probe.name,
      served_model: hit.servedId,
      served_as: hit.servedId,
    });
    if (hit.installed) {
      status.loaded = false;
      status.context_note = hit.installed.note;
    } else if (hit.probe.installed !== undefined) status.loaded = true;
    if (context.tokens !== undefined)
      Object.assign(status, { context: context.tokens, context_source: context.source });
    if (refusal !== undefined) {
      status.reason = refusal;
      if (entry.bring_up !== undefined) status.bring_up = entry.bring_up;
    }
    return status;
  });
}

export function createRegistry(options: RegistryOptions): Registry {
  const cache = createConfigCache();
  // Endpoints that answered a probe in this process: a vLLM refusing connections later is probably loading.
  const answered = new Set<string>();
  const unifiedKv = new Set<string>();
  let lastReported = '';

  const config = async (): Promise<ConfigResult> => {
    const result = await loadRegistryConfig(options.paths, cache);
    const report = result.ok ? '' : result.issues.map(formatConfigIssue).join('\n');
    if (report !== lastReported && report !== '')
      options.diagnostics?.warn(`models.yaml is invalid:\n${report}`);
    lastReported = report;
    return result;
  };

  const probe = async (result: ConfigResult, signal?: AbortSignal): Promise<EndpointProbe[]> => {
    if (!result.ok) return [];
    const probes = await probeAll(result.config, options.env, {
      ...(signal ? { signal } : {}),
      answeredBefore: (endpoint: EndpointConfig) => answered.has(endpoint.base_url),
    });
    for (const item of probes) {
      // Keyed by the configured URL: the probe's own base_url is redacted for display.
      const baseUrl =
        result.config.endpoints.find((endpoint) => endpoint.name === item.name)?.base_url ??
        item.base_url;
      if (item.up || item.status === 'loading' || item.status === 'unauthorized')
        answered.add(baseUrl);
      if (unifiedKv.has(baseUrl) && item.backend === 'llama.cpp') item.kvUnified = true;
      options.diagnostics?.debug(`probe ${item.name}: ${item.status}`, { ms: item.latency_ms });
    }
    return probes;
  };

  return {
    config,
    async snapshot(signal) {
      const result = await config();
      const endpoints = await probe(result, signal);
      return {
        config: result,
        endpoints,
        models: result.ok ? menuStatus(result.config, endpoints) : [],
      };
    },
    async resolve(request, signal) {
      const result = await config();
      return resolveModel(result, await probe(result, signal), request);
    },
    async keyVariables() {
      const result = await config();
      if (!result.ok) return [];
      return [
        ...new Set(
          result.config.endpoints.flatMap((endpoint) =>
            endpoint.api_key_env === undefined ? [] : [endpoint.api_key_env],
          ),
        ),
      ];
    },
    async defaults() {
      const result = await config();
      const defaults = result.ok ? result.config.defaults : builtinDefaults();
      return dumpRequestsFromEnv(options.env) ? { ...defaults, dump_requests: true } : defaults;
    },
    registerEndpoint: (input) => registerEndpoint(options.paths, input),
    async probeEndpoint(name, signal) {
      const result = await config();
      const endpoint = result.ok
        ? result.config.endpoints.find((candidate) => candidate.name === name)
        : undefined;
      if (!result.ok || !endpoint) return undefined;
      const [probed] = await probe(
        { ...result, config: { ...result.config, endpoints: [endpoint] } },
        signal,
      );
      return probed;
    },
    registerModel: (input) => registerModel(options.paths, input),
    noteUnifiedKv: (baseUrl) => void unifiedKv.add(baseUrl.replace(/\/+$/, '')),
  };
}
