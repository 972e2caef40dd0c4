import { writeFile } from 'node:fs/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { stringify } from 'yaml';
import { createRegistry } from '../../src/registry/registry.js';
import { waitFor } from '../support/wait.js';
import { configFile, emulator, refusedPort, registryFor } from './registry-support.js';

const QWEN = 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL';

describe('Registry.resolve', () => {
  it('finds a menu name inside a longer served id and carries the window and a small-window warning', async () => {
    const emu = await emulator({ nCtx: 65536, parallel: 2, servedNames: [QWEN] });
    const registry = await registryFor({
      endpoints: { gpu: { base_url: emu.url, backend: 'llama.cpp', host: 'workstation' } },
      models: { 'qwen3.8-27b': { notes: 'default coder' } },
    });
    const resolution = await registry.resolve({ model: 'qwen3.8-27b' });
    if (resolution.kind !== 'ready') throw new Error(resolution.message);
    expect(resolution.servedId).toBe(QWEN);
    expect(resolution.endpoint.name).toBe('gpu');
    expect(resolution.contextTokens).toBe(32768);
    expect(resolution.contextSource).toBe('probe');
    expect(resolution.menuEntry?.notes).toBe('default coder');
    expect(resolution.warnings).toEqual([
      `${QWEN} has a 32768-token window; Claude Code's fixed prompt and compaction need about 128k to work without thrashing, so expect early compaction or "prompt is too long"`,
    ]);
  });

  it('honours a menu window smaller than the server’s, and ignores a larger one naming both numbers', async () => {
    const emu = await emulator({ backend: 'vllm', nCtx: 262144, servedNames: ['big'] });
    const registry = await registryFor({
      endpoints: { v: { base_url: emu.url, backend: 'vllm' } },
      models: { big: { context: 131072 } },
    });
    const resolution = await registry.resolve({ model: 'big' });
    expect(resolution).toMatchObject({
      kind: 'ready',
      contextTokens: 131072,
      contextSource: 'menu',
      warnings: [],
    });
    expect((await registry.snapshot()).models[0]).toMatchObject({
      available: true,
      context: 131072,
      context_source: 'menu',
    });
    const larger = await registryFor({
      endpoints: { v: { base_url: emu.url, backend: 'vllm' } },
      models: { big: { context: 524288 } },
    });
    expect(await larger.resolve({ model: 'big' })).toMatchObject({
      kind: 'ready',
      contextTokens: 262144,
      contextSource: 'probe',
      warnings: [
        'models.yaml sets context 524288 for big, larger than the 262144 tokens v reports per request: using 262144 (a larger window would only produce overflows)',
      ],
    });
  });

  it('uses defaults.model, else the first live endpoint serving anything, in config order', async () => {
    const first = await emulator({ backend: 'vllm', servedNames: ['alpha'] });
    const second = await emulator({ backend: 'vllm', servedNames: ['beta'] });
    const endpoints = {
      dead: { base_url: await refusedPort(), backend: 'llama.cpp' },
      one: { base_url: first.url, backend: 'vllm' },
      two: { base_url: second.url, backend: 'vllm' },
    };
    const byOrder = await (await registryFor({ endpoints })).resolve({});
    expect(byOrder).toMatchObject({ kind: 'ready', servedId: 'alpha' });
    const byDefault = await (
      await registryFor({ endpoints, defaults: { model: 'beta' } })
    ).resolve({});
    expect(byDefault).toMatchObject({ kind: 'ready', servedId: 'beta' });
  });

  it('tries the menu endpoint first, uses another that serves the model, and never filters by host', async () => {
    const one = await emulator({ backend: 'vllm', servedNames: ['same'] });
    const two = await emulator({ backend: 'vllm', servedNames: ['same', 'only-two'] });
    const endpoints = {
      one: { base_url: one.url, backend: 'vllm', host: 'box-a' },
      two: { base_url: two.url, backend: 'vllm', host: 'box-b' },
    };
    // host is where the user runs it, relayed in a bring-up answer: not where to look.
    const onHost = await registryFor({ endpoints, models: { same: { host: 'box-z' } } });
    expect(await onHost.resolve({ model: 'same' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'one' },
    });
    const preferred = await registryFor({
      endpoints,
      models: { same: { endpoint: 'two' }, 'only-two': { endpoint: 'one' } },
    });
    expect(await preferred.resolve({ model: 'same' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'two' },
    });
    // The preferred endpoint does not serve it: the one that does is used.
    expect(await preferred.resolve({ model: 'only-two' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'two' },
      servedId: 'only-two',
    });
    const plain = await registryFor({ endpoints });
    expect(await plain.resolve({ model: 'same', endpoint: 'two' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'two' },
    });
    expect(await plain.resolve({ model: 'same' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'one' },
    });
    // A tool call's endpoint stays a hard choice.
    expect(await plain.resolve({ model: 'only-two', endpoint: 'one' })).toMatchObject({
      kind: 'unavailable',
      message: expect.stringMatching(/^'only-two' is not running on one\./) as unknown,
    });
  });

  it('answers with the candidates when a name fits several served ids equally well', async () => {
    const emu = await emulator({
      backend: 'vllm',
      servedNames: ['org/coder-27b-q4', 'org/coder-27b-q8', 'other-model'],
    });
    const registry = await registryFor({
      endpoints: { v: { base_url: emu.url, backend: 'vllm' } },
      models: { 'coder-27b': { notes: 'two quants' } },
    });
    const resolution = await registry.resolve({ model: 'coder-27b' });
    expect(resolution).toMatchObject({
      kind: 'ambiguous',
      candidates: [
        { endpoint: 'v', served_model: 'org/coder-27b-q4' },
        { endpoint: 'v', served_model: 'org/coder-27b-q8' },
      ],
    });
    expect((await registry.snapshot()).models[0]).toMatchObject({
      available: false,
      candidates: [
        { endpoint: 'v', served_model: 'org/coder-27b-q4' },
        { endpoint: 'v', served_model: 'org/coder-27b-q8' },
      ],
    });
    // The full id, or too short a name to guess with, is no longer ambiguous.
    expect(await registry.resolve({ model: 'org/coder-27b-q8' })).toMatchObject({
      kind: 'ready',
      servedId: 'org/coder-27b-q8',
    });
    expect(await registry.resolve({ model: 'q8' })).toMatchObject({ kind: 'unavailable' });
  });

  it('prefers an endpoint with a free slot when several serve the name', async () => {
    const busy = await emulator({
      nCtx: 32768,
      parallel: 1,
      servedNames: ['coder'],
      latency: { prefillMsPerToken: 5000 },
    });
    const idle = await emulator({ nCtx: 32768, parallel: 1, servedNames: ['coder'] });
    const controller = new AbortController();
    onTestFinished(() => controller.abort());
    fetch(`${busy.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'coder',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'busy' }],
      }),
      signal: controller.signal,
    }).catch(() => undefined);
    const registry = await registryFor({
      endpoints: {
        busy: { base_url: busy.url, backend: 'llama.cpp' },
        idle: { base_url: idle.url, backend: 'llama.cpp' },
      },
    });
    await waitFor(async () => (await registry.snapshot()).endpoints[0]?.slots?.busy === 1, {
      what: 'the first endpoint busy',
    });
    expect(await registry.resolve({ model: 'coder' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'idle' },
    });
  });

  it('prefers an exact id on a later endpoint to a substring hit on an earlier one, in resolve and snapshot', async () => {
    const near = await emulator({ nCtx: 32768, parallel: 1, servedNames: ['qwen3-coder-30b'] });
    const exact = await emulator({ nCtx: 32768, parallel: 1, servedNames: ['qwen3'] });
    const registry = await registryFor({
      endpoints: {
        near: { base_url: near.url, backend: 'llama.cpp' },
        exact: { base_url: exact.url, backend: 'llama.cpp' },
      },
      models: { qwen3: { notes: 'the small one' } },
    });
    expect(await registry.resolve({ model: 'qwen3' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'exact' },
      servedId: 'qwen3',
    });
    // A longer name only the first endpoint can match still resolves there.
    expect(await registry.resolve({ model: 'qwen3-coder' })).toMatchObject({
      kind: 'ready',
      endpoint: { name: 'near' },
      servedId: 'qwen3-coder-30b',
    });
    expect((await registry.snapshot()).models).toEqual([
      expect.objectContaining({ name: 'qwen3', served_as: 'qwen3', endpoint: 'exact' }),
    ]);
  });

  it('answers a model that is not running with its host, notes, bring_up and what runs now', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, servedNames: [QWEN] });
    const dead = await refusedPort();
    const registry = await registryFor({
      endpoints: {
        gpu: { base_url: emu.url, backend: 'llama.cpp' },
        big: { base_url: dead, backend: 'vllm', host: 'gpu-server' },
      },
      models: {
        'deepseek-v4-flash': {
          host: 'gpu-server',
          notes: 'vllm needs --enable-auto-tool-choice --tool-call-parser deepseek_v3',
          bring_up: 'ssh gpu-server ./serve-deepseek.sh',
        },
      },
    });
    const resolution = await registry.resolve({ model: 'deepseek-v4-flash' });
    if (resolution.kind !== 'unavailable')
      throw new Error(`expected unavailable, got ${resolution.kind}`);
    expect(resolution).toMatchObject({
      name: 'deepseek-v4-flash',
      host: 'gpu-server',
      notes: 'vllm needs --enable-auto-tool-choice --tool-call-parser deepseek_v3',
      bring_up: 'ssh gpu-server ./serve-deepseek.sh',
      servedNow: [{ endpoint: 'gpu', models: [QWEN] }],
    });
    expect(resolution.message).toContain(
      "'deepseek-v4-flash' is not running anywhere. Ask the user to bring it up on gpu-server. Notes: vllm needs --enable-auto-tool-choice --tool-call-parser deepseek_v3. Start command on file (may be stale): ssh gpu-server ./serve-deepseek.sh",
    );
    expect(resolution.message).toContain(`Running now: ${QWEN} on gpu.`);
    expect(resolution.message).toContain(`Down: big (connection refused at ${new URL(dead).host}`);
  });

  it('says a model is served but locked when the endpoint wants a key it does not have', async () => {
    const emu = await emulator({
      nCtx: 65536,
      parallel: 2,
      apiKey: 'sk-x',
      servedNames: ['coder'],
    });
    const registry = await registryFor({
      endpoints: { gpu: { base_url: emu.url, backend: 'llama.cpp', api_key_env: 'GPU_KEY' } },
    });
    const resolution = await registry.resolve({ model: 'coder' });
    expect(resolution.kind).toBe('unavailable');
    expect(resolution.kind === 'unavailable' && resolution.message).toContain(
      'coder is served on gpu, but it cannot be used: the server wants an API key (401 on GET /props) but GPU_KEY is not set in this environment: export GPU_KEY=<key>. Ask the user to fix the key.',
    );
    const withKey = await registryFor(
      { endpoints: { gpu: { base_url: emu.url, backend: 'llama.cpp', api_key_env: 'GPU_KEY' } } },
      { GPU_KEY: 'sk-x' },
    );
    const ready = await withKey.resolve({ model: 'coder' });
    expect(ready).toMatchObject({ kind: 'ready', servedId: 'coder' });
    expect(ready.kind === 'ready' && ready.apiKey).toBe('sk-x');
    expect(JSON.stringify(ready)).not.toContain('sk-x');
  });

  it('answers a broken models.yaml with a config_error until the file is fixed', async () => {
    const paths = await configFile({ endpoints: { gpu: { base_url: 'not a url' } } });
    const registry = createRegistry({ paths, env: {} });
    const resolution = await registry.resolve({ model: 'x' });
    expect(resolution.kind).toBe('config_error');
    expect(resolution.kind === 'config_error' && resolution.issues[0]?.path).toBe(
      'endpoints.gpu.base_url',
    );
    expect((await registry.defaults()).max_turns).toBe(60);
    const emu = await emulator({ backend: 'vllm', servedNames: ['x'] });
    await writeFile(paths.user, stringify({ endpoints: { gpu: { base_url: emu.url } } }));
    expect(await registry.resolve({ model: 'x' })).toMatchObject({ kind: 'ready', servedId: 'x' });
  });
});

describe('Registry.snapshot', () => {
  it('lists which menu entries run where', async () => {
    const emu = await emulator({ backend: 'vllm', servedNames: ['coder-a'] });
    const registry = await registryFor({
      endpoints: { v: { base_url: emu.url, backend: 'vllm' } },
      models: { 'coder-a': { notes: 'runs', host: 'box' }, 'coder-b': { notes: 'does not' } },
    });
    const snapshot = await registry.snapshot();
    expect(snapshot.models).toEqual([
      {
        name: 'coder-a',
        notes: 'runs',
        host: 'box',
        available: true,
        running: true,
        endpoint: 'v',
        served_model: 'coder-a',
        served_as: 'coder-a',
        context: 32768,
        context_source: 'probe',
      },
      { name: 'coder-b', notes: 'does not', available: false, running: false },
    ]);
  });
});
