import { describe, expect, it, onTestFinished } from 'vitest';
import { probeEndpoint } from '../../src/registry/probe.js';
import type { EndpointConfig } from '../../src/registry/config-types.js';
import { waitFor } from '../support/wait.js';
import { emulator } from './registry-support.js';

const ID = '/models/tiny-qwen3-tame.gguf';

function endpoint(url: string, extra: Partial<EndpointConfig> = {}): EndpointConfig {
  return {
    name: 'gpu',
    base_url: url,
    backend: 'llama.cpp',
    env: {},
    host: 'workstation',
    ...extra,
  };
}

/** Keeps one slot processing until the test ends: a slow prefill of a real request. */
function occupySlot(url: string): void {
  const controller = new AbortController();
  onTestFinished(() => controller.abort());
  fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'x',
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: 'hold a slot' }],
    }),
    signal: controller.signal,
  }).catch(() => undefined);
}

describe('probeEndpoint against the llama.cpp emulator', () => {
  it.each([
    ['-c 16384 --parallel 2', { nCtx: 16384, parallel: 2, metrics: true }, 8192, 2],
    ['-c 16384 (auto: 4 slots, unified KV)', { nCtx: 16384, metrics: true }, 16384, 4],
    [
      '-c 16384 --parallel 2 --kv-unified',
      { nCtx: 16384, parallel: 2, kvUnified: true, metrics: true },
      16384,
      2,
    ],
    [
      '-c 65536 --parallel 1 (capped at n_ctx_train)',
      { nCtx: 65536, parallel: 1, metrics: true },
      32768,
      1,
    ],
    ['-c 16384 --parallel 3 (5632 per slot)', { nCtx: 16384, parallel: 3, metrics: true }, 5632, 3],
    // Split, but reports what a unified cache on a 32k-trained model would (2 × 32768 per slot):
    // nothing llama-server answers tells the two layouts apart, so the registry claims neither.
    [
      '-c 131072 --parallel 2 (split, capped)',
      { nCtx: 131072, parallel: 2, metrics: true },
      32768,
      2,
    ],
  ])(
    'reports window and slots for %s, and no guess at the KV layout',
    async (_, options, window, slots) => {
      const emu = await emulator(options);
      const probe = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
      expect(probe).toMatchObject({
        name: 'gpu',
        base_url: emu.url,
        backend: 'llama.cpp',
        host: 'workstation',
        up: true,
        status: 'ok',
        models: [ID],
        context: { [ID]: window },
        slots: { total: slots, busy: 0, free: slots, source: 'slots' },
        metrics: true,
      });
      expect(probe).not.toHaveProperty('kvUnified');
      expect(probe).not.toHaveProperty('kv_unified');
      expect(probe.error).toBeUndefined();
      expect(probe.latency_ms).toBeGreaterThanOrEqual(0);
      expect(probe.latency_ms).toBeLessThan(2000);
    },
  );

  it('reports metrics off when llama-server runs without --metrics', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2 });
    const probe = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(probe.metrics).toBe(false);
    expect(probe.up).toBe(true);
    expect(probe.slots).toEqual({ total: 2, busy: 0, free: 2, source: 'slots' });
  });

  it('counts a slot that is processing a request as busy', async () => {
    const emu = await emulator({
      nCtx: 16384,
      parallel: 2,
      metrics: true,
      latency: { prefillMsPerToken: 5000 },
    });
    occupySlot(emu.url);
    const probe = await probeUntilOneBusy(emu.url);
    expect(probe.slots).toEqual({ total: 2, busy: 1, free: 1, source: 'slots' });
  });

  it('falls back to /props total_slots when /slots is off (--no-slots), without --metrics', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, slots: false });
    const probe = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(probe).toMatchObject({ up: true, status: 'ok', context: { [ID]: 8192 } });
    // Nothing says what is busy: the total is known, busy is reported as 0.
    expect(probe.slots).toEqual({ total: 2, busy: 0, free: 2, source: 'props' });
    expect(emu.requests.find((r) => r.path === '/slots')?.status).toBe(501);
  });

  it('takes busy from llamacpp:requests_processing when /slots is off but /metrics is on', async () => {
    const emu = await emulator({
      nCtx: 16384,
      parallel: 2,
      metrics: true,
      slots: false,
      latency: { prefillMsPerToken: 5000 },
    });
    occupySlot(emu.url);
    const probe = await probeUntilOneBusy(emu.url);
    expect(probe.slots).toEqual({ total: 2, busy: 1, free: 1, source: 'metrics' });
    expect(probe.status).toBe('ok');
  });

  it('reports the --alias as the served id', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, servedNames: ['qwen3.5-tiny'] });
    const probe = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(probe.models).toEqual(['qwen3.5-tiny']);
    expect(probe.context).toEqual({ 'qwen3.5-tiny': 8192 });
  });

  it('detects llama.cpp when the endpoint is configured as other', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2 });
    const probe = await probeEndpoint(endpoint(emu.url, { backend: 'other' }), {
      timeoutMs: 2000,
      env: {},
    });
    expect(probe.backend).toBe('llama.cpp');
    expect(probe.slots?.total).toBe(2);
  });

  it('says llama.cpp is still loading while it answers 503 Loading model, and ok once loaded', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, loadingMs: 60_000 });
    const loading = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(loading).toMatchObject({ up: false, status: 'loading', models: [] });
    expect(loading.error).toBe(
      'llama.cpp is still loading the model (503 Loading model): try again in a moment',
    );
    emu.setLoading(false);
    const ready = await probeEndpoint(endpoint(emu.url), { timeoutMs: 2000, env: {} });
    expect(ready).toMatchObject({ up: true, status: 'ok', models: [ID] });
  });
});

describe('probeEndpoint with an API key (llama.cpp)', () => {
  const KEY = 'sk-local-test';

  it('sends the key from api_key_env as a Bearer token and never serialises it', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, metrics: true, apiKey: KEY });
    const probe = await probeEndpoint(endpoint(emu.url, { api_key_env: 'LLAMA_KEY' }), {
      timeoutMs: 2000,
      env: { LLAMA_KEY: KEY },
    });
    expect(probe).toMatchObject({ up: true, status: 'ok', metrics: true, slots: { total: 2 } });
    expect(probe.apiKey).toBe(KEY);
    expect(JSON.stringify(probe)).not.toContain(KEY);
    const slots = emu.requests.find((request) => request.path === '/slots');
    expect(slots?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(slots?.status).toBe(200);
  });

  it.each([
    [
      undefined,
      {},
      'the server wants an API key (401 on GET /props): add api_key_env: <VARIABLE> to endpoint gpu in models.yaml and export the key in that variable',
    ],
    [
      'LLAMA_KEY',
      {},
      'the server wants an API key (401 on GET /props) but LLAMA_KEY is not set in this environment: export LLAMA_KEY=<key>',
    ],
    [
      'LLAMA_KEY',
      { LLAMA_KEY: 'sk-wrong' },
      'the server rejected the API key in LLAMA_KEY (401 on GET /props): check the key',
    ],
  ])('reports unauthorized with api_key_env %s', async (variable, env, sentence) => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, apiKey: KEY });
    const config =
      variable === undefined ? endpoint(emu.url) : endpoint(emu.url, { api_key_env: variable });
    const probe = await probeEndpoint(config, { timeoutMs: 2000, env });
    expect(probe).toMatchObject({ up: false, status: 'unauthorized', error: sentence });
    // /v1/models is public on llama-server, so what it serves is still known.
    expect(probe.models).toEqual([ID]);
    expect(JSON.stringify(probe)).not.toContain('sk-wrong');
  });
});

/** Probes until the endpoint reports one busy slot (a request holds it), with a deadline. */
function probeUntilOneBusy(url: string) {
  return waitFor(
    async () => {
      const result = await probeEndpoint(endpoint(url), { timeoutMs: 2000, env: {} });
      return result.slots?.busy === 1 ? result : undefined;
    },
    { timeoutMs: 10_000, what: 'one busy slot' },
  );
}
