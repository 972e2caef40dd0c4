/**
 * The LM Studio personality against docs/reference/ollama-lmstudio.md §6 (LM Studio is closed source:
 * its docs and the behaviour reported in issues). Each test names what it checks; [inferred] choices of
 * the emulator are asserted as such so a capture that contradicts them shows up here.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { parseSse } from '../support/llama-fixtures.js';
import { waitFor } from '../support/wait.js';

const KEY = 'qwen/qwen3-coder-30b';
const OTHER = 'google/gemma-4-26b-a4b';
const TOOLS = [{ name: 'Write', description: 'write', input_schema: { type: 'object' } }];

async function lmstudio(options: EmulatorOptions = {}) {
  const emu = await startEmulator({ backend: 'lmstudio', ...options });
  onTestFinished(() => emu.close());
  return emu;
}

function post(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

function messages(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: KEY,
    max_tokens: 1000,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...extra,
  };
}

interface AnthropicError {
  type: string;
  error: { type: string; message: string };
}

interface V1Model {
  key: string;
  loaded_instances: { id: string; config: Record<string, unknown> }[];
  max_context_length: number;
}

interface V0Model {
  id: string;
  state: string;
  loaded_context_length?: number;
  max_context_length: number;
}

async function v1Models(url: string): Promise<V1Model[]> {
  return ((await (await fetch(`${url}/api/v1/models`)).json()) as { models: V1Model[] }).models;
}

async function v0Models(url: string): Promise<V0Model[]> {
  return ((await (await fetch(`${url}/api/v0/models`)).json()) as { data: V0Model[] }).data;
}

describe('LM Studio personality: model state (§6 "Model state")', () => {
  it('§6 GET /api/v1/models has the documented shape: loaded_instances[].config holds the window and parallel', async () => {
    const emu = await lmstudio({ nCtx: 16384, nCtxTrain: 262144 });
    const response = await fetch(`${emu.url}/api/v1/models`);
    const body = (await response.json()) as { models: Record<string, unknown>[] };
    const model = body.models[0] ?? {};
    expect(Object.keys(model)).toEqual([
      'type',
      'publisher',
      'key',
      'display_name',
      'architecture',
      'quantization',
      'size_bytes',
      'params_string',
      'loaded_instances',
      'max_context_length',
      'format',
      'capabilities',
      'description',
      'variants',
      'selected_variant',
    ]);
    expect(model).toMatchObject({
      type: 'llm',
      publisher: 'qwen',
      key: KEY,
      display_name: 'Qwen3 Coder 30B',
      quantization: { name: 'Q4_K_M', bits_per_weight: 4 },
      max_context_length: 262144,
      format: 'gguf',
      capabilities: { vision: false, trained_for_tool_use: true },
      description: null,
      variants: [`${KEY}@q4_k_m`],
      selected_variant: `${KEY}@q4_k_m`,
    });
    expect(model.loaded_instances).toEqual([
      {
        id: KEY,
        config: {
          context_length: 16384,
          eval_batch_size: 512,
          parallel: 4,
          flash_attention: true,
          num_experts: 8,
          offload_kv_cache_to_gpu: true,
        },
      },
    ]);
  });

  it('§6 loaded_instances is [] for a model that is not loaded; config.parallel follows `parallel`', async () => {
    const emu = await lmstudio({ servedNames: [KEY, OTHER], loadedNames: [OTHER], parallel: 2 });
    const models = await v1Models(emu.url);
    expect(models.map((model) => [model.key, model.loaded_instances.length])).toEqual([
      [KEY, 0],
      [OTHER, 1],
    ]);
    expect(models[1]?.loaded_instances[0]?.config.parallel).toBe(2);
  });

  it('§6 GET /api/v0/models: state loaded / not-loaded, loaded_context_length only on the loaded one', async () => {
    const emu = await lmstudio({ servedNames: [KEY, OTHER], loadedNames: [KEY], nCtx: 8192 });
    const response = await fetch(`${emu.url}/api/v0/models`);
    const body = (await response.json()) as { data: Record<string, unknown>[]; object: string };
    expect(Object.keys(body)).toEqual(['data', 'object']);
    expect(body.object).toBe('list');
    expect(body.data[0]).toEqual({
      id: KEY,
      object: 'model',
      type: 'llm',
      publisher: 'qwen',
      arch: 'qwen3moe',
      compatibility_type: 'gguf',
      quantization: 'Q4_K_M',
      state: 'loaded',
      max_context_length: 262144,
      loaded_context_length: 8192,
      capabilities: ['tool_use'],
    });
    expect(body.data[1]).toMatchObject({ id: OTHER, state: 'not-loaded' });
    expect(body.data[1]).not.toHaveProperty('loaded_context_length');
    const one = (await (await fetch(`${emu.url}/api/v0/models/${OTHER}`)).json()) as V0Model;
    expect([one.id, one.state]).toEqual([OTHER, 'not-loaded']);
  });

  it('§6 the lists are pretty-printed with two spaces, as the captured curl outputs (zed#33938)', async () => {
    const emu = await lmstudio();
    const text = await (await fetch(`${emu.url}/api/v0/models`)).text();
    expect(text.startsWith('{\n  "data": [\n    {\n      "id": "qwen/qwen3-coder-30b",\n')).toBe(
      true,
    );
  });

  it('§6 GET /v1/models lists every downloaded model with owned_by organization_owner', async () => {
    const emu = await lmstudio({ servedNames: [KEY, OTHER], loadedNames: [] });
    const body = (await (await fetch(`${emu.url}/v1/models`)).json()) as {
      data: Record<string, unknown>[];
      object: string;
    };
    expect(body).toEqual({
      data: [
        { id: KEY, object: 'model', owned_by: 'organization_owner' },
        { id: OTHER, object: 'model', owned_by: 'organization_owner' },
      ],
      object: 'list',
    });
  });

  it('§6 setLoading(true) shows the loaded models as "loading" and holds /v1/messages until false', async () => {
    const emu = await lmstudio();
    emu.setLoading(true);
    expect((await v0Models(emu.url))[0]?.state).toBe('loading');
    const answer = fetch(`${emu.url}/v1/messages`, post(messages()));
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages');
    expect(record.status).toBe(0);
    emu.setLoading(false);
    expect((await answer).status).toBe(200);
    expect((await v0Models(emu.url))[0]?.state).toBe('loaded');
  });
});

describe('LM Studio personality: JIT loading (§6 "Loading")', () => {
  it('§6 a request for a downloaded model loads it with the 4096 default: "loading" meanwhile, then loaded', async () => {
    const emu = await lmstudio({ loadedNames: [], jitLoadMs: 1500 });
    expect((await v0Models(emu.url))[0]).toMatchObject({ state: 'not-loaded' });
    const answer = fetch(`${emu.url}/v1/messages`, post(messages()));
    const loading = await waitFor(
      async () => {
        const model = (await v0Models(emu.url))[0];
        return model?.state === 'loading' ? model : undefined;
      },
      { what: 'state "loading" in /api/v0/models' },
    );
    expect(loading.loaded_context_length).toBe(4096);
    expect((await answer).status).toBe(200);
    expect((await v0Models(emu.url))[0]).toMatchObject({
      state: 'loaded',
      loaded_context_length: 4096,
    });
    expect((await v1Models(emu.url))[0]?.loaded_instances[0]?.config.context_length).toBe(4096);
  });

  it('§6 the JIT-loaded 4096 window is what Claude Code then overflows: a 500 n_keep >= n_ctx', async () => {
    const emu = await lmstudio({ loadedNames: [] });
    const response = await fetch(
      `${emu.url}/v1/messages`,
      post(messages({ messages: [{ role: 'user', content: 'hello '.repeat(5000) }] })),
    );
    expect(response.status).toBe(500);
    expect(((await response.json()) as AnthropicError).error.message).toContain(
      '(n_keep: 5011>= n_ctx: 4096)',
    );
  });

  it('§6 Auto-Evict: a JIT load unloads the earlier JIT-loaded model, not the one loaded at start', async () => {
    const third = 'mistral/devstral-small';
    const emu = await lmstudio({ servedNames: [KEY, OTHER, third], loadedNames: [KEY] });
    expect((await fetch(`${emu.url}/v1/messages`, post(messages({ model: OTHER })))).status).toBe(
      200,
    );
    expect((await fetch(`${emu.url}/v1/messages`, post(messages({ model: third })))).status).toBe(
      200,
    );
    expect((await v0Models(emu.url)).map((model) => [model.id, model.state])).toEqual([
      [KEY, 'loaded'],
      [OTHER, 'not-loaded'],
      [third, 'loaded'],
    ]);
  });

  it('§6 jitContext sets the JIT window', async () => {
    const emu = await lmstudio({ loadedNames: [], jitContext: 32768 });
    expect((await fetch(`${emu.url}/v1/messages`, post(messages()))).status).toBe(200);
    expect((await v0Models(emu.url))[0]?.loaded_context_length).toBe(32768);
  });
});

describe('LM Studio personality: /v1/messages (§6 "Endpoints")', () => {
  it('§6 a role:"system" inside messages is 400 "request.messages.N.role: Invalid discriminator value"', async () => {
    const emu = await lmstudio();
    const response = await fetch(
      `${emu.url}/v1/messages`,
      post(
        messages({
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'system', content: 'Be brief.' },
          ],
        }),
      ),
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          "request.messages.1.role: Invalid discriminator value. Expected 'user' | 'assistant'",
      },
    });
  });

  it('§6 the discriminator error names the index of the first offending message, whatever strictTemplate says', async () => {
    const emu = await lmstudio({ strictTemplate: false });
    const response = await fetch(
      `${emu.url}/v1/messages`,
      post(
        messages({
          messages: [
            { role: 'user', content: 'a' },
            { role: 'assistant', content: 'b' },
            { role: 'user', content: 'c' },
            { role: 'system', content: 'd' },
          ],
        }),
      ),
    );
    expect(((await response.json()) as AnthropicError).error.message).toMatch(
      /^request\.messages\.3\.role: /,
    );
  });

  it.each([false, true])(
    '§6 overflow (prompt ≥ loaded window) is HTTP 500 api_error, not a truncation (old wording: %s)',
    async (lmstudioOldWording) => {
      const emu = await lmstudio({ nCtx: 4096, lmstudioOldWording });
      const response = await fetch(
        `${emu.url}/v1/messages`,
        post(
          messages({ stream: true, messages: [{ role: 'user', content: 'hello '.repeat(5000) }] }),
        ),
      );
      // Before any SSE byte: plain JSON even for stream:true.
      expect(response.status).toBe(500);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const message = lmstudioOldWording
        ? 'Trying to keep the first 5011 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input'
        : 'The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 5011>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input.';
      expect(await response.json()).toEqual({
        type: 'error',
        error: { type: 'api_error', message },
      });
    },
  );

  it('§6 the overflow boundary: a prompt of window − 1 tokens runs, window tokens fail', async () => {
    const probe = await lmstudio({ nCtx: 262144 });
    await fetch(`${probe.url}/v1/messages`, post(messages()));
    const tokens = (await probe.waitForRequest((r) => r.status === 200)).promptTokens ?? 0;
    expect(tokens).toBe(14);
    const fits = await lmstudio({ nCtx: tokens + 1 });
    expect((await fetch(`${fits.url}/v1/messages`, post(messages()))).status).toBe(200);
    const full = await lmstudio({ nCtx: tokens });
    expect((await fetch(`${full.url}/v1/messages`, post(messages()))).status).toBe(500);
  });

  it('§6 the context_overflow fault is that 500 with the real counts', async () => {
    const emu = await lmstudio({ nCtx: 32768 });
    emu.injectFaults([{ kind: 'context_overflow' }]);
    const response = await fetch(`${emu.url}/v1/messages`, post(messages()));
    expect(response.status).toBe(500);
    expect(((await response.json()) as AnthropicError).error.message).toContain(
      '(n_keep: 14>= n_ctx: 32768)',
    );
  });

  it('§6 stream: standard Anthropic framing, message_start with usage, ping, each block start/delta/stop, tool input {}', async () => {
    const emu = await lmstudio({
      script: [
        {
          thinking: 'Plan.',
          text: 'Writing.',
          toolCalls: [{ name: 'Write', input: { file_path: 'a.txt' } }],
        },
      ],
    });
    const response = await fetch(
      `${emu.url}/v1/messages`,
      post(messages({ stream: true, tools: TOOLS })),
    );
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('x-powered-by')).toBe('Express');
    const events = parseSse(await response.text());
    expect(events.map((event) => event.event).join(' ')).toMatch(
      /^message_start ping content_block_start( content_block_delta)+ content_block_stop content_block_start( content_block_delta)+ content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop$/,
    );
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages' && r.status === 200);
    const start = events[0]?.data as { message: Record<string, unknown> };
    expect(start.message).toEqual({
      id: start.message.id,
      type: 'message',
      role: 'assistant',
      model: KEY,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: record.promptTokens, output_tokens: 0 },
    });
    const toolStart = events.filter((event) => event.event === 'content_block_start')[2]?.data as {
      content_block: { id: string };
    };
    expect(toolStart).toEqual({
      type: 'content_block_start',
      index: 2,
      content_block: { type: 'tool_use', id: toolStart.content_block.id, name: 'Write', input: {} },
    });
    expect(events.at(-2)?.data).toMatchObject({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
    });
  });

  it('§6 non-stream: the Anthropic message with stop_sequence null and usage', async () => {
    const emu = await lmstudio({ script: [{ text: 'Done.' }] });
    const body = (await (
      await fetch(`${emu.url}/v1/messages`, post(messages({ tools: TOOLS })))
    ).json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual([
      'id',
      'type',
      'role',
      'model',
      'content',
      'stop_reason',
      'stop_sequence',
      'usage',
    ]);
    expect(body).toMatchObject({
      content: [{ type: 'text', text: 'Done.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 246 },
    });
  });

  it('§6 an unknown model is 400 "Invalid model identifier" listing downloaded ones [status inferred]', async () => {
    const emu = await lmstudio({ servedNames: [KEY, OTHER] });
    const response = await fetch(`${emu.url}/v1/messages`, post(messages({ model: 'o4-mini' })));
    expect(response.status).toBe(400);
    expect(((await response.json()) as AnthropicError).error).toEqual({
      type: 'invalid_request_error',
      message: `Invalid model identifier "o4-mini". Please specify a valid downloaded model (e.g., ${KEY}, ${OTHER}).`,
    });
    // The key without its publisher, or with a variant, names the model.
    for (const model of ['qwen3-coder-30b', `${KEY}@q4_k_m`]) {
      expect((await fetch(`${emu.url}/v1/messages`, post(messages({ model })))).status).toBe(200);
    }
  });

  it('§6 parallel 4 (Max Concurrent Predictions): a fifth request queues and completes', async () => {
    const emu = await lmstudio({ script: [{ text: 'one two three' }] });
    emu.injectFaults([{ kind: 'stall', afterEvents: 2, ms: 60_000, count: 4 }]);
    const stalled = Array.from({ length: 4 }, () => new AbortController());
    const readers = await Promise.all(
      stalled.map(async (controller) => {
        const response = await fetch(`${emu.url}/v1/messages`, {
          ...post(messages({ stream: true })),
          signal: controller.signal,
        });
        const reader = response.body?.getReader();
        await reader?.read();
        return reader;
      }),
    );
    expect(readers).toHaveLength(4);
    const fifth = fetch(`${emu.url}/v1/messages`, post(messages()));
    const waiting = await waitFor(
      () => emu.requests.find((r) => r.id === 5 && r.promptTokens !== undefined),
      { what: 'the fifth request to be counted' },
    );
    expect(waiting.status).toBe(0);
    stalled[0]?.abort();
    expect((await fifth).status).toBe(200);
    for (const controller of stalled) controller.abort();
  });
});

describe('LM Studio personality: auth and unknown routes (§6)', () => {
  it.each([
    [{ 'x-api-key': 'k' }, 200],
    [{ authorization: 'Bearer k' }, 200],
    [{ authorization: 'bearer k' }, 200],
    [{ 'x-api-key': 'wrong' }, 401],
    [{}, 401],
  ])('§6 Require Authentication: %j → %i on /v1/messages', async (headers, status) => {
    const emu = await lmstudio({ apiKey: 'k' });
    const response = await fetch(`${emu.url}/v1/messages`, post(messages(), headers));
    expect(response.status).toBe(status);
    if (status === 401) {
      // [inferred] the body is undocumented.
      expect(((await response.json()) as AnthropicError).error.type).toBe('authentication_error');
    }
  });

  it('§6 Require Authentication covers every route, the model lists too', async () => {
    const emu = await lmstudio({ apiKey: 'k' });
    for (const path of ['/api/v1/models', '/api/v0/models', '/v1/models', '/nope']) {
      expect((await fetch(`${emu.url}${path}`)).status, path).toBe(401);
      expect(
        (await fetch(`${emu.url}${path}`, { headers: { authorization: 'Bearer k' } })).status,
        path,
      ).toBe(200);
    }
  });

  it('§6 without the option any key (or none) is accepted', async () => {
    const emu = await lmstudio();
    const response = await fetch(`${emu.url}/v1/messages`, post(messages(), { 'x-api-key': 'x' }));
    expect(response.status).toBe(200);
  });

  it('§6 an unknown route is HTTP 200 with the error, byte for byte as lmstudio-bug-tracker#618 captured it', async () => {
    const emu = await lmstudio();
    const response = await fetch(`${emu.url}/chat/completions`, post({ model: 'any-model-name' }));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-powered-by')).toBe('Express');
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    // The captured Content-Length and ETag: the same body, Express's weak ETag of it.
    expect(response.headers.get('content-length')).toBe('67');
    expect(response.headers.get('etag')).toBe('W/"43-qTdCaLfEMe8wb/ShYO0yTUTunEg"');
    expect(await response.text()).toBe(
      '{"error":"Unexpected endpoint or method. (POST /chat/completions)"}',
    );
    const query = await fetch(`${emu.url}/debug/default/view?panel=config`);
    expect(await query.json()).toEqual({
      error: 'Unexpected endpoint or method. (GET /debug/default/view?panel=config)',
    });
  });

  it('§6 count_tokens (undocumented) gets the unknown-route 200 [inferred]', async () => {
    const emu = await lmstudio();
    const response = await fetch(`${emu.url}/v1/messages/count_tokens`, post(messages()));
    expect([response.status, await response.json()]).toEqual([
      200,
      { error: 'Unexpected endpoint or method. (POST /v1/messages/count_tokens)' },
    ]);
  });
});

describe('localagents emulate --backend lmstudio', () => {
  it('takes --loaded, --jit-context, --jit-load-ms and --lmstudio-old-wording', async () => {
    const stdout = new PassThrough();
    const controller = new AbortController();
    const running = runCli(
      [
        'emulate',
        '--backend',
        'lmstudio',
        '--port',
        '0',
        '--served-name',
        KEY,
        '--served-name',
        OTHER,
        '--loaded',
        OTHER,
        '--jit-context',
        '2048',
        '--jit-load-ms',
        '0',
        '--lmstudio-old-wording',
      ],
      { stdout, stderr: new PassThrough(), env: {}, cwd: process.cwd(), signal: controller.signal },
    );
    onTestFinished(async () => {
      controller.abort();
      await running;
    });
    const url = await new Promise<string>((resolve) =>
      stdout.on('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
    );
    expect((await v0Models(url)).map((model) => model.state)).toEqual(['not-loaded', 'loaded']);
    const response = await fetch(
      `${url}/v1/messages`,
      post(messages({ messages: [{ role: 'user', content: 'hello '.repeat(3000) }] })),
    );
    expect(response.status).toBe(500);
    expect(((await response.json()) as AnthropicError).error.message).toMatch(
      /^Trying to keep the first \d+ tokens .* context length of only 2048 tokens/,
    );
  });
});
