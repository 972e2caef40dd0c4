import {
  ErrorBodySchema,
  ModelListSchema,
  PropsSchema,
  SlotsSchema,
  VersionSchema,
  type ModelCard,
  type ModelList,
  type Props,
  type Slots,
} from './backend-responses.js';
import type { BackendKind } from '../kinds.js';
import type { FailureKind } from '../connect-errors.js';
import { ANSWER_TOO_LARGE, parseJson, type HttpAnswer } from './probe-http.js';
import { maxOf, parsePrometheusText, sumOf, type Exposition } from './prometheus.js';

/** Pure readers of probe answers: what each backend's JSON and metrics say. */

export function readJson<T>(
  answer: HttpAnswer | undefined,
  schema: { safeParse: (v: unknown) => { success: true; data: T } | { success: false } },
): T | undefined {
  if (!answer?.ok || answer.status !== 200) return undefined;
  const parsed = schema.safeParse(parseJson(answer.body));
  return parsed.success ? parsed.data : undefined;
}

export const readModels = (a: HttpAnswer | undefined): ModelList | undefined =>
  readJson(a, ModelListSchema);
export const readProps = (a: HttpAnswer | undefined): Props | undefined => readJson(a, PropsSchema);
export const readSlots = (a: HttpAnswer | undefined): Slots | undefined => readJson(a, SlotsSchema);

export function readMetrics(answer: HttpAnswer | undefined): Exposition | undefined {
  if (!answer?.ok || answer.status !== 200) return undefined;
  const exposition = parsePrometheusText(answer.body);
  return exposition.samples.length > 0 ? exposition : undefined;
}

/** The message inside either server's error envelope, if any. */
export function errorMessage(answer: HttpAnswer): string | undefined {
  if (!answer.ok) return undefined;
  const parsed = ErrorBodySchema.safeParse(parseJson(answer.body));
  if (!parsed.success) return undefined;
  const error = parsed.data.error;
  return typeof error === 'string' ? error : error.message;
}

/** llama.cpp answers every route with 503 "Loading model" until the weights are in (backends.md §2.1). */
export function isLoading(answer: HttpAnswer | undefined): boolean {
  return (
    answer?.ok === true &&
    answer.status === 503 &&
    /loading model/i.test(errorMessage(answer) ?? '')
  );
}

// backends.md §3 "Telling the two apart".
export function detectBackend(
  configured: BackendKind,
  models: ModelList | undefined,
  modelsAnswer: HttpAnswer | undefined,
  versionAnswer: HttpAnswer | undefined,
): BackendKind {
  if (configured !== 'other') return configured;
  const cards = models?.data ?? [];
  if (cards.some((card) => card.owned_by === 'vllm' || card.max_model_len !== undefined))
    return 'vllm';
  if (
    models?.models !== undefined ||
    cards.some((card) => card.owned_by === 'llamacpp' || card.meta)
  ) {
    return 'llama.cpp';
  }
  if (modelsAnswer?.ok && /llama\.cpp/i.test(modelsAnswer.headers.get('server') ?? ''))
    return 'llama.cpp';
  if (readJson(versionAnswer, VersionSchema)) return 'vllm';
  return 'other';
}

/** Router-mode cards carry a status; only loaded or sleeping ones are running. */
function isRunning(card: ModelCard): boolean {
  const state = card.status?.value;
  return state === undefined || state === 'loaded' || state === 'sleeping';
}

export function servedIds(models: ModelList): string[] {
  return models.data.filter(isRunning).map((card) => card.id);
}

/** Larger than any model's window: a value past it is a server bug, not a window. */
const MAX_SANE_WINDOW = 100_000_000;

/**
 * A window field as a number of tokens; undefined when absent or null, and `problems` gets a line naming the
 * field when the value is one no window can be (negative, 0, a fraction, 1e308, a string).
 */
export function windowOf(value: unknown, field: string, problems: string[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= MAX_SANE_WINDOW)
    return value;
  problems.push(
    `${field} is ${JSON.stringify(value) ?? typeof value}, which no window can be: the window is unknown (set context: N in models.yaml)`,
  );
  return undefined;
}

export interface ContextWindows {
  /** Per-request window per served id. */
  windows: Record<string, number>;
  /** Fields whose value could not be a window, named: they count as unknown, never as a window of 0. */
  problems: string[];
}

/**
 * Per-request window per served id. llama.cpp: meta.n_ctx, else /props, else /slots[0];
 * vLLM: max_model_len, LoRA cards inheriting their base card's. Never n_ctx_train.
 */
export function contextWindows(
  models: ModelList,
  props: Props | undefined,
  slots: Slots | undefined,
): ContextWindows {
  const problems: string[] = [];
  const cards = models.data.filter(isRunning);
  // /props reports 0 while no model is loaded: that one zero means "not known here", not a broken value.
  const propsWindow = props?.default_generation_settings?.n_ctx;
  const fallback = () =>
    (propsWindow === 0
      ? undefined
      : windowOf(propsWindow, '/props default_generation_settings.n_ctx', problems)) ??
    windowOf(slots?.[0]?.n_ctx, '/slots n_ctx', problems);
  const maxModelLen = (card: ModelCard): number | undefined =>
    windowOf(card.max_model_len, `${card.id} max_model_len`, problems);
  const baseWindow = (card: ModelCard): number | undefined => {
    const parent = models.data.find(
      (other) =>
        other.id === card.parent || (card.parent && other.root === card.parent && !other.parent),
    );
    const base =
      parent ?? models.data.find((other) => !other.parent && other.max_model_len !== undefined);
    return base ? maxModelLen(base) : undefined;
  };
  const windows: Record<string, number> = {};
  for (const card of cards) {
    const value =
      windowOf(card.meta?.n_ctx, `${card.id} meta.n_ctx`, problems) ??
      maxModelLen(card) ??
      (card.parent ? baseWindow(card) : undefined) ??
      fallback();
    if (value !== undefined) windows[card.id] = value;
  }
  return { windows, problems: [...new Set(problems)] };
}

export interface SlotReport {
  total: number;
  busy: number;
  free: number;
  /** Where `busy` came from: /slots, llamacpp:requests_processing, or unknown (reported as 0). */
  source: 'slots' | 'metrics' | 'props';
}

export function slotReport(
  slots: Slots | undefined,
  props: Props | undefined,
  metrics: Exposition | undefined,
): SlotReport | undefined {
  if (slots && slots.length > 0) {
    const busy = slots.filter((slot) => slot.is_processing).length;
    return { total: slots.length, busy, free: slots.length - busy, source: 'slots' };
  }
  const total = props?.total_slots;
  if (total === undefined) return undefined;
  const processing = metrics ? sumOf(metrics, 'llamacpp:requests_processing') : undefined;
  const busy = Math.min(total, Math.max(0, Math.round(processing ?? 0)));
  return {
    total,
    busy,
    free: total - busy,
    source: processing === undefined ? 'props' : 'metrics',
  };
}

export function vllmLoad(
  metrics: Exposition | undefined,
): { running: number; waiting: number; kvCacheUsage?: number } | undefined {
  if (!metrics) return undefined;
  const running = sumOf(metrics, 'vllm:num_requests_running');
  const waiting = sumOf(metrics, 'vllm:num_requests_waiting');
  if (running === undefined && waiting === undefined) return undefined;
  // kv_cache_usage_perc is the V1 name; gpu_cache_usage_perc the deprecated one (backends.md §1.14).
  const kv = maxOf(metrics, 'vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc');
  const load = { running: running ?? 0, waiting: waiting ?? 0 };
  return kv === undefined || Number.isNaN(kv) ? load : { ...load, kvCacheUsage: kv };
}

export function failureSentence(
  failure: FailureKind,
  code: string | undefined,
  where: string,
  timeoutMs: number,
): string {
  switch (failure) {
    case 'refused':
      return `connection refused at ${where}: the host is up but nothing listens on that port (not started yet, or the wrong port)`;
    case 'unreachable':
      return code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? `the host name in ${where} does not resolve (${code}): check the name or the network`
        : `host ${where} is unreachable (${code ?? 'no route'}): the machine is down or not on this network`;
    case 'timeout':
      return `no answer from ${where} within ${timeoutMs / 1000} s (probe_timeout_s): the host may be down or firewalled, or the server is stuck`;
    case 'error':
      if (code === 'ABORTED') return 'the probe was cancelled';
      if (code === ANSWER_TOO_LARGE)
        return `${where} answered more than the probe reads (8 MB): a model list that large is not a llama-server or vLLM answer; check the URL`;
      return `the connection to ${where} failed${code ? ` (${code})` : ''} before an answer arrived`;
  }
}

/** A model the server has but has not loaded: it answers nothing until someone loads it (nothing here does). */
export interface InstalledModel {
  id: string;
  /** LM Studio says when a load is under way. */
  state: 'not_loaded' | 'loading';
  /** The window it will get when it loads, when that can be known (an Ollama Modelfile's num_ctx). */
  context?: number;
  /** The model's trained length: no window can be larger. */
  trained?: number;
  /** One sentence: what its window will be once loaded, or what decides it. */
  note: string;
}

/** What a server that loads models on demand (Ollama, LM Studio) has now: loaded, with windows, and installed. */
export interface LoadedModels {
  models: string[];
  context: Record<string, number>;
  installed: InstalledModel[];
  /** Parallel requests the loaded models take together, when the server tells (LM Studio). */
  parallel?: number;
  problems: string[];
}
