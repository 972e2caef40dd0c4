import type { BackendKind } from '../kinds.js';
import { probeGet } from '../registry/probe-http.js';
import { parsePrometheusText } from '../registry/prometheus.js';
import type { RouteStats } from '../shim/route.js';
import type { BackendFigures } from './job.js';

export type MetricsSnapshot = Map<string, number>;

/** Sums every sample of each metric name (vLLM labels its series by model), via the registry's parser. */
export function parsePrometheus(text: string): MetricsSnapshot {
  const totals = new Map<string, number>();
  for (const sample of parsePrometheusText(text).samples) {
    if (Number.isFinite(sample.value))
      totals.set(sample.name, (totals.get(sample.name) ?? 0) + sample.value);
  }
  return totals;
}

/** llama.cpp counters, then vLLM's token counters over its prefill/decode histogram sums. */
const SPEED_SERIES = [
  {
    prompt: ['llamacpp:prompt_tokens_total', 'llamacpp:prompt_seconds_total'],
    generation: ['llamacpp:tokens_predicted_total', 'llamacpp:tokens_predicted_seconds_total'],
  },
  {
    prompt: ['vllm:prompt_tokens_total', 'vllm:request_prefill_time_seconds_sum'],
    generation: ['vllm:generation_tokens_total', 'vllm:request_decode_time_seconds_sum'],
  },
] as const;

function rate(
  before: MetricsSnapshot,
  after: MetricsSnapshot,
  [tokens, seconds]: readonly [string, string],
): number | null {
  const tokenDelta = (after.get(tokens) ?? NaN) - (before.get(tokens) ?? NaN);
  const secondDelta = (after.get(seconds) ?? NaN) - (before.get(seconds) ?? NaN);
  if (!(tokenDelta > 0) || !(secondDelta > 0)) return null;
  return Math.round((tokenDelta / secondDelta) * 10) / 10;
}

const SPEC_DECODE = {
  drafts: 'vllm:spec_decode_num_drafts_total',
  draftTokens: 'vllm:spec_decode_num_draft_tokens_total',
  accepted: 'vllm:spec_decode_num_accepted_tokens_total',
} as const;

/** vLLM's acceptance over the span (backends.md §1.14); undefined without the counters or without drafts. */
export function specDecodeFromMetrics(
  before: MetricsSnapshot | undefined,
  after: MetricsSnapshot | undefined,
): NonNullable<BackendFigures['spec_decode']> | undefined {
  if (!before || !after || !after.has(SPEC_DECODE.draftTokens)) return undefined;
  const delta = (name: string): number => (after.get(name) ?? NaN) - (before.get(name) ?? 0);
  const drafts = delta(SPEC_DECODE.drafts);
  const draftTokens = delta(SPEC_DECODE.draftTokens);
  const accepted = delta(SPEC_DECODE.accepted);
  if (!(draftTokens > 0) || !(drafts > 0) || !Number.isFinite(accepted)) return undefined;
  const round = (value: number): number => Math.round(value * 1000) / 1000;
  return {
    drafts,
    draft_tokens: draftTokens,
    accepted_tokens: accepted,
    acceptance_rate: round(accepted / draftTokens),
    mean_acceptance_length: round(1 + accepted / drafts),
  };
}

export interface MetricsSpeeds {
  prompt: number | null;
  generation: number | null;
  /** How many tokens the server generated in between, for every client: more than the job's own means others. */
  generatedTokens: number | null;
}

export function speedsFromMetrics(
  before: MetricsSnapshot | undefined,
  after: MetricsSnapshot | undefined,
): MetricsSpeeds | undefined {
  if (!before || !after) return undefined;
  for (const series of SPEED_SERIES) {
    if (!after.has(series.prompt[0]) && !after.has(series.generation[0])) continue;
    const generated =
      (after.get(series.generation[0]) ?? NaN) - (before.get(series.generation[0]) ?? NaN);
    return {
      prompt: rate(before, after, series.prompt),
      generation: rate(before, after, series.generation),
      generatedTokens: Number.isFinite(generated) ? generated : null,
    };
  }
  return undefined;
}

/**
 * The server generated clearly more than this job did (its request log's output tokens): someone else used
 * it meanwhile — another server or `localagents run` on the same backend, which the runner cannot see.
 * The slack covers a stream cut short, whose tokens the server counted and no usage reported.
 */
function othersUsedServer(speeds: MetricsSpeeds, ownGenerated: number): boolean {
  return speeds.generatedTokens !== null && speeds.generatedTokens > ownGenerated * 1.1 + 32;
}

/** Whether a backend of this kind can have a Prometheus /metrics at all (Ollama and LM Studio have none). */
export function hasMetrics(backend: BackendKind): boolean {
  return backend !== 'ollama' && backend !== 'lmstudio';
}

/**
 * GET <base>/metrics within timeoutMs, through the registry's prober (node:http: fetch refuses the Fetch
 * spec's "bad ports", where a backend may listen); undefined when the backend does not expose it
 * (llama.cpp without --metrics: 501) or does not answer.
 */
export async function fetchMetrics(
  baseUrl: string,
  apiKey: string | undefined,
  timeoutMs = 1500,
): Promise<MetricsSnapshot | undefined> {
  const answer = await probeGet(
    baseUrl,
    '/metrics',
    apiKey ? { authorization: `Bearer ${apiKey}` } : {},
    AbortSignal.timeout(timeoutMs),
  );
  return answer.ok && answer.status === 200 ? parsePrometheus(answer.body) : undefined;
}

export interface FiguresInput {
  /** What the shim counted on the job's route. */
  stats: RouteStats;
  before?: MetricsSnapshot | undefined;
  after?: MetricsSnapshot | undefined;
  /** Another job used the same endpoint while this one ran: /metrics deltas cover both. */
  overlapped: boolean;
}

/** Per-job backend figures from what the shim counted on the job's route, speeds from /metrics deltas. */
export function computeBackendFigures(input: FiguresInput): BackendFigures {
  const figures: BackendFigures = {
    requests: input.stats.requests,
    failed_requests: input.stats.failedRequests,
    prompt_tokens: input.stats.promptTokens,
    cached_tokens: input.stats.cachedTokens,
    cache_hit_rate: null,
    generated_tokens: input.stats.outputTokens,
    rewrites: { ...input.stats.rewrites },
    prefix_extends: input.stats.prefixStable,
    prefix_breaks: input.stats.prefixBreaks,
    prompt_tokens_per_s: null,
    generation_tokens_per_s: null,
    speed_scope: 'unavailable',
  };
  // A backend that reports no cache figures (Ollama) has no rate, not a rate of 0 %.
  if (input.stats.requests > 0 && input.stats.cacheReports === 0) figures.cache_reported = false;
  else if (figures.prompt_tokens > 0) {
    figures.cache_hit_rate =
      Math.round((figures.cached_tokens / figures.prompt_tokens) * 1000) / 1000;
  }
  const spec = specDecodeFromMetrics(input.before, input.after);
  if (spec) figures.spec_decode = spec;
  const speeds = speedsFromMetrics(input.before, input.after);
  if (speeds) {
    figures.prompt_tokens_per_s = speeds.prompt;
    figures.generation_tokens_per_s = speeds.generation;
    figures.speed_scope =
      input.overlapped || othersUsedServer(speeds, figures.generated_tokens)
        ? 'server_wide'
        : 'job';
  }
  return figures;
}

/** One line for the transcript's done line and the CLI. */
export function describeFigures(figures: BackendFigures): string {
  const parts = [
    `${figures.requests} requests`,
    figures.cache_reported === false
      ? `${figures.prompt_tokens} prompt tokens (cache: not reported)`
      : `${figures.prompt_tokens} prompt tokens (${figures.cached_tokens} cached${figures.cache_hit_rate === null ? '' : `, ${Math.round(figures.cache_hit_rate * 100)}%`})`,
    `${figures.generated_tokens} generated`,
  ];
  if (figures.prompt_tokens_per_s !== null)
    parts.push(`prompt ${figures.prompt_tokens_per_s} tok/s`);
  if (figures.generation_tokens_per_s !== null)
    parts.push(`generation ${figures.generation_tokens_per_s} tok/s`);
  if (figures.spec_decode)
    parts.push(
      `speculative decoding ${Math.round(figures.spec_decode.acceptance_rate * 100)}% accepted (${figures.spec_decode.mean_acceptance_length} tokens a step)`,
    );
  if (figures.speed_scope === 'server_wide')
    parts.push('(speeds are server-wide: other jobs overlapped)');
  return parts.join(', ');
}
