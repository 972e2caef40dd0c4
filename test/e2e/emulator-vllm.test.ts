import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { parseSse } from '../support/llama-fixtures.js';

async function vllm(options: EmulatorOptions = {}) {
  const emu = await startEmulator({ backend: 'vllm', nCtx: 65536, ...options });
  onTestFinished(() => emu.close());
  return emu;
}

const tools = [{ name: 'Write', description: 'write', input_schema: { type: 'object' } }];
const request = (extra: Record<string, unknown> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    model: 'qwen3-coder',
    max_tokens: 1000,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...extra,
  }),
});

describe('vLLM personality', () => {
  it('lists one card per served name and LoRA cards with parent set and no max_model_len', async () => {
    const emu = await vllm({
      servedNames: ['my-model', 'alias'],
      loras: [{ name: 'sql-lora', base: 'my-model' }],
    });
    const { object, data } = (await (await fetch(`${emu.url}/v1/models`)).json()) as {
      object: string;
      data: Record<string, unknown>[];
    };
    expect(object).toBe('list');
    expect(data.map((card) => [card.id, card.owned_by, card.parent, card.max_model_len])).toEqual([
      ['my-model', 'vllm', null, 65536],
      ['alias', 'vllm', null, 65536],
      ['sql-lora', 'vllm', 'my-model', null],
    ]);
    expect(Object.keys(data[0] ?? {})).toEqual([
      'id',
      'object',
      'created',
      'owned_by',
      'root',
      'parent',
      'max_model_len',
      'permission',
    ]);
  });

  it('answers /health with an empty 200 and /version with the version', async () => {
    const emu = await vllm({ apiKey: 'k' });
    const health = await fetch(`${emu.url}/health`);
    expect([health.status, await health.text()]).toEqual([200, '']);
    const version = (await (await fetch(`${emu.url}/version`)).json()) as { version: string };
    expect(version.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('exposes vllm: metrics with engine and model_name labels that move with traffic', async () => {
    const emu = await vllm({ servedNames: ['my-model'] });
    const post = {
      ...request(),
      body: JSON.stringify({
        model: 'my-model',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'repeat me '.repeat(100) }],
      }),
    };
    await (await fetch(`${emu.url}/v1/messages`, post)).json();
    await (await fetch(`${emu.url}/v1/messages`, post)).json();
    const text = await (await fetch(`${emu.url}/metrics`)).text();
    const value = (name: string): number =>
      Number(
        new RegExp(`^vllm:${name}\\{engine="0",model_name="my-model"\\} (\\S+)$`, 'm').exec(
          text,
        )?.[1],
      );
    for (const name of [
      'num_requests_running',
      'num_requests_waiting',
      'kv_cache_usage_perc',
      'prompt_tokens_total',
      'generation_tokens_total',
      'prefix_cache_queries_total',
      'prefix_cache_hits_total',
      'prompt_tokens_cached_total',
    ]) {
      expect(value(name), name).not.toBeNaN();
    }
    expect(value('prefix_cache_hits_total')).toBeGreaterThan(0);
    expect(value('prefix_cache_queries_total')).toBe(value('prompt_tokens_total'));
    expect(value('num_requests_running')).toBe(0);
  });

  it('answers 404 NotFoundError for a model name it does not serve', async () => {
    const emu = await vllm();
    const response = await fetch(
      `${emu.url}/v1/messages`,
      request({ model: 'claude-sonnet-4-5-20250929' }),
    );
    expect([response.status, await response.json()]).toEqual([
      404,
      {
        type: 'error',
        error: {
          type: 'NotFoundError',
          message: 'The model `claude-sonnet-4-5-20250929` does not exist.',
        },
      },
    ]);
  });

  it.each([
    [
      'at-least',
      "This model's maximum context length is 4096 tokens. However, you requested 4090 output tokens and your prompt contains at least 7 input tokens, for a total of at least 4097 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=7)",
    ],
    [
      'too-large',
      "'max_tokens' or 'max_completion_tokens' is too large: 4090. This model's maximum context length is 4096 tokens and your request has 14 input tokens (4090 > 4096 - 14).",
    ],
  ] as const)(
    'rejects prompt + max_tokens over max_model_len with the %s wording, even when streaming',
    async (wording, message) => {
      const emu = await vllm({ nCtx: 4096, vllmContextWording: wording });
      const response = await fetch(
        `${emu.url}/v1/messages`,
        request({ max_tokens: 4090, stream: true }),
      );
      const body = (await response.json()) as {
        type: string;
        error: { type: string; message: string };
      };
      expect([response.status, body.type, body.error.type]).toEqual([
        400,
        'error',
        'BadRequestError',
      ]);
      expect(body.error.message).toBe(message);
    },
  );

  it.each([
    [{ authorization: 'Bearer k' }, 200],
    [{ 'x-api-key': 'k' }, 401],
    [{}, 401],
  ])('accepts only Bearer keys on /v1/* (%j → %i)', async (headers, status) => {
    const emu = await vllm({ apiKey: 'k' });
    const response = await fetch(`${emu.url}/v1/models`, { headers });
    expect(response.status).toBe(status);
    if (status === 401) expect(await response.json()).toEqual({ error: 'Unauthorized' });
  });

  it('answers 400 to tool requests by default, like vLLM without --enable-auto-tool-choice', async () => {
    const emu = await vllm();
    const response = await fetch(`${emu.url}/v1/messages`, request({ tools, stream: true }));
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: {
        type: 'BadRequestError',
        message:
          '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
      },
    });
  });

  it('streams each block start, deltas and stop before the next block, with input {} on tool_use', async () => {
    const emu = await vllm({
      toolChoice: true,
      script: [{ text: 'Writing.', toolCalls: [{ name: 'Write', input: { file_path: 'a' } }] }],
    });
    const response = await fetch(`${emu.url}/v1/messages`, request({ tools, stream: true }));
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const text = await response.text();
    const events = parseSse(text);
    // Key order as pydantic serialises the events (§1.12): content_block before index.
    expect(text).toMatch(
      /\ndata: \{"type":"content_block_start","content_block":\{"type":"tool_use","id":"chatcmpl-tool-[0-9a-f]{32}","name":"Write","input":\{\}\},"index":1\}\n/,
    );
    expect(text).toContain(
      '\ndata: {"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\\"file_path\\":\\"a\\"}"},"index":1}\n',
    );
    expect(events.map((e) => e.event).join(' ')).toMatch(
      /^message_start content_block_start( content_block_delta)+ content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop$/,
    );
    const toolStart = events.filter((e) => e.event === 'content_block_start')[1]?.data as
      { content_block: { id: string } } | undefined;
    const toolId = toolStart?.content_block.id ?? '';
    expect(toolStart).toEqual({
      type: 'content_block_start',
      content_block: {
        type: 'tool_use',
        id: toolId,
        name: 'Write',
        input: {},
      },
      index: 1,
    });
    expect(toolId).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    expect(events.find((e) => e.event === 'message_delta')?.data).toMatchObject({
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 246 },
    });
  });

  it('returns the non-stream message without null fields and echoes the requested model', async () => {
    const emu = await vllm({ servedNames: ['my-model'] });
    const response = await fetch(`${emu.url}/v1/messages`, request({ model: 'my-model' }));
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual([
      'id',
      'type',
      'role',
      'content',
      'model',
      'stop_reason',
      'usage',
    ]);
    expect(body).toMatchObject({
      model: 'my-model',
      stop_reason: 'end_turn',
      usage: { input_tokens: 14, output_tokens: 6 },
    });
  });

  it('counts tokens with the context_management echo', async () => {
    const emu = await vllm();
    const response = await fetch(`${emu.url}/v1/messages/count_tokens`, request());
    expect(await response.json()).toEqual({
      input_tokens: 14,
      context_management: { original_input_tokens: 14 },
    });
  });

  it.each([
    [
      'malformed JSON',
      '{"model": "qwen3-coder",',
      "1 validation error:\n  {'type': 'json_invalid', 'loc': ('body',), 'msg': 'JSON decode error'",
    ],
    [
      'an array body',
      '[]',
      "1 validation error:\n  {'type': 'model_attributes_type', 'loc': ('body',)",
    ],
    [
      'no max_tokens',
      JSON.stringify({ model: 'qwen3-coder', messages: [{ role: 'user', content: 'hi' }] }),
      "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'max_tokens'), 'msg': 'Field required'}",
    ],
    [
      'neither messages nor max_tokens',
      JSON.stringify({ model: 'qwen3-coder' }),
      "2 validation errors:\n  {'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}\n  {'type': 'missing', 'loc': ('body', 'max_tokens'), 'msg': 'Field required'}",
    ],
  ])(
    'answers %s on /v1/messages with the OpenAI-shaped 400 "Bad Request" (§1.5), not an Anthropic error',
    async (_, body, message) => {
      const emu = await vllm();
      const response = await fetch(`${emu.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      const text = await response.text();
      expect(text).toMatch(
        /^\{"error":\{"message":".*","type":"Bad Request","param":null,"code":400\}\}$/s,
      );
      const parsed = JSON.parse(text) as { type?: string; error: { message: string } };
      expect(parsed.type).toBeUndefined();
      // The whole message for missing fields; for bad JSON its start (the rest is the parser's).
      expect(parsed.error.message.slice(0, message.length)).toBe(message);
      if (message.includes("'missing'")) expect(parsed.error.message).toBe(message);
    },
  );

  it('streams message_start with type and role, every event in pydantic key order (§1.12)', async () => {
    const emu = await vllm({ plainReply: { text: 'Hello' } });
    const response = await fetch(`${emu.url}/v1/messages`, request({ stream: true }));
    const text = await response.text();
    const id = /"id":"(chatcmpl-[0-9a-f]{32})"/.exec(text)?.[1];
    expect(id).toBeDefined();
    // Raw text, not parsed objects: toEqual would accept any key order.
    expect(text).toBe(
      [
        'event: message_start',
        `data: {"type":"message_start","message":{"id":"${id}","type":"message","role":"assistant","content":[],"model":"qwen3-coder","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":14,"output_tokens":0}}}`,
        '',
        'event: content_block_start',
        'data: {"type":"content_block_start","content_block":{"type":"text","text":""},"index":0}',
        '',
        'event: content_block_delta',
        'data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hello"},"index":0}',
        '',
        'event: content_block_stop',
        'data: {"type":"content_block_stop","index":0}',
        '',
        'event: message_delta',
        'data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":14,"output_tokens":1}}',
        '',
        'event: message_stop',
        'data: {"type":"message_stop"}',
        '',
        '',
      ].join('\n'),
    );
  });

  it('ends a stream with a vLLM event: error and no message_stop on an sse_error fault from the admin route', async () => {
    const emu = await vllm({ plainReply: { text: 'Hello there, friend' } });
    const queued = await fetch(`${emu.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ faults: [{ kind: 'sse_error', afterEvents: 3 }] }),
    });
    expect(await queued.json()).toEqual({ queued: 1 });
    const response = await fetch(`${emu.url}/v1/messages`, request({ stream: true }));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(parseSse(text).map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect(
      text.endsWith(
        'event: error\ndata: {"type":"error","error":{"type":"internal_error","message":"Internal Server Error"}}\n\n',
      ),
    ).toBe(true);
  });

  it('guards /v1/messages and count_tokens with Bearer only and leaves /health, /metrics, /version open (§1.4)', async () => {
    const emu = await vllm({ apiKey: 'k' });
    const post = (path: string, headers: Record<string, string>) =>
      fetch(`${emu.url}${path}`, {
        ...request(),
        headers: { 'content-type': 'application/json', ...headers },
      });
    const refused = [
      await post('/v1/messages', { 'x-api-key': 'k' }),
      await post('/v1/messages', {}),
      await post('/v1/messages', { authorization: 'Bearer wrong' }),
      await post('/v1/messages/count_tokens', { 'x-api-key': 'k' }),
    ];
    for (const response of refused) {
      expect([response.status, await response.json()]).toEqual([401, { error: 'Unauthorized' }]);
    }
    // The scheme is matched case-insensitively.
    const accepted = [
      await post('/v1/messages', { authorization: 'Bearer k' }),
      await post('/v1/messages', { authorization: 'bearer k' }),
      await post('/v1/messages/count_tokens', { authorization: 'Bearer k' }),
    ];
    expect(accepted.map((response) => response.status)).toEqual([200, 200, 200]);
    const health = await fetch(`${emu.url}/health`);
    expect([health.status, await health.text()]).toEqual([200, '']);
    const metrics = await fetch(`${emu.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(
      /^vllm:num_requests_running\{engine="0",model_name="qwen3-coder"\} /m,
    );
    expect((await fetch(`${emu.url}/version`)).status).toBe(200);
  });
});
