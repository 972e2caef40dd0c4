import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { RequestLogLine } from '../shim/log.js';
import { countInStats, emptyStats, type RouteStats } from '../shim/route.js';
import {
  computeBackendFigures,
  describeFigures,
  parsePrometheus,
  specDecodeFromMetrics,
  speedsFromMetrics,
} from './backend-figures.js';

const llamaFixtures = new URL('../../test/fixtures/llama.cpp/', import.meta.url);

async function metricsBody(name: string): Promise<string> {
  const parsed = JSON.parse(await readFile(new URL(name, llamaFixtures), 'utf8')) as {
    response: { body_raw: string };
  };
  return parsed.response.body_raw;
}

/** Three requests as the shim counts them (the same counting requests.jsonl lines get). */
const lines = [
  {
    status: 200,
    usage: { input_tokens: 1000, output_tokens: 50, cache_read_input_tokens: 0 },
    rewrites: ['fold_system'],
    prefix: { kind: 'extends' },
  },
  {
    status: 200,
    usage: { input_tokens: 200, output_tokens: 30, cache_read_input_tokens: 1000 },
    rewrites: [],
    prefix: { kind: 'extends' },
  },
  {
    status: 400,
    usage: null,
    rewrites: ['fold_system'],
    prefix: { kind: 'changed', changed_at: 2 },
  },
] as const;

function routeStats(): RouteStats {
  const stats = emptyStats();
  for (const line of lines) countInStats(stats, line as unknown as RequestLogLine);
  return stats;
}

describe('computeBackendFigures', () => {
  it("sums requests, prompt, cached and generated tokens from the route's counts", () => {
    const figures = computeBackendFigures({ stats: routeStats(), overlapped: false });
    expect(figures.requests).toBe(3);
    expect(figures.failed_requests).toBe(1);
    expect(figures.prompt_tokens).toBe(2200);
    expect(figures.cached_tokens).toBe(1000);
    expect(figures.cache_hit_rate).toBe(0.455);
    expect(figures.generated_tokens).toBe(80);
    expect(figures.rewrites).toEqual({ fold_system: 2 });
    expect(figures.prefix_breaks).toBe(1);
    expect(figures.prefix_extends).toBe(2);
    expect(figures.speed_scope).toBe('unavailable');
  });

  it('computes llama.cpp speeds from /metrics deltas and labels overlapping jobs server-wide', async () => {
    const before = parsePrometheus(await metricsBody('A07-get-metrics-before.json'));
    const after = parsePrometheus(await metricsBody('A81-get-metrics-after.json'));
    const figures = computeBackendFigures({ stats: routeStats(), before, after, overlapped: true });
    expect(figures.prompt_tokens_per_s).toBe(9589.5);
    expect(figures.generation_tokens_per_s).toBe(374.7);
    expect(figures.speed_scope).toBe('server_wide');
    expect(describeFigures(figures)).toContain('server-wide');
  });
});

/** vLLM's spec_decode counters (backends.md §1.14), labelled per model as vLLM prints them. */
function vllmSpecMetrics(drafts: number, draftTokens: number, accepted: number): string {
  const labels = '{engine="0",model_name="coder-moe"}';
  return [
    `vllm:spec_decode_num_drafts_total${labels} ${drafts}.0`,
    `vllm:spec_decode_num_draft_tokens_total${labels} ${draftTokens}.0`,
    `vllm:spec_decode_num_accepted_tokens_total${labels} ${accepted}.0`,
    '',
  ].join('\n');
}

describe('specDecodeFromMetrics', () => {
  it('reads vLLM acceptance over the job’s span: accepted / draft tokens, and tokens a step', () => {
    const spec = specDecodeFromMetrics(
      parsePrometheus(vllmSpecMetrics(100, 400, 250)),
      parsePrometheus(vllmSpecMetrics(150, 600, 400)),
    );
    expect(spec).toEqual({
      drafts: 50,
      draft_tokens: 200,
      accepted_tokens: 150,
      acceptance_rate: 0.75,
      mean_acceptance_length: 4,
    });
    const figures = computeBackendFigures({
      stats: routeStats(),
      before: parsePrometheus(vllmSpecMetrics(100, 400, 250)),
      after: parsePrometheus(vllmSpecMetrics(150, 600, 400)),
      overlapped: false,
    });
    expect(figures.spec_decode).toEqual(spec);
    expect(describeFigures(figures)).toContain(
      'speculative decoding 75% accepted (4 tokens a step)',
    );
  });

  it('has nothing to say without the counters (llama.cpp) or without a draft in the span', async () => {
    const before = parsePrometheus(await metricsBody('A07-get-metrics-before.json'));
    const after = parsePrometheus(await metricsBody('A81-get-metrics-after.json'));
    expect(specDecodeFromMetrics(before, after)).toBeUndefined();
    expect(
      computeBackendFigures({ stats: routeStats(), before, after, overlapped: false }),
    ).not.toHaveProperty('spec_decode');
    const idle = parsePrometheus(vllmSpecMetrics(10, 40, 30));
    expect(specDecodeFromMetrics(idle, idle)).toBeUndefined();
  });
});

describe('speedsFromMetrics', () => {
  it('reads vLLM counters over the prefill and decode histogram sums, summing labelled series', () => {
    const before = parsePrometheus(
      'vllm:prompt_tokens_total{model_name="m"} 100\nvllm:request_prefill_time_seconds_sum{model_name="m"} 1\nvllm:generation_tokens_total{model_name="m"} 10\nvllm:request_decode_time_seconds_sum{model_name="m"} 1\n',
    );
    const after = parsePrometheus(
      'vllm:prompt_tokens_total{model_name="m"} 1100\nvllm:request_prefill_time_seconds_sum{model_name="m"} 2\nvllm:generation_tokens_total{model_name="m"} 210\nvllm:request_decode_time_seconds_sum{model_name="m"} 5\n',
    );
    expect(speedsFromMetrics(before, after)).toEqual({
      prompt: 1000,
      generation: 50,
      generatedTokens: 200,
    });
  });

  it('labels speeds server-wide when the server generated clearly more than the job, even with no job overlapping', () => {
    const counters = (generated: number) =>
      parsePrometheus(
        `llamacpp:prompt_tokens_total 0\nllamacpp:prompt_seconds_total 0\nllamacpp:tokens_predicted_total ${generated}\nllamacpp:tokens_predicted_seconds_total ${generated / 100}\n`,
      );
    // The log's three requests generated 80 tokens: the server's 80 (or a little more) is this job alone.
    for (const [generated, scope] of [
      [80, 'job'],
      [120, 'job'],
      [400, 'server_wide'],
    ] as const) {
      const figures = computeBackendFigures({
        stats: routeStats(),
        before: counters(0),
        after: counters(generated),
        overlapped: false,
      });
      expect([generated, figures.speed_scope]).toEqual([generated, scope]);
    }
  });

  it('answers undefined without a snapshot', () => {
    expect(speedsFromMetrics(undefined, new Map())).toBeUndefined();
  });
});
