import type { BackendKind } from '../kinds.js';
import { redactUrl } from '../redact.js';
import type { EndpointConfig, RegistryConfig } from './config-types.js';
import {
  LmStudioV0Schema,
  LmStudioV1Schema,
  OllamaPsSchema,
  OllamaShowSchema,
  OllamaTagsSchema,
  VersionSchema,
  type OllamaShow,
} from './backend-responses.js';
import { httpExchange, probeGet, type HttpAnswer } from './probe-http.js';
import { readLmStudioV0, readLmStudioV1 } from './probe-lmstudio.js';
import { readOllama, unloadedNames } from './probe-ollama.js';
import {
  contextWindows,
  detectBackend,
  errorMessage,
  failureSentence,
  isLoading,
  readJson,
  readMetrics,
  readModels,
  readProps,
  readSlots,
  servedIds,
  slotReport,
  vllmLoad,
  type InstalledModel,
  type LoadedModels,
  type SlotReport,
} from './probe-read.js';

export type ProbeStatus =
  'ok' | 'refused' | 'unreachable' | 'timeout' | 'loading' | 'unauthorized' | 'error';

export interface EndpointProbe {
  name: string;
  base_url: string;
  /** As configured, or as detected when configured as `other`. */
  backend: BackendKind;
  host?: string;
  up: boolean;
  status: ProbeStatus;
  /** A plain sentence saying what is wrong and what to do; absent when status is ok. */
  error?: string;
  models: string[];
  context: Record<string, number>;
  slots?: SlotReport;
  vllm?: { running: number; waiting: number; kvCacheUsage?: number };
  metrics: boolean;
  /** Ollama and LM Studio: models the server has but has not loaded (they are not running: nothing loads them). */
  installed?: InstalledModel[];
  /**
   * Parallel requests the endpoint takes: what the server reports (LM Studio's `parallel`), capped by models.yaml's
   * `max_concurrent`; for a server that tells nothing (Ollama), `max_concurrent`, else 1.
   */
  capacity?: { total: number; source: 'backend' | 'config' | 'default' };
  /** llama.cpp: true once the traffic proved a unified KV cache (Registry.noteUnifiedKv); absent otherwise. */
  kvUnified?: true;
  /** Round trip of GET /v1/models (or of the failed attempt). */
  latency_ms: number;
  /** What the server said that could not be used, named (a window no window can be). */
  warnings?: string[];
  /** Non-enumerable, so JSON.stringify and log lines never carry it. */
  apiKey?: string;
}

export interface ProbeOptions {
  timeoutMs: number;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** The endpoint answered an earlier probe: a vLLM refusing connections now is probably loading. */
  answeredBefore?: boolean;
}

/** What each backend is asked; an undetected one is asked enough to tell all four apart. */
const PATHS: Record<BackendKind, string[]> = {
  'llama.cpp': ['/v1/models', '/props', '/slots', '/metrics'],
  vllm: ['/v1/models', '/metrics'],
  ollama: ['/api/version', '/api/tags', '/api/ps'],
  lmstudio: ['/api/v1/models', '/api/v0/models'],
  other: [
    '/v1/models',
    '/props',
    '/slots',
    '/metrics',
    '/version',
    '/api/version',
    '/api/ps',
    '/api/v1/models',
  ],
};
/** The request whose round trip is the endpoint's latency and whose failure says the endpoint is down. */
const LEAD_PATH: Record<BackendKind, string> = {
  'llama.cpp': '/v1/models',
  vllm: '/v1/models',
  ollama: '/api/version',
  lmstudio: '/api/v1/models',
  other: '/v1/models',
};
/** Unloaded models asked about on each probe (one POST /api/show each): enough for any real menu. */
const MAX_SHOWS = 16;

function hostOf(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return baseUrl;
  }
}

function unauthorizedSentence(endpoint: EndpointConfig, path: string, keySet: boolean): string {
  const variable = endpoint.api_key_env;
  if (variable === undefined) {
    return `the server wants an API key (401 on GET ${path}): add api_key_env: <VARIABLE> to endpoint ${endpoint.name} in models.yaml and export the key in that variable`;
  }
  return keySet
    ? `the server rejected the API key in ${variable} (401 on GET ${path}): check the key`
    : `the server wants an API key (401 on GET ${path}) but ${variable} is not set in this environment: export ${variable}=<key>`;
}

/** One probe's requests: the endpoint, its key header and the shared deadline. */
interface ProbeContext {
  endpoint: EndpointConfig;
  options: ProbeOptions;
  headers: Record<string, string>;
  signal: AbortSignal;
  apiKey: string | undefined;
}

async function fetchAll(context: ProbeContext, paths: string[]): Promise<Map<string, HttpAnswer>> {
  const { endpoint, headers, signal } = context;
  return new Map(
    await Promise.all(
      paths.map(
        async (path) => [path, await probeGet(endpoint.base_url, path, headers, signal)] as const,
      ),
    ),
  );
}

/** Every request shares one deadline; whatever has not answered by then is left out. */
export async function probeEndpoint(
  endpoint: EndpointConfig,
  options: ProbeOptions,
): Promise<EndpointProbe> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  const apiKey = endpoint.api_key_env ? options.env[endpoint.api_key_env] || undefined : undefined;
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const context: ProbeContext = { endpoint, options, headers, signal, apiKey };
  const answers = await fetchAll(context, PATHS[endpoint.backend]);
  let backend = endpoint.backend;
  if (backend === 'other') {
    // Ollama and LM Studio also answer /v1/models (with every installed model): their own routes decide first.
    if (looksLikeOllama(answers)) backend = 'ollama';
    else if (readJson(answers.get('/api/v1/models'), LmStudioV1Schema)) backend = 'lmstudio';
  }
  if (backend === 'ollama' || backend === 'lmstudio') {
    const missing = PATHS[backend].filter((path) => !answers.has(path));
    for (const [path, answer] of await fetchAll(context, missing)) answers.set(path, answer);
  }
  const lead = answers.get(LEAD_PATH[backend]);
  const result = emptyResult(endpoint, apiKey, lead);
  result.backend = backend;
  if (!lead?.ok) return failUnreachable(result, endpoint, options, lead);
  if (backend === 'ollama') return probeOllama(context, result, answers);
  if (backend === 'lmstudio') return probeLmStudio(context, result, answers);
  return probeLlamaOrVllm(context, result, answers, lead);
}

function emptyResult(
  endpoint: EndpointConfig,
  apiKey: string | undefined,
  lead: HttpAnswer | undefined,
): EndpointProbe {
  const result: EndpointProbe = {
    name: endpoint.name,
    // Shown in list_models and models --json: never a password from the URL.
    base_url: redactUrl(endpoint.base_url),
    backend: endpoint.backend,
    up: false,
    status: 'error',
    models: [],
    context: {},
    metrics: false,
    latency_ms: lead?.ms ?? 0,
  };
  if (endpoint.host !== undefined) result.host = endpoint.host;
  Object.defineProperty(result, 'apiKey', { value: apiKey, enumerable: false, writable: true });
  return result;
}

function fail(result: EndpointProbe, status: ProbeStatus, error: string): EndpointProbe {
  return Object.assign(result, { status, error });
}

function failUnreachable(
  result: EndpointProbe,
  endpoint: EndpointConfig,
  options: ProbeOptions,
  lead: HttpAnswer | undefined,
): EndpointProbe {
  const failure = lead && !lead.ok ? lead.failure : 'error';
  const code = lead && !lead.ok ? lead.code : undefined;
  let sentence = failureSentence(failure, code, hostOf(endpoint.base_url), options.timeoutMs);
  if (failure === 'refused' && endpoint.backend === 'vllm') {
    sentence = options.answeredBefore
      ? `connection refused at ${hostOf(endpoint.base_url)}, which answered before: vLLM is possibly loading a model (it refuses connections while loading), or it was stopped`
      : `${sentence}; vLLM also refuses connections until its model has loaded, so it may still be starting`;
  }
  return fail(result, failure, sentence);
}

/** Ollama answers /api/version and /api/ps (ollama-lmstudio.md §3 "Detection"); vLLM's /version has no /api. */
function looksLikeOllama(answers: Map<string, HttpAnswer>): boolean {
  return (
    readJson(answers.get('/api/version'), VersionSchema) !== undefined &&
    readJson(answers.get('/api/ps'), OllamaPsSchema) !== undefined
  );
}

/** The capacity rule: what the server reports, capped by the user's max_concurrent; else that, else 1. */
function capacityOf(
  reported: number | undefined,
  configured: number | undefined,
): NonNullable<EndpointProbe['capacity']> {
  if (reported !== undefined && (configured === undefined || reported <= configured))
    return { total: reported, source: 'backend' };
  if (configured !== undefined) return { total: configured, source: 'config' };
  return { total: 1, source: 'default' };
}

function withLoaded(
  result: EndpointProbe,
  reading: LoadedModels,
  endpoint: EndpointConfig,
): EndpointProbe {
  result.models = reading.models;
  result.context = reading.context;
  result.installed = reading.installed;
  result.capacity = capacityOf(reading.parallel, endpoint.max_concurrent);
  if (reading.problems.length > 0) result.warnings = reading.problems;
  return Object.assign(result, { up: true, status: 'ok' as const });
}

async function probeOllama(
  context: ProbeContext,
  result: EndpointProbe,
  answers: Map<string, HttpAnswer>,
): Promise<EndpointProbe> {
  const ps = readJson(answers.get('/api/ps'), OllamaPsSchema);
  if (!ps) {
    const status = answers.get('/api/ps');
    return fail(
      result,
      'error',
      `GET /api/ps did not answer like Ollama${status?.ok ? ` (HTTP ${status.status})` : ''}: is this an Ollama server (v0.9.7 or later)?`,
    );
  }
  const tags = readJson(answers.get('/api/tags'), OllamaTagsSchema);
  // What an unloaded model will get when it loads: a Modelfile num_ctx, else the trained length caps the default.
  const shows = new Map<string, OllamaShow>();
  await Promise.all(
    unloadedNames(ps, tags)
      .slice(0, MAX_SHOWS)
      .map(async (name) => {
        const answer = await httpExchange({
          method: 'POST',
          url: `${context.endpoint.base_url}/api/show`,
          headers: { ...context.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ model: name }),
          signal: context.signal,
        });
        const show = readJson(answer, OllamaShowSchema);
        if (show) shows.set(name, show);
      }),
  );
  return withLoaded(result, readOllama(ps, tags, shows), context.endpoint);
}

function probeLmStudio(
  context: ProbeContext,
  result: EndpointProbe,
  answers: Map<string, HttpAnswer>,
): EndpointProbe {
  // With "Require Authentication" every route wants the key, x-api-key or Bearer (ollama-lmstudio.md §6 "Auth").
  const locked = ['/api/v1/models', '/api/v0/models'].find((path) => {
    const answer = answers.get(path);
    return answer?.ok === true && answer.status === 401;
  });
  if (locked)
    return fail(
      result,
      'unauthorized',
      unauthorizedSentence(context.endpoint, locked, context.apiKey !== undefined),
    );
  const v1 = readJson(answers.get('/api/v1/models'), LmStudioV1Schema);
  if (v1) return withLoaded(result, readLmStudioV1(v1), context.endpoint);
  const v0 = readJson(answers.get('/api/v0/models'), LmStudioV0Schema);
  if (v0) return withLoaded(result, readLmStudioV0(v0), context.endpoint);
  return fail(
    result,
    'error',
    'neither GET /api/v1/models nor GET /api/v0/models answered like LM Studio: is this LM Studio 0.3.6 or later, with its server started?',
  );
}

function probeLlamaOrVllm(
  context: ProbeContext,
  result: EndpointProbe,
  answers: Map<string, HttpAnswer>,
  modelsAnswer: Extract<HttpAnswer, { ok: true }>,
): EndpointProbe {
  const { endpoint, apiKey } = context;
  if (isLoading(modelsAnswer)) {
    result.backend = endpoint.backend === 'other' ? 'llama.cpp' : endpoint.backend;
    return fail(
      result,
      'loading',
      'llama.cpp is still loading the model (503 Loading model): try again in a moment',
    );
  }
  if (modelsAnswer.status === 401) {
    return fail(
      result,
      'unauthorized',
      unauthorizedSentence(endpoint, '/v1/models', apiKey !== undefined),
    );
  }
  const models = readModels(modelsAnswer);
  if (!models) {
    const detail = errorMessage(modelsAnswer);
    return fail(
      result,
      'error',
      modelsAnswer.status === 200
        ? 'GET /v1/models did not answer with an OpenAI-style model list: is this a llama-server, vLLM, Ollama or LM Studio?'
        : `GET /v1/models answered HTTP ${modelsAnswer.status}${detail ? ` (${detail})` : ''}`,
    );
  }
  result.backend = detectBackend(endpoint.backend, models, modelsAnswer, answers.get('/version'));
  const props = readProps(answers.get('/props'));
  const slots = readSlots(answers.get('/slots'));
  const metrics = readMetrics(answers.get('/metrics'));
  result.models = servedIds(models);
  const windows = contextWindows(models, props, slots);
  result.context = windows.windows;
  if (windows.problems.length > 0) result.warnings = windows.problems;
  result.metrics = metrics !== undefined;
  if (result.backend !== 'vllm') {
    const report = slotReport(slots, props, metrics);
    if (report) result.slots = report;
  }
  const load = result.backend === 'vllm' ? vllmLoad(metrics) : undefined;
  if (load) result.vllm = load;
  // llama.cpp leaves /v1/models public but guards /props, /slots, /metrics (backends.md §2.2).
  const guarded = ['/props', '/slots', '/metrics'].find((path) => {
    const answer = answers.get(path);
    return answer?.ok === true && answer.status === 401;
  });
  if (guarded)
    return fail(
      result,
      'unauthorized',
      unauthorizedSentence(endpoint, guarded, apiKey !== undefined),
    );
  return Object.assign(result, { up: true, status: 'ok' as const });
}

/** Every endpoint in parallel, in config order, each within defaults.probe_timeout_s. */
export async function probeAll(
  config: RegistryConfig,
  env: NodeJS.ProcessEnv,
  options: { signal?: AbortSignal; answeredBefore?: (endpoint: EndpointConfig) => boolean } = {},
): Promise<EndpointProbe[]> {
  const timeoutMs = Math.round(config.defaults.probe_timeout_s * 1000);
  return Promise.all(
    config.endpoints.map((endpoint) =>
      probeEndpoint(endpoint, {
        timeoutMs,
        env,
        ...(options.signal ? { signal: options.signal } : {}),
        answeredBefore: options.answeredBefore?.(endpoint) ?? false,
      }),
    ),
  );
}
