/**
 * Server counters and their Prometheus text: llama-server's unlabelled `llamacpp:` set (A07, A81;
 * values printed like C++ `operator<<` with 6 significant digits) and vLLM's `vllm:` set with
 * `{engine="0",model_name="…"}` labels and `_total` counters (backends.md §1.14).
 */
export interface ServerStats {
  startedAtMs: number;
  /** Prompt tokens actually processed (cache hits excluded), llama's prompt_tokens_total. */
  promptTokensProcessed: number;
  /** Every prompt token, vLLM's prompt_tokens_total and prefix_cache_queries_total. */
  promptTokensAll: number;
  cachedTokens: number;
  promptMs: number;
  generatedTokens: number;
  generationMs: number;
  decodeCalls: number;
  maxTokensInSlot: number;
  bucket: { promptTokens: number; promptMs: number; generated: number; generationMs: number };
  /** vLLM with --speculative-config: its spec_decode counters (backends.md §1.14). */
  speculative?: SpeculativeStats;
}

export interface SpeculativeConfig {
  /** Draft tokens proposed per step (vLLM `num_speculative_tokens`). */
  numSpeculativeTokens: number;
  /** Share of draft tokens the target model accepts. */
  acceptanceRate: number;
}

export interface SpeculativeStats extends SpeculativeConfig {
  drafts: number;
  draftTokens: number;
  acceptedTokens: number;
}

export function createStats(speculative?: SpeculativeConfig): ServerStats {
  return {
    ...(speculative
      ? { speculative: { ...speculative, drafts: 0, draftTokens: 0, acceptedTokens: 0 } }
      : {}),
    startedAtMs: Date.now(),
    promptTokensProcessed: 0,
    promptTokensAll: 0,
    cachedTokens: 0,
    promptMs: 0,
    generatedTokens: 0,
    generationMs: 0,
    decodeCalls: 0,
    maxTokensInSlot: 0,
    bucket: { promptTokens: 0, promptMs: 0, generated: 0, generationMs: 0 },
  };
}

export interface CompletedRequest {
  promptTokens: number;
  cachedTokens: number;
  outputTokens: number;
  promptMs: number;
  generationMs: number;
}

export function recordCompletion(stats: ServerStats, done: CompletedRequest): void {
  const processed = done.promptTokens - done.cachedTokens;
  stats.promptTokensProcessed += processed;
  stats.promptTokensAll += done.promptTokens;
  stats.cachedTokens += done.cachedTokens;
  stats.promptMs += done.promptMs;
  stats.generatedTokens += done.outputTokens;
  stats.generationMs += done.generationMs;
  // One decode call for the prompt batch, then one per generated token.
  stats.decodeCalls += 1 + done.outputTokens;
  stats.maxTokensInSlot = Math.max(stats.maxTokensInSlot, done.promptTokens + done.outputTokens);
  stats.bucket.promptTokens += processed;
  stats.bucket.promptMs += done.promptMs;
  stats.bucket.generated += done.outputTokens;
  stats.bucket.generationMs += done.generationMs;
  if (stats.speculative) countSpeculation(stats.speculative, done.outputTokens);
}

/**
 * Each step proposes k draft tokens, accepts a share of them and adds one token of its own, so `outputTokens`
 * take about outputTokens / (1 + k × rate) steps.
 */
function countSpeculation(spec: SpeculativeStats, outputTokens: number): void {
  if (outputTokens <= 0) return;
  const k = spec.numSpeculativeTokens;
  const steps = Math.max(1, Math.ceil(outputTokens / (1 + k * spec.acceptanceRate)));
  spec.drafts += steps;
  spec.draftTokens += steps * k;
  spec.acceptedTokens += Math.min(outputTokens - 1, Math.round(steps * k * spec.acceptanceRate));
}

/** C++ `std::cout << double` (default precision 6): 1234567 → 1.23457e+06. */
export function formatCppDouble(value: number): string {
  if (value === 0) return '0';
  const exponent = Math.floor(Math.log10(Math.abs(value)));
  if (exponent < -5 || exponent >= 6) {
    const [mantissa = '0', exp = '0'] = value.toExponential(5).split('e');
    const trimmed = mantissa.includes('.') ? mantissa.replace(/\.?0+$/, '') : mantissa;
    const sign = exp.startsWith('-') ? '-' : '+';
    return `${trimmed}e${sign}${exp.replace(/^[-+]/, '').padStart(2, '0')}`;
  }
  return String(Number(value.toPrecision(6)));
}

const rate = (tokens: number, ms: number): number => (ms > 0 ? (tokens * 1000) / ms : 0);

export function renderLlamaMetrics(stats: ServerStats, busy: number, deferred: number): string {
  const { bucket } = stats;
  const rows: [string, string, string, number][] = [
    [
      'prompt_tokens_total',
      'counter',
      'Number of prompt tokens processed.',
      stats.promptTokensProcessed,
    ],
    ['prompt_seconds_total', 'counter', 'Prompt process time', stats.promptMs / 1000],
    [
      'tokens_predicted_total',
      'counter',
      'Number of generation tokens processed.',
      stats.generatedTokens,
    ],
    [
      'tokens_predicted_seconds_total',
      'counter',
      'Predict process time',
      stats.generationMs / 1000,
    ],
    ['n_decode_total', 'counter', 'Total number of llama_decode() calls', stats.decodeCalls],
    ['n_tokens_max', 'counter', 'Largest observed n_tokens.', stats.maxTokensInSlot],
    [
      'prompt_tokens_seconds',
      'gauge',
      'Average prompt throughput in tokens/s.',
      rate(bucket.promptTokens, bucket.promptMs),
    ],
    [
      'predicted_tokens_seconds',
      'gauge',
      'Average generation throughput in tokens/s.',
      rate(bucket.generated, bucket.generationMs),
    ],
    ['requests_processing', 'gauge', 'Number of requests processing.', busy],
    ['requests_deferred', 'gauge', 'Number of requests deferred.', deferred],
    [
      'n_busy_slots_per_decode',
      'gauge',
      'Average number of busy slots per llama_decode() call',
      busy > 0 ? busy : stats.decodeCalls > 0 ? 1 : 0,
    ],
  ];
  // The throughput gauges come from a bucket reset on every scrape.
  stats.bucket = { promptTokens: 0, promptMs: 0, generated: 0, generationMs: 0 };
  return rows
    .map(
      ([name, type, help, value]) =>
        `# HELP llamacpp:${name} ${help}\n# TYPE llamacpp:${name} ${type}\nllamacpp:${name} ${formatCppDouble(value)}\n`,
    )
    .join('');
}

export interface VllmGauges {
  running: number;
  waiting: number;
  kvCacheUsage: number;
  modelName: string;
}

const pyFloat = (value: number): string => (Number.isInteger(value) ? `${value}.0` : String(value));

export function renderVllmMetrics(stats: ServerStats, gauges: VllmGauges): string {
  const labels = `{engine="0",model_name="${gauges.modelName}"}`;
  const created = pyFloat(stats.startedAtMs / 1000);
  const gauge = (name: string, help: string, value: number): string =>
    `# HELP vllm:${name} ${help}\n# TYPE vllm:${name} gauge\nvllm:${name}${labels} ${pyFloat(value)}\n`;
  const counter = (name: string, help: string, value: number): string =>
    `# HELP vllm:${name}_total ${help}\n# TYPE vllm:${name}_total counter\nvllm:${name}_total${labels} ${pyFloat(value)}\n` +
    `vllm:${name}_created${labels} ${created}\n`;
  return [
    gauge('num_requests_running', 'Number of requests in model execution batches.', gauges.running),
    gauge('num_requests_waiting', 'Number of requests waiting to be processed.', gauges.waiting),
    gauge('kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', gauges.kvCacheUsage),
    counter(
      'prefix_cache_queries',
      'Prefix cache queries, in terms of number of queried tokens.',
      stats.promptTokensAll,
    ),
    counter(
      'prefix_cache_hits',
      'Prefix cache hits, in terms of number of cached tokens.',
      stats.cachedTokens,
    ),
    counter('prompt_tokens', 'Number of prefill tokens processed.', stats.promptTokensAll),
    counter(
      'prompt_tokens_cached',
      'Number of cached prompt tokens (local + external).',
      stats.cachedTokens,
    ),
    counter('generation_tokens', 'Number of generation tokens processed.', stats.generatedTokens),
    ...(stats.speculative
      ? [
          counter(
            'spec_decode_num_drafts',
            'Number of spec decoding drafts.',
            stats.speculative.drafts,
          ),
          counter(
            'spec_decode_num_draft_tokens',
            'Number of draft tokens.',
            stats.speculative.draftTokens,
          ),
          counter(
            'spec_decode_num_accepted_tokens',
            'Number of accepted tokens.',
            stats.speculative.acceptedTokens,
          ),
        ]
      : []),
  ].join('');
}
