/**
 * The Ollama personality against docs/reference/ollama-lmstudio.md §1–§5 (Ollama v0.32.15 source).
 * Each test names the section it checks. Real HTTP on 127.0.0.1; byte-level checks over a raw socket.
 */
import { request as httpRequest } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { TRUNCATED_PROMPT_REPLY } from '../../src/emulator/script.js';
import { parseSse } from '../support/llama-fixtures.js';
import { headerMap, parseRawResponse, sendRaw } from '../support/raw-http.js';
import { waitFor } from '../support/wait.js';

async function ollama(options: EmulatorOptions = {}) {
  const emu = await startEmulator({ backend: 'ollama', ...options });
  onTestFinished(() => emu.close());
  return emu;
}

const MODEL = 'qwen3-coder:30b';
const TOOLS = [{ name: 'Write', description: 'write', input_schema: { type: 'object' } }];
const LONG = 'hello '.repeat(9000);

function post(body: unknown): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

function messages(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: MODEL,
    max_tokens: 1000,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...extra,
  };
}

/** A raw HTTP/1.1 POST of `body`, closing the connection after the answer. */
function rawPost(path: string, body: unknown): Buffer {
  const text = JSON.stringify(body);
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
}

interface ErrorBody {
  type: string;
  error: { type: string; message: string };
  request_id: string;
}

describe('Ollama personality: routes (§1, §3, §5)', () => {
  it('§3 GET / says "Ollama is running" as text, with no Server header', async () => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/`);
    expect([response.status, await response.text()]).toEqual([200, 'Ollama is running']);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(response.headers.get('server')).toBeNull();
  });

  it('§3 GET and HEAD /api/version answer {"version":"0.32.15"}, or the configured version', async () => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/api/version`);
    expect(await response.text()).toBe('{"version":"0.32.15"}');
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect((await fetch(`${emu.url}/api/version`, { method: 'HEAD' })).status).toBe(200);
    const old = await ollama({ ollamaVersion: '0.29.3' });
    expect(await (await fetch(`${old.url}/api/version`)).json()).toEqual({ version: '0.29.3' });
  });

  it('§3 /api/tags lists the installed models newest first, details.context_length = trained length', async () => {
    const emu = await ollama({ servedNames: [MODEL, 'llama3.2:3b'], nCtxTrain: 131072 });
    const body = (await (await fetch(`${emu.url}/api/tags`)).json()) as {
      models: Record<string, unknown>[];
    };
    expect(body.models.map((model) => model.name)).toEqual([MODEL, 'llama3.2:3b']);
    const first = body.models[0] ?? {};
    expect(Object.keys(first)).toEqual([
      'name',
      'model',
      'modified_at',
      'size',
      'digest',
      'details',
      'capabilities',
    ]);
    expect(first.details).toEqual({
      parent_model: '',
      format: 'gguf',
      family: 'qwen3moe',
      families: ['qwen3moe'],
      parameter_size: '30.5B',
      quantization_level: 'Q4_K_M',
      context_length: 131072,
      embedding_length: 2048,
    });
    expect(first.capabilities).toEqual(['completion', 'tools', 'thinking']);
    expect(first.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('§3 /api/tags before v0.30 (no model-list cache) has no context_length in details', async () => {
    const emu = await ollama({ ollamaVersion: '0.29.6' });
    const body = (await (await fetch(`${emu.url}/api/tags`)).json()) as {
      models: { details: Record<string, unknown> }[];
    };
    expect(body.models[0]?.details).not.toHaveProperty('context_length');
    expect(body.models[0]?.details).not.toHaveProperty('embedding_length');
  });

  it('§3 /api/ps lists only loaded models, fields exactly as the sample, context_length = num_ctx', async () => {
    const emu = await ollama({
      servedNames: [MODEL, 'llama3.2:3b'],
      loadedNames: [MODEL],
      nCtx: 16384,
    });
    const body = (await (await fetch(`${emu.url}/api/ps`)).json()) as {
      models: Record<string, unknown>[];
    };
    expect(body.models).toHaveLength(1);
    const entry = body.models[0] ?? {};
    expect(Object.keys(entry)).toEqual([
      'name',
      'model',
      'size',
      'digest',
      'details',
      'expires_at',
      'size_vram',
      'context_length',
    ]);
    expect(entry).toMatchObject({ name: MODEL, model: MODEL, context_length: 16384 });
    expect(entry.details).toEqual({
      parent_model: '',
      format: 'gguf',
      family: 'qwen3moe',
      families: ['qwen3moe'],
      parameter_size: '30.5B',
      quantization_level: 'Q4_K_M',
    });
    expect(Date.parse(String(entry.expires_at))).toBeGreaterThan(Date.now());
  });

  it('§3 /api/ps is {"models":[]} when nothing is loaded; the window is capped at the trained length', async () => {
    const none = await ollama({ loadedNames: [] });
    expect(await (await fetch(`${none.url}/api/ps`)).text()).toBe('{"models":[]}');
    const capped = await ollama({ nCtx: 65536, nCtxTrain: 40960 });
    const body = (await (await fetch(`${capped.url}/api/ps`)).json()) as {
      models: { context_length: number }[];
    };
    expect(body.models[0]?.context_length).toBe(40960);
  });

  it('§3 /api/show: model_info["<arch>.context_length"], the num_ctx parameter line, the other fields', async () => {
    const emu = await ollama({ numCtxParameter: 65536, nCtxTrain: 262144 });
    const response = await fetch(`${emu.url}/api/show`, post({ model: MODEL }));
    const body = (await response.json()) as Record<string, unknown> & {
      model_info: Record<string, unknown>;
      parameters: string;
    };
    expect(Object.keys(body)).toEqual([
      'license',
      'modelfile',
      'parameters',
      'template',
      'details',
      'model_info',
      'tensors',
      'capabilities',
      'modified_at',
    ]);
    const arch = String(body.model_info['general.architecture']);
    expect(arch).toBe('qwen3moe');
    expect(body.model_info[`${arch}.context_length`]).toBe(262144);
    // Go's `%-*s %#v` with a width of 30.
    expect(body.parameters.split('\n')).toContain(`num_ctx${' '.repeat(24)}65536`);
    expect(body.parameters.split('\n')).toContain(`stop${' '.repeat(27)}"<|im_end|>"`);
    expect(body.capabilities).toEqual(['completion', 'tools', 'thinking']);
    // model_info is a Go map: keys sorted.
    const keys = Object.keys(body.model_info);
    expect(keys).toEqual([...keys].sort());
    // Without the Modelfile parameter, no num_ctx line, and the window is nCtx (32768).
    const plain = await ollama();
    const plainBody = (await (
      await fetch(`${plain.url}/api/show`, post({ name: MODEL }))
    ).json()) as {
      parameters: string;
    };
    expect(plainBody.parameters).not.toContain('num_ctx');
  });

  it('§3 a Modelfile num_ctx is the window when nCtx is not given', async () => {
    const emu = await ollama({ numCtxParameter: 8192 });
    const body = (await (await fetch(`${emu.url}/api/ps`)).json()) as {
      models: { context_length: number }[];
    };
    expect(body.models[0]?.context_length).toBe(8192);
  });

  it.each([
    [{ model: 'qwen3' }, 404, { error: "model 'qwen3:latest' not found" }],
    [{ name: 'Nope:7B' }, 404, { error: "model 'Nope:7B' not found" }],
    [{}, 400, { error: 'model is required' }],
    ['', 400, { error: 'missing request body' }],
  ])('§3 /api/show %j → %i %j (the display name normalised)', async (body, status, answer) => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/api/show`, post(body));
    expect([response.status, await response.json()]).toEqual([status, answer]);
  });

  it('§3 GET /v1/models lists every pulled model, loaded or not; data is null when none is pulled', async () => {
    const emu = await ollama({ servedNames: [MODEL, 'me/custom:v1'], loadedNames: [] });
    const response = await fetch(`${emu.url}/v1/models`);
    const text = await response.text();
    expect(text.endsWith('}\n')).toBe(true);
    const body = JSON.parse(text) as { object: string; data: Record<string, unknown>[] };
    expect(body.object).toBe('list');
    expect(body.data.map((entry) => [entry.id, entry.object, entry.owned_by])).toEqual([
      [MODEL, 'model', 'library'],
      ['me/custom:v1', 'model', 'me'],
    ]);
    expect(Object.keys(body.data[0] ?? {})).toEqual(['id', 'object', 'created', 'owned_by']);
    const none = await ollama({ servedNames: [] });
    expect(await (await fetch(`${none.url}/v1/models`)).text()).toBe(
      '{"object":"list","data":null}\n',
    );
    const one = (await (await fetch(`${emu.url}/v1/models/${MODEL}`)).json()) as { id: string };
    expect(one.id).toBe(MODEL);
  });

  it('§1 count_tokens has no route: gin\'s plain-text 404 "404 page not found"', async () => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/v1/messages/count_tokens`, post(messages()));
    expect([response.status, await response.text()]).toEqual([404, '404 page not found']);
    expect(response.headers.get('content-type')).toBe('text/plain');
  });

  it('§1 GET /v1/messages is 405 "405 method not allowed" (HandleMethodNotAllowed)', async () => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/v1/messages`);
    expect([response.status, await response.text()]).toEqual([405, '405 method not allowed']);
  });

  it.each(['/metrics', '/health', '/slots', '/props'])(
    '§3 %s does not exist (404): Ollama has no metrics or health endpoint',
    async (path) => {
      const emu = await ollama();
      const response = await fetch(`${emu.url}${path}`);
      expect([response.status, await response.text()]).toEqual([404, '404 page not found']);
    },
  );

  it('§5 a loopback listener answers a foreign Host header with a bare 403; localhost is fine', async () => {
    const emu = await ollama();
    const status = (host: string): Promise<[number, string]> =>
      new Promise((resolve, reject) => {
        const req = httpRequest(`${emu.url}/api/version`, { headers: { host } }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve([res.statusCode ?? 0, text]));
        });
        req.on('error', reject);
        req.end();
      });
    expect(await status('evil.example.com')).toEqual([403, '']);
    expect((await status('localhost:11434'))[0]).toBe(200);
    expect((await status('192.168.1.20:11434'))[0]).toBe(200);
  });

  it('§5 keys are ignored: any x-api-key or Authorization passes, even with apiKey set', async () => {
    const emu = await ollama({ apiKey: 'secret' });
    const response = await fetch(`${emu.url}/v1/messages`, {
      ...post(messages()),
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'wrong',
        authorization: 'Bearer x',
      },
    });
    expect(response.status).toBe(200);
  });
});

describe('Ollama personality: /v1/messages validation and errors (§1, §2)', () => {
  it.each([
    ['{"model": x}', "invalid character 'x' looking for beginning of value"],
    ['', 'EOF'],
    ['{"model": "m", ', 'unexpected EOF'],
    ['{"model" "m"}', "invalid character '\"' after object key"],
    ['[1]', 'json: cannot unmarshal array into Go value of type anthropic.MessagesRequest'],
    [
      '{"model":"m","max_tokens":"100"}',
      'json: cannot unmarshal string into Go struct field MessagesRequest.max_tokens of type int',
    ],
    [
      '{"model":"m","max_tokens":1.5}',
      'json: cannot unmarshal number 1.5 into Go struct field MessagesRequest.max_tokens of type int',
    ],
    ['{}', 'model is required'],
    ['{"model":"m"}', 'max_tokens is required and must be positive'],
    ['{"model":"m","max_tokens":0,"messages":[]}', 'max_tokens is required and must be positive'],
    ['{"model":"m","max_tokens":10,"messages":[]}', 'messages is required'],
    [
      '{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"Bash","input":{}}]}]}',
      "tool_use block missing required 'id' field",
    ],
    [
      '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://x"}}]}]}',
      'invalid image source type: url. Only base64 images are supported.',
    ],
  ])('§1 validation order: %s → 400 %s', async (body, message) => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/v1/messages`, post(body));
    expect(response.status).toBe(400);
    // The middleware's AbortWithStatusJSON: gin's c.JSON, no trailing newline.
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const text = await response.text();
    expect(text.endsWith('}')).toBe(true);
    const parsed = JSON.parse(text) as ErrorBody;
    expect(Object.keys(parsed)).toEqual(['type', 'error', 'request_id']);
    expect(parsed.type).toBe('error');
    expect(parsed.error).toEqual({ type: 'invalid_request_error', message });
    expect(parsed.request_id).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('§2 an unknown model is 404 not_found_error with the name exactly as sent', async () => {
    const emu = await ollama();
    const response = await fetch(`${emu.url}/v1/messages`, post(messages({ model: 'Qwen3' })));
    expect(response.status).toBe(404);
    const body = (await response.json()) as ErrorBody;
    expect(body.error).toEqual({ type: 'not_found_error', message: "model 'Qwen3' not found" });
  });

  it('§2 names match case-insensitively and `qwen3` means `qwen3:latest`', async () => {
    const emu = await ollama({ servedNames: ['qwen3:latest', MODEL] });
    for (const model of ['qwen3', 'QWEN3:Latest', 'QWEN3-CODER:30B', 'library/qwen3']) {
      const response = await fetch(`${emu.url}/v1/messages`, post(messages({ model })));
      expect(response.status, model).toBe(200);
      // The reply names the model as the request did.
      expect(((await response.json()) as { model: string }).model).toBe(model);
    }
  });

  it('§1 an error before the first chunk is plain JSON even for stream:true, with the stream headers set', async () => {
    const emu = await ollama();
    const raw = parseRawResponse(
      await sendRaw(emu.url, rawPost('/v1/messages', messages({ model: 'gone', stream: true }))),
    );
    const headers = headerMap(raw.headers);
    expect(raw.statusLine).toBe('HTTP/1.1 404 Not Found');
    expect(headers.get('content-type')).toBe('application/json');
    // The middleware set these before ChatHandler answered.
    expect(headers.get('cache-control')).toBe('no-cache');
    const text = raw.body.toString();
    // Through the Anthropic writer: json.NewEncoder, a trailing newline.
    expect(text).toMatch(
      /^\{"type":"error","error":\{"type":"not_found_error","message":"model 'gone' not found"\},"request_id":"req_[0-9a-f]{24}"\}\n$/,
    );
  });

  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [429, 'rate_limit_error'],
    [503, 'overloaded_error'],
    [529, 'overloaded_error'],
    [500, 'api_error'],
    [502, 'api_error'],
  ])('§2 status → type table: a %i fault is typed %s', async (status, type) => {
    const emu = await ollama();
    emu.injectFaults([{ kind: 'status', status }]);
    const response = await fetch(`${emu.url}/v1/messages`, post(messages()));
    expect(response.status).toBe(status);
    const body = (await response.json()) as ErrorBody;
    expect(body.type).toBe('error');
    expect(body.error.type).toBe(type);
  });

  it('§2 a 503 fault carries the ErrMaxQueue message, two spaces and all', async () => {
    const emu = await ollama();
    emu.injectFaults([{ kind: 'status', status: 503 }]);
    const body = (await (
      await fetch(`${emu.url}/v1/messages`, post(messages()))
    ).json()) as ErrorBody;
    expect(body.error).toEqual({
      type: 'overloaded_error',
      message: 'server busy, please try again.  maximum pending requests exceeded',
    });
  });

  it('§1 strictTemplate (the qwen3.8 renderer ≤ v0.32.13): a mid-conversation system message is 500 api_error', async () => {
    const conversation = messages({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello.' },
      ],
    });
    const strict = await ollama({ strictTemplate: true });
    const response = await fetch(`${strict.url}/v1/messages`, post(conversation));
    expect(response.status).toBe(500);
    expect(((await response.json()) as ErrorBody).error).toEqual({
      type: 'api_error',
      message: 'system message must be at the beginning',
    });
    // v0.32.14+ (the default) renders it.
    const lenient = await ollama();
    expect((await fetch(`${lenient.url}/v1/messages`, post(conversation))).status).toBe(200);
  });
});

describe('Ollama personality: answers (§1)', () => {
  it('§1 non-stream: trailing newline, Go escaping of < > &, msg_ id, block order, no stop_sequence, two usage keys', async () => {
    const emu = await ollama({
      script: [
        {
          thinking: 'a < b',
          text: 'x > y & z',
          toolCalls: [{ name: 'Write', input: { file_path: '<f>', content: { z: 1, a: 2 } } }],
        },
      ],
    });
    const raw = parseRawResponse(
      await sendRaw(emu.url, rawPost('/v1/messages', messages({ tools: TOOLS }))),
    );
    expect(headerMap(raw.headers).get('content-type')).toBe('application/json');
    const text = raw.body.toString();
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toContain('"thinking":"a \\u003c b"');
    expect(text).toContain('"text":"x \\u003e y \\u0026 z"');
    expect(text).not.toMatch(/[<>&]/);
    const body = JSON.parse(text) as Record<string, unknown> & {
      content: Record<string, unknown>[];
    };
    expect(Object.keys(body)).toEqual([
      'id',
      'type',
      'role',
      'model',
      'content',
      'stop_reason',
      'usage',
    ]);
    expect(body.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(body.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
    const tool = body.content[2] ?? {};
    expect(tool.id).toMatch(/^call_[a-z0-9]{8}$/);
    // Nested maps are Go maps: keys sorted.
    expect(JSON.stringify(tool.input)).toBe('{"file_path":"<f>","content":{"a":2,"z":1}}');
    expect(body.stop_reason).toBe('tool_use');
    expect(Object.keys(body.usage as object)).toEqual(['input_tokens', 'output_tokens']);
  });

  it('§1 thinking:{type:"disabled"} sends think:false: no thinking block', async () => {
    const emu = await ollama({ script: [{ thinking: 'hmm', text: 'Done.' }] });
    const body = (await (
      await fetch(
        `${emu.url}/v1/messages`,
        post(messages({ tools: TOOLS, thinking: { type: 'disabled' } })),
      )
    ).json()) as { content: { type: string }[] };
    expect(body.content.map((block) => block.type)).toEqual(['text']);
  });

  it('§1 stream: headers, no ping, message_start with the len/4 estimate and no stop keys', async () => {
    const emu = await ollama({ script: [{ text: 'Hi.' }] });
    const request = messages({ stream: true, tools: TOOLS, system: 'You are terse.' });
    const response = await fetch(`${emu.url}/v1/messages`, post(request));
    const { headers } = response;
    expect(headers.get('content-type')).toBe('text/event-stream');
    expect(headers.get('cache-control')).toBe('no-cache');
    expect(headers.get('connection')).toBe('keep-alive');
    expect(headers.has('server')).toBe(false);
    const text = await response.text();
    const events = parseSse(text);
    expect(events.map((event) => event.event)).not.toContain('ping');
    // EstimateInputTokens: system 14 + role 4 + "Say hello." 10 + tool 5 + 5 + 17 = 55 bytes → 13.
    expect(text.split('\n')[1]).toMatch(
      /^data: \{"type":"message_start","message":\{"id":"msg_[0-9a-f]{24}","type":"message","role":"assistant","model":"qwen3-coder:30b","content":\[\],"usage":\{"input_tokens":13,"output_tokens":0\}\}\}$/,
    );
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages' && r.status === 200);
    expect(text).toContain(
      `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":${record.promptTokens},"output_tokens":2}}\n\n`,
    );
    expect(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
  });

  it('§1 stream: thinking and text open with empty blocks, one delta per token, no signature_delta', async () => {
    const emu = await ollama({ script: [{ thinking: 'Think.', text: 'Hi there.' }] });
    const text = await (
      await fetch(`${emu.url}/v1/messages`, post(messages({ stream: true, tools: TOOLS })))
    ).text();
    expect(text).not.toContain('signature');
    const events = parseSse(text).map((event) => event.data as Record<string, unknown>);
    expect(events.slice(1, 5)).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '' },
      },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'thinking_delta', thinking: 'Think' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: '.' } },
      { type: 'content_block_stop', index: 0 },
    ]);
    expect(events[5]).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'text', text: '' },
    });
  });

  it('§1 stream: tool calls arrive whole (the open block stopped, start with input {}, one delta, stop)', async () => {
    const emu = await ollama({
      script: [
        {
          text: 'Writing.',
          toolCalls: [
            { name: 'Write', input: { file_path: 'a<b' } },
            { name: 'Bash', input: { command: 'ls' } },
          ],
        },
      ],
    });
    const request = messages({ stream: true, tools: TOOLS, thinking: { type: 'disabled' } });
    const raw = parseRawResponse(await sendRaw(emu.url, rawPost('/v1/messages', request)));
    const text = raw.body.toString();
    const events = parseSse(text);
    expect(events.map((event) => event.event).join(' ')).toMatch(
      /^message_start content_block_start( content_block_delta)+ content_block_stop content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop$/,
    );
    const start = events.find(
      (event) =>
        event.event === 'content_block_start' &&
        (event.data as { content_block: { type: string } }).content_block.type === 'tool_use',
    )?.data as { index: number; content_block: { id: string } };
    expect(start).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: start.content_block.id, name: 'Write', input: {} },
    });
    expect(start.content_block.id).toMatch(/^call_[a-z0-9]{8}$/);
    // The arguments' JSON is Go-marshalled, then marshalled again inside the event.
    expect(text).toContain(
      'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"file_path\\":\\"a\\\\u003cb\\"}"}}\n\n',
    );
    // One HTTP chunk for the whole tool call: stop of the text, start, delta, stop.
    const toolChunk = raw.chunks?.find((chunk) => chunk.toString().includes('"name":"Write"'));
    expect(parseSse(toolChunk?.toString() ?? '').map((event) => event.event)).toEqual([
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
    ]);
    expect(events.at(-2)?.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use' },
      usage: {
        input_tokens: expect.any(Number) as number,
        output_tokens: expect.any(Number) as number,
      },
    });
  });

  it('§1 stream: no byte at all, not even the status line, until the first token (prefill)', async () => {
    const prefillMsPerToken = 20;
    const emu = await ollama({ latency: { prefillMsPerToken } });
    const sentAt = performance.now();
    let firstAt = 0;
    let first = '';
    const bytes = await new Promise<Buffer>((resolve, reject) => {
      const { hostname, port } = new URL(emu.url);
      const parts: Buffer[] = [];
      void import('node:net').then(({ connect }) => {
        const socket = connect({ host: hostname, port: Number(port) }, () =>
          socket.write(rawPost('/v1/messages', messages({ stream: true }))),
        );
        socket.on('data', (part: Buffer) => {
          if (parts.length === 0) {
            firstAt = performance.now();
            first = part.toString();
          }
          parts.push(part);
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(Buffer.concat(parts)));
      });
    });
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages');
    const prefillMs = (record.promptTokens ?? 0) * prefillMsPerToken;
    expect(prefillMs).toBe(280);
    // The first bytes that arrive hold the head and message_start together, after the prefill.
    expect(firstAt - sentAt).toBeGreaterThanOrEqual(prefillMs - 5);
    expect(first.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(first).toContain('event: message_start');
    expect(first).toContain('event: content_block_delta');
    expect(parseRawResponse(bytes).statusLine).toBe('HTTP/1.1 200 OK');
  });

  it('§1 an error after the stream started ends it with no message_delta, no message_stop, no error event', async () => {
    const emu = await ollama({ script: [{ text: 'one two three four five' }] });
    emu.injectFaults([{ kind: 'sse_error', afterEvents: 3 }]);
    const response = await fetch(`${emu.url}/v1/messages`, post(messages({ stream: true })));
    expect(response.status).toBe(200);
    const events = parseSse(await response.text()).map((event) => event.event);
    expect(events).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
  });

  it('§1 a runner error before the first chunk is a plain JSON 500 api_error, even for stream:true', async () => {
    const emu = await ollama();
    emu.injectFaults([{ kind: 'sse_error', afterEvents: 0 }]);
    const response = await fetch(`${emu.url}/v1/messages`, post(messages({ stream: true })));
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(((await response.json()) as ErrorBody).error.type).toBe('api_error');
  });

  it('§4 OLLAMA_NUM_PARALLEL=1: a second request waits for the first, with no error', async () => {
    const emu = await ollama({ script: [{ text: 'one two three' }] });
    emu.injectFaults([{ kind: 'stall', afterEvents: 2, ms: 60_000 }]);
    const first = new AbortController();
    const firstResponse = await fetch(`${emu.url}/v1/messages`, {
      ...post(messages({ stream: true })),
      signal: first.signal,
    });
    const reader = firstResponse.body?.getReader();
    await reader?.read();
    const second = fetch(`${emu.url}/v1/messages`, post(messages()));
    // promptTokens is filled in after the record is made: poll for it.
    const waiting = await waitFor(
      () => emu.requests.find((r) => r.id === 2 && r.promptTokens !== undefined),
      { what: 'the second request to be counted' },
    );
    expect(waiting.status).toBe(0);
    first.abort();
    const answer = await second;
    expect(answer.status).toBe(200);
  });
});

describe('Ollama personality: silent truncation (§2 "Overflow")', () => {
  const long = (extra: Record<string, unknown> = {}): Record<string, unknown> =>
    messages({ messages: [{ role: 'user', content: LONG }], tools: TOOLS, ...extra });

  it.each([
    ['0.32.15', 2050],
    ['0.30.11', 2050],
    ['0.30.10', 4095],
    ['0.30.0', 4095],
    ['0.29.6', 4096],
  ])(
    '§2 stage 2, v%s, num_ctx 4096: a long single message is cut to %i tokens, a 200 with the lost-instructions reply',
    async (ollamaVersion, kept) => {
      const emu = await ollama({ nCtx: 4096, ollamaVersion });
      const response = await fetch(`${emu.url}/v1/messages`, post(long()));
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        content: { type: string; text: string }[];
        usage: { input_tokens: number };
        stop_reason: string;
      };
      expect(body.usage.input_tokens).toBe(kept);
      expect(body.content).toEqual([{ type: 'text', text: TRUNCATED_PROMPT_REPLY.text }]);
      expect(body.stop_reason).toBe('end_turn');
      const record = await emu.waitForRequest((r) => r.path === '/v1/messages' && r.status === 200);
      // The full count stays in promptTokens; what was kept is truncatedTo.
      expect(record.promptTokens).toBe(9243);
      expect(record.truncatedTo).toBe(kept);
    },
  );

  it('§2 stage 2 when streaming: message_start has the estimate, message_delta the kept count', async () => {
    const emu = await ollama({ nCtx: 4096 });
    const text = await (await fetch(`${emu.url}/v1/messages`, post(long({ stream: true })))).text();
    const events = parseSse(text);
    const start = events[0]?.data as { message: { usage: { input_tokens: number } } };
    // len/4 of 54000 characters of text, the role and the tool.
    expect(start.message.usage.input_tokens).toBe(Math.floor((54000 + 4 + 5 + 5 + 17) / 4));
    expect(events.at(-2)?.data).toMatchObject({ usage: { input_tokens: 2050 } });
    expect(text).not.toContain('tool_use');
  });

  it('§2 stage 1 drops whole messages from the front, keeps the system prompt, always keeps the last message', async () => {
    const emu = await ollama({ nCtx: 4096, ollamaVersion: '0.29.6' });
    const conversation = messages({
      system: 'You are terse.',
      messages: [
        { role: 'user', content: 'hello '.repeat(5000) },
        { role: 'assistant', content: 'OK.' },
        { role: 'user', content: 'Say hello.' },
      ],
    });
    const response = await fetch(`${emu.url}/v1/messages`, post(conversation));
    const body = (await response.json()) as {
      content: { text: string }[];
      usage: { input_tokens: number };
    };
    expect(response.status).toBe(200);
    expect(body.content[0]?.text).toBe(TRUNCATED_PROMPT_REPLY.text);
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages' && r.status === 200);
    expect(record.promptTokens).toBe(5036);
    // system + assistant "OK." + user "Say hello." + the generation prompt, as the Qwen template renders it.
    expect(body.usage.input_tokens).toBe(31);
    expect(record.truncatedTo).toBe(31);
    // Without the system prompt the kept part is shorter: it was kept.
    const bare = await ollama({ nCtx: 4096, ollamaVersion: '0.29.6' });
    const { system: _system, ...withoutSystem } = conversation;
    const bareBody = (await (
      await fetch(`${bare.url}/v1/messages`, post(withoutSystem))
    ).json()) as {
      usage: { input_tokens: number };
    };
    expect(bareBody.usage.input_tokens).toBe(22);
  });

  it('§2 a prompt that fits is untouched: input_tokens is the whole prompt and the script plays', async () => {
    const emu = await ollama({ nCtx: 4096, script: [{ text: 'Scripted.' }] });
    const body = (await (
      await fetch(`${emu.url}/v1/messages`, post(messages({ tools: TOOLS })))
    ).json()) as {
      content: { text: string }[];
      usage: { input_tokens: number };
    };
    expect(body.content[0]?.text).toBe('Scripted.');
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages' && r.status === 200);
    expect(body.usage.input_tokens).toBe(record.promptTokens);
    expect(record.truncatedTo).toBeUndefined();
  });

  it('§2 context shift off (deepseek2): a single oversize message is the 400, never truncated', async () => {
    const emu = await ollama({ nCtx: 4096, contextShift: false });
    const response = await fetch(`${emu.url}/v1/messages`, post(long({ stream: true })));
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorBody).error).toEqual({
      type: 'invalid_request_error',
      message:
        'the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length',
    });
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages' && r.status === 400);
    expect(record.promptTokens).toBe(9243);
  });

  it('§2 context shift off still drops whole messages first (stage 1 runs before the runner)', async () => {
    const emu = await ollama({ nCtx: 4096, contextShift: false });
    const conversation = messages({
      messages: [
        { role: 'user', content: 'hello '.repeat(5000) },
        { role: 'assistant', content: 'OK.' },
        { role: 'user', content: 'Say hello.' },
      ],
    });
    const response = await fetch(`${emu.url}/v1/messages`, post(conversation));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { content: { text: string }[] }).content[0]?.text).toBe(
      TRUNCATED_PROMPT_REPLY.text,
    );
  });

  it('§2 the context_overflow fault on Ollama is the deepseek2 400', async () => {
    const emu = await ollama();
    emu.injectFaults([{ kind: 'context_overflow' }]);
    const response = await fetch(`${emu.url}/v1/messages`, post(messages()));
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorBody).error.message).toMatch(
      /^the prompt is longer than the context length currently available to the model/,
    );
  });
});

describe('Ollama personality: loading (§3, §4)', () => {
  it('§4 the first request to an unloaded model loads it: it blocks, /api/ps lists it meanwhile, then 200', async () => {
    const emu = await ollama({ loadedNames: [], jitLoadMs: 1500, jitContext: 8192 });
    expect(await (await fetch(`${emu.url}/api/ps`)).text()).toBe('{"models":[]}');
    const answer = fetch(`${emu.url}/v1/messages`, post(messages()));
    const listed = await waitFor(
      async () => {
        const body = (await (await fetch(`${emu.url}/api/ps`)).json()) as {
          models: { name: string; context_length: number }[];
        };
        return body.models.length > 0 ? body.models : undefined;
      },
      { what: 'the loading model in /api/ps' },
    );
    expect(listed.map((model) => [model.name, model.context_length])).toEqual([[MODEL, 8192]]);
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages');
    expect(record.status).toBe(0);
    expect((await answer).status).toBe(200);
    const loaded = (await (await fetch(`${emu.url}/api/ps`)).json()) as {
      models: { context_length: number }[];
    };
    expect(loaded.models[0]?.context_length).toBe(8192);
  });

  it('§4 setLoading(true): /v1/messages waits (no error) until setLoading(false)', async () => {
    const emu = await ollama();
    emu.setLoading(true);
    const answer = fetch(`${emu.url}/v1/messages`, post(messages()));
    const record = await emu.waitForRequest((r) => r.path === '/v1/messages');
    expect(record.status).toBe(0);
    expect((await fetch(`${emu.url}/api/ps`)).status).toBe(200);
    emu.setLoading(false);
    expect((await answer).status).toBe(200);
  });
});

describe('localagents emulate --backend ollama', () => {
  async function emulate(args: string[]): Promise<{ url: string; stop: () => Promise<number> }> {
    const stdout = new PassThrough();
    const controller = new AbortController();
    const running = runCli(['emulate', '--port', '0', ...args], {
      stdout,
      stderr: new PassThrough(),
      env: {},
      cwd: process.cwd(),
      signal: controller.signal,
    });
    const url = await new Promise<string>((resolve) =>
      stdout.on('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
    );
    return {
      url,
      stop: () => {
        controller.abort();
        return running;
      },
    };
  }

  it('takes the Ollama flags: --served-name, --loaded, --num-ctx-param, --no-context-shift, --ollama-version', async () => {
    const { url, stop } = await emulate([
      '--backend',
      'ollama',
      '--served-name',
      MODEL,
      '--served-name',
      'llama3.2:3b',
      '--loaded',
      'llama3.2:3b',
      '--num-ctx-param',
      '4096',
      '--no-context-shift',
      '--ollama-version',
      '0.31.2',
    ]);
    onTestFinished(async () => {
      await stop();
    });
    expect(await (await fetch(`${url}/api/version`)).json()).toEqual({ version: '0.31.2' });
    const ps = (await (await fetch(`${url}/api/ps`)).json()) as {
      models: { name: string; context_length: number }[];
    };
    expect(ps.models.map((model) => [model.name, model.context_length])).toEqual([
      ['llama3.2:3b', 4096],
    ]);
    const response = await fetch(
      `${url}/v1/messages`,
      post(messages({ model: 'llama3.2:3b', messages: [{ role: 'user', content: LONG }] })),
    );
    expect(response.status).toBe(400);
  });

  it('rejects an unknown --backend, naming the four', async () => {
    const stderr = new PassThrough();
    let text = '';
    stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const code = await runCli(['emulate', '--backend', 'tgi'], {
      stdout: new PassThrough(),
      stderr,
      env: {},
      cwd: process.cwd(),
      signal: new AbortController().signal,
    });
    expect(code).toBe(2);
    expect(text).toContain(
      'localagents emulate: --backend must be llama.cpp, vllm, ollama or lmstudio (got "tgi")',
    );
  });
});
