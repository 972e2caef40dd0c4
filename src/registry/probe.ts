import type { BackendKind } from '../kinds.js';
import { redactUrl } from '../redact.js';
import type { EndpointConfig, RegistryConfig } from './config-types.js';
import { probeGet, type HttpAnswer } from './probe-http.js';
import {
  contextWindows,
  detectBackend,
  errorMessage,
  failureSentence,
  isLoading,
  readMetrics,
  readModels,
  readProps,
  readSlots,
  servedIds,
  slotReport,
  vllmLoad,
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

const PATHS: Record<BackendKind, string[]> = {
  'llama.cpp': ['/v1/models', '/props', '/slots', '/metrics'],
  vllm: ['/v1/models', '/metrics'],
  other: ['/v1/models', '/props', '/slots', '/metrics', '/version'],
};

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

/** Every request shares one deadline; whatever has not answered by then is left out. */
export async function probeEndpoint(
  endpoint: EndpointConfig,
  options: ProbeOptions,
): Promise<EndpointProbe> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  const apiKey = endpoint.api_key_env ? options.env[endpoint.api_key_env] || undefined : undefined;
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const paths = PATHS[endpoint.backend];
  const answers = new Map<string, HttpAnswer>(
    await Promise.all(
      paths.map(
        async (path) => [path, await probeGet(endpoint.base_url, path, headers, signal)] as const,
      ),
    ),
  );
  const modelsAnswer = answers.get('/v1/models');
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
    latency_ms: modelsAnswer?.ms ?? 0,
  };
  if (endpoint.host !== undefined) result.host = endpoint.host;
  Object.defineProperty(result, 'apiKey', { value: apiKey, enumerable: false, writable: true });
  const fail = (status: ProbeStatus, error: string): EndpointProbe =>
    Object.assign(result, { status, error });

  if (!modelsAnswer?.ok) {
    const failure = modelsAnswer?.failure ?? 'error';
    let sentence = failureSentence(
      failure,
      modelsAnswer?.code,
      hostOf(endpoint.base_url),
      options.timeoutMs,
    );
    if (failure === 'refused' && endpoint.backend === 'vllm') {
      sentence = options.answeredBefore
        ? `connection refused at ${hostOf(endpoint.base_url)}, which answered before: vLLM is possibly loading a model (it refuses connections while loading), or it was stopped`
        : `${sentence}; vLLM also refuses connections until its model has loaded, so it may still be starting`;
    }
    return fail(failure, sentence);
  }
  if (isLoading(modelsAnswer)) {
    result.backend = endpoint.backend === 'other' ? 'llama.cpp' : endpoint.backend;
    return fail(
      'loading',
      'llama.cpp is still loading the model (503 Loading model): try again in a moment',
    );
  }
  if (modelsAnswer.status === 401) {
    return fail('unauthorized', unauthorizedSentence(endpoint, '/v1/models', apiKey !== undefined));
  }
  const models = readModels(modelsAnswer);
  if (!models) {
    const detail = errorMessage(modelsAnswer);
    return fail(
      'error',
      modelsAnswer.status === 200
        ? 'GET /v1/models did not answer with an OpenAI-style model list: is this a llama-server or vLLM?'
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
    return fail('unauthorized', unauthorizedSentence(endpoint, guarded, apiKey !== undefined));
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
