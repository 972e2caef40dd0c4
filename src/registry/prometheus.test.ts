import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { maxOf, parsePrometheusText, parseValue, sumOf } from './prometheus.js';

const FIXTURES = new URL('../../test/fixtures/llama.cpp/', import.meta.url);
function capturedMetrics(file: string): string {
  const capture = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as {
    response: { body_raw: string };
  };
  return capture.response.body_raw;
}

// backends.md §1.14: prometheus_client output of a vLLM V1 engine (label pairs sorted by name).
const VLLM_METRICS = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="my-model"} 2.0
vllm:num_requests_running{engine="1",model_name="my-model"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="my-model"} 3.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="my-model"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="my-model"} 0.5
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="my-model"} 1.23457e+06
vllm:prompt_tokens_created{engine="0",model_name="my-model"} 1.7672256e+09
vllm:cache_config_info{block_size="16",enable_prefix_caching="True",engine="0",num_gpu_blocks="2048"} 1.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="my \\"quoted\\" \\\\ name\\n"} 7
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="my-model"} 12 1767225600000
http_request_duration_seconds_sum{handler="/v1/messages"} NaN
`;

describe('parsePrometheusText', () => {
  it('reads llama-server metrics without labels from the idle capture (A07)', () => {
    const exposition = parsePrometheusText(capturedMetrics('A07-get-metrics-before.json'));
    expect(exposition.types['llamacpp:prompt_tokens_total']).toBe('counter');
    expect(exposition.types['llamacpp:requests_processing']).toBe('gauge');
    expect(exposition.help['llamacpp:requests_deferred']).toBe('Number of requests deferred.');
    expect(sumOf(exposition, 'llamacpp:requests_processing')).toBe(0);
    expect(exposition.samples.every((sample) => Object.keys(sample.labels).length === 0)).toBe(
      true,
    );
    expect(exposition.samples).toHaveLength(11);
  });

  it.each([
    ['A61-get-metrics-busy.json', 1, 0],
    ['A64-get-metrics-both-busy-one-deferred.json', 2, 1],
    ['C15-get-metrics-after-concurrent.json', 0, 0],
  ])('reads busy and deferred requests from %s', (file, processing, deferred) => {
    const exposition = parsePrometheusText(capturedMetrics(file));
    expect(sumOf(exposition, 'llamacpp:requests_processing')).toBe(processing);
    expect(sumOf(exposition, 'llamacpp:requests_deferred')).toBe(deferred);
  });

  it('reads fractional gauges as written by llama-server (A64)', () => {
    const exposition = parsePrometheusText(
      capturedMetrics('A64-get-metrics-both-busy-one-deferred.json'),
    );
    expect(sumOf(exposition, 'llamacpp:prompt_seconds_total')).toBe(1.005);
    expect(sumOf(exposition, 'llamacpp:n_tokens_max')).toBe(8191);
  });

  it('reads vLLM labels, sums engines and takes the largest KV usage', () => {
    const exposition = parsePrometheusText(VLLM_METRICS);
    expect(sumOf(exposition, 'vllm:num_requests_running')).toBe(3);
    expect(sumOf(exposition, 'vllm:num_requests_waiting')).toBe(3);
    expect(maxOf(exposition, 'vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc')).toBe(0.5);
    expect(exposition.samples[0]?.labels).toEqual({ engine: '0', model_name: 'my-model' });
    expect(sumOf(exposition, 'vllm:prompt_tokens_total')).toBe(1_234_570);
  });

  it('unescapes label values and keeps string labels of info gauges', () => {
    const exposition = parsePrometheusText(VLLM_METRICS);
    const success = exposition.samples.find(
      (sample) => sample.name === 'vllm:request_success_total',
    );
    expect(success?.labels.model_name).toBe('my "quoted" \\ name\n');
    const info = exposition.samples.find((sample) => sample.name === 'vllm:cache_config_info');
    expect(info?.labels).toMatchObject({
      block_size: '16',
      enable_prefix_caching: 'True',
      num_gpu_blocks: '2048',
    });
  });

  it('ignores timestamps and reads +Inf labels and NaN values', () => {
    const exposition = parsePrometheusText(VLLM_METRICS);
    const bucket = exposition.samples.find((sample) => sample.name.endsWith('_bucket'));
    expect(bucket).toMatchObject({ value: 12, labels: { le: '+Inf' } });
    expect(sumOf(exposition, 'http_request_duration_seconds_sum')).toBeNaN();
  });

  it('falls back to the deprecated gpu_cache_usage_perc name', () => {
    const exposition = parsePrometheusText('vllm:gpu_cache_usage_perc{engine="0"} 0.75\n');
    expect(maxOf(exposition, 'vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc')).toBe(0.75);
  });

  it('skips lines it cannot read instead of failing the scrape', () => {
    const exposition = parsePrometheusText(
      'garbage line here\nok_metric 1\nbad{label="x" 2\nname value\n',
    );
    expect(exposition.samples).toEqual([{ name: 'ok_metric', labels: {}, value: 1 }]);
  });

  it.each([
    ['1.23457e+06', 1_234_570],
    ['0', 0],
    ['-3.5', -3.5],
    ['8848.76', 8848.76],
    ['1e-05', 0.00001],
    ['+Inf', Number.POSITIVE_INFINITY],
    ['-Inf', Number.NEGATIVE_INFINITY],
    ['inf', Number.POSITIVE_INFINITY],
    ['1.5E3', 1500],
    ['abc', undefined],
    ['', undefined],
  ])('reads the %g-style number %j', (text, expected) => {
    expect(parseValue(text)).toBe(expected);
  });
});
