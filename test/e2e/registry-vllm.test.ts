import { describe, expect, it, onTestFinished } from 'vitest';
import type { EndpointConfig } from '../../src/registry/config-types.js';
import { probeEndpoint } from '../../src/registry/probe.js';
import { waitFor } from '../support/wait.js';
import { emulator, registryFor } from './registry-support.js';

function endpoint(url: string, extra: Partial<EndpointConfig> = {}): EndpointConfig {
  return { name: 'vllm', base_url: url, backend: 'vllm', env: {}, ...extra };
}

describe('probeEndpoint against the vLLM emulator', () => {
  it('lists every served name and LoRA card, each with the base model window', async () => {
    const emu = await emulator({
      backend: 'vllm',
      nCtx: 65536,
      servedNames: ['deepseek-v4-flash', 'dsv4'],
      loras: [{ name: 'sql-lora', base: 'deepseek-v4-flash' }],
    });
    const probe = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(probe).toMatchObject({ up: true, status: 'ok', backend: 'vllm', metrics: true });
    expect(probe.models).toEqual(['deepseek-v4-flash', 'dsv4', 'sql-lora']);
    expect(probe.context).toEqual({ 'deepseek-v4-flash': 65536, dsv4: 65536, 'sql-lora': 65536 });
    expect(probe.vllm).toEqual({ running: 0, waiting: 0, kvCacheUsage: 0 });
    expect(probe.slots).toBeUndefined();
  });

  it('detects vLLM when the endpoint is configured as other', async () => {
    const emu = await emulator({ backend: 'vllm', nCtx: 32768 });
    const probe = await probeEndpoint(endpoint(emu.url, { backend: 'other' }), {
      timeoutMs: 2000,
      env: {},
    });
    expect(probe.backend).toBe('vllm');
    expect(probe.context).toEqual({ 'qwen3-coder': 32768 });
  });

  it('reports unauthorized when /v1/models wants a key, and ok with the key from api_key_env', async () => {
    const emu = await emulator({ backend: 'vllm', apiKey: 'vk-1' });
    const without = await probeEndpoint(endpoint(emu.url, { api_key_env: 'VLLM_KEY' }), {
      timeoutMs: 2000,
      env: {},
    });
    expect(without).toMatchObject({ up: false, status: 'unauthorized', models: [] });
    expect(without.error).toContain('VLLM_KEY is not set');
    const withKey = await probeEndpoint(endpoint(emu.url, { api_key_env: 'VLLM_KEY' }), {
      timeoutMs: 2000,
      env: { VLLM_KEY: 'vk-1' },
    });
    expect(withKey).toMatchObject({ up: true, status: 'ok', models: ['qwen3-coder'] });
    const models = emu.requests.filter((request) => request.path === '/v1/models');
    expect(models.at(-1)?.headers.authorization).toBe('Bearer vk-1');
  });

  it('says a refused vLLM port may be loading, and "possibly loading" once it answered before', async () => {
    const emu = await emulator({ backend: 'vllm', loadingMs: 60_000 });
    const first = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(first).toMatchObject({ up: false, status: 'refused' });
    expect(first.error).toMatch(
      /^connection refused at 127\.0\.0\.1:\d+: the host is up but nothing listens on that port \(not started yet, or the wrong port\); vLLM also refuses connections until its model has loaded, so it may still be starting$/,
    );
    const again = await probeEndpoint(endpoint(emu.url), {
      timeoutMs: 2000,
      env: {},
      answeredBefore: true,
    });
    expect(again.error).toMatch(/which answered before: vLLM is possibly loading a model/);
  });

  it('reads running and waiting requests and KV usage from the vllm: metrics', async () => {
    const emu = await emulator({ backend: 'vllm', latency: { prefillMsPerToken: 5000 } });
    const controller = new AbortController();
    onTestFinished(() => controller.abort());
    fetch(`${emu.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'qwen3-coder',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'busy' }],
      }),
      signal: controller.signal,
    }).catch(() => undefined);
    const probe = await waitFor(
      async () => {
        const result = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
        return result.vllm?.running === 1 ? result : undefined;
      },
      { what: 'a running request' },
    );
    expect(probe.vllm).toMatchObject({ running: 1, waiting: 0 });
    expect(probe.vllm?.kvCacheUsage).toBeGreaterThan(0);
    expect(probe.vllm?.kvCacheUsage).toBeLessThanOrEqual(1);
  });

  it('remembers that a vLLM endpoint answered before and calls a later refusal possibly loading', async () => {
    const emu = await emulator({ backend: 'vllm' });
    const registry = await registryFor({
      endpoints: { v: { base_url: emu.url, backend: 'vllm' } },
    });
    expect((await registry.snapshot()).endpoints[0]?.status).toBe('ok');
    emu.setLoading(true);
    const later = (await registry.snapshot()).endpoints[0];
    expect(later?.status).toBe('refused');
    expect(later?.error).toContain('which answered before: vLLM is possibly loading a model');
  });
});
