import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runEmulate } from '../../src/cli/emulate.js';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { loadScript } from '../../src/emulator/script.js';
import { loadLlamaFixtures, parseSse, responseHeader } from '../support/llama-fixtures.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/** One capture of test/fixtures/llama.cpp by its case id (Z01 …). */
function capturedCase(id: string) {
  const fixture = loadLlamaFixtures().find((f) => f.file.startsWith(`${id}-`));
  if (!fixture) throw new Error(`fixture ${id} is missing`);
  return fixture;
}

async function emulator(options: EmulatorOptions = {}) {
  const emu = await startEmulator(options);
  onTestFinished(() => emu.close());
  return emu;
}

const body = (content: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content }], ...extra });

async function post(url: string, text: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
    ...init,
  });
}

async function getJson(url: string, path: string): Promise<unknown> {
  return (await fetch(`${url}${path}`)).json();
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^llamacpp:${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

/** Reads an SSE body until it ends or breaks; `broken` says whether the socket was cut. */
async function readStream(response: Response): Promise<{ text: string; broken: boolean }> {
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      text += decoder.decode(chunk.value);
    return { text, broken: false };
  } catch {
    return { text, broken: true };
  }
}

describe('faults', () => {
  it('answers the next request with the injected status and the one after normally', async () => {
    const emu = await emulator();
    emu.injectFaults([{ kind: 'status', status: 503 }]);
    const first = await post(emu.url, body('hi'));
    expect([first.status, await first.json()]).toEqual([
      503,
      { error: { message: 'Loading model', type: 'unavailable_error', code: 503 } },
    ]);
    expect((await post(emu.url, body('hi'))).status).toBe(200);
  });

  it('accepts faults through POST /_emulator/faults and applies each to `count` requests', async () => {
    const emu = await emulator();
    const admin = await fetch(`${emu.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({
        faults: [{ kind: 'status', status: 500, count: 2 }, { kind: 'context_overflow' }],
      }),
    });
    expect(admin.status).toBe(200);
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await post(emu.url, body('hi'))).status);
    expect(statuses).toEqual([500, 500, 400, 200]);
  });

  it('replaces pending faults on each injection, so an empty list clears them', async () => {
    const emu = await emulator();
    emu.injectFaults([
      {
        kind: 'status',
        status: 500,
        body: '{"error":{"code":500,"message":"boom","type":"server_error"}}',
        count: 100,
      },
    ]);
    const failed = await post(emu.url, body('hi'));
    expect([failed.status, await failed.text()]).toEqual([
      500,
      '{"error":{"code":500,"message":"boom","type":"server_error"}}',
    ]);
    emu.injectFaults([]);
    expect((await post(emu.url, body('hi'))).status).toBe(200);
  });

  it('reports a context overflow with the real prompt size and the slot window', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2 });
    emu.injectFaults([{ kind: 'context_overflow' }]);
    const response = await post(emu.url, body('Say hello.'));
    expect(await response.json()).toMatchObject({
      error: { type: 'exceed_context_size_error', n_prompt_tokens: 14, n_ctx: 8192 },
    });
  });

  it('drops the connection after K events of a stream', async () => {
    const emu = await emulator();
    emu.injectFaults([{ kind: 'drop', afterEvents: 2 }]);
    const { text, broken } = await readStream(await post(emu.url, body('hi', { stream: true })));
    expect(broken).toBe(true);
    expect(parseSse(text).map((e) => e.event)).toEqual(['message_start', 'content_block_start']);
  });

  it('ends a stream with a bare llama.cpp error event after K events', async () => {
    const emu = await emulator();
    emu.injectFaults([
      {
        kind: 'sse_error',
        afterEvents: 1,
        error: { code: 500, message: 'boom', type: 'server_error' },
      },
    ]);
    const { text } = await readStream(await post(emu.url, body('hi', { stream: true })));
    expect(parseSse(text)).toEqual([
      expect.objectContaining({ event: 'message_start' }),
      { event: 'error', data: { code: 500, message: 'boom', type: 'server_error' } },
    ]);
  });

  it('stalls a stream after K events and then finishes it', async () => {
    const emu = await emulator();
    emu.injectFaults([
      { kind: 'stall', afterEvents: 1, ms: 50 },
      { kind: 'delay', ms: 20 },
    ]);
    const stalled = parseSse(
      (await readStream(await post(emu.url, body('hi', { stream: true })))).text,
    );
    expect(stalled.at(-1)?.event).toBe('message_stop');
    expect((await post(emu.url, body('hi'))).status).toBe(200);
  });
});

describe('KV-prefix accounting and slots', () => {
  it('serves a repeated prompt from the slot cache like llama.cpp (prompt − 1 cached)', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, metrics: true });
    const prompt = body('cache me '.repeat(500), { max_tokens: 4 });
    const first = (await (await post(emu.url, prompt)).json()) as { usage: Record<string, number> };
    const second = (await (await post(emu.url, prompt)).json()) as {
      usage: Record<string, number>;
    };
    const total = (first.usage.input_tokens ?? 0) + (first.usage.cache_read_input_tokens ?? 0);
    expect(second.usage).toEqual({
      cache_read_input_tokens: total - 1,
      input_tokens: 1,
      output_tokens: 4,
    });
    expect(await metric(emu.url, 'prompt_tokens_total')).toBe(total + 1);
  });

  it('defers a third request while two slots generate, then serves it', async () => {
    const emu = await emulator({
      nCtx: 16384,
      parallel: 2,
      metrics: true,
      plainReply: { text: ' word'.repeat(40) },
      latency: { decodeTokensPerSecond: 100 },
    });
    const replies = [0, 1, 2].map((i) =>
      post(emu.url, body(`${i} ${'distinct '.repeat(30)}`, { stream: true })).then(readStream),
    );
    await waitFor(async () => (await metric(emu.url, 'requests_deferred')) === 1, {
      what: 'one deferred request',
    });
    expect(await metric(emu.url, 'requests_processing')).toBe(2);
    const texts = await Promise.all(replies);
    expect(texts.map(({ text }) => parseSse(text).at(-1)?.event)).toEqual([
      'message_stop',
      'message_stop',
      'message_stop',
    ]);
    expect(await metric(emu.url, 'requests_deferred')).toBe(0);
  });

  it('stops generating and frees the slot when the client goes away', async () => {
    const emu = await emulator({
      nCtx: 8192,
      parallel: 1,
      plainReply: { text: ' word'.repeat(500) },
      latency: { decodeTokensPerSecond: 50 },
    });
    const controller = new AbortController();
    const response = await post(emu.url, body('hi', { stream: true }), {
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    controller.abort();
    await waitFor(
      async () =>
        !((await getJson(emu.url, '/slots')) as { is_processing: boolean }[])[0]?.is_processing,
      {
        what: 'the slot to be free',
      },
    );
    const decoded = (
      (await getJson(emu.url, '/slots')) as { next_token: { n_decoded: number }[] }[]
    )[0]?.next_token[0]?.n_decoded;
    expect(decoded).toBeLessThan(500);
  });

  it('ends generation that reaches the slot window with max_tokens, not an error', async () => {
    const emu = await emulator({
      nCtx: 8192,
      parallel: 1,
      plainReply: { text: ' word'.repeat(100) },
    });
    const reply = (await (
      await post(emu.url, body('hello '.repeat(8150), { max_tokens: 200 }))
    ).json()) as Record<string, unknown>;
    expect(reply).toMatchObject({
      stop_reason: 'max_tokens',
      usage: { input_tokens: 8161, output_tokens: 31 },
    });
  });
});

describe('loading and keys', () => {
  it('answers 503 Loading model on every route until loading ends (llama.cpp)', async () => {
    const emu = await emulator({ loadingMs: 60_000, metrics: true });
    // Z01's captured body, byte for byte (the HTTP layer's key order message, type, code).
    const captured = capturedCase('Z01');
    const expected = JSON.stringify(captured.response.body);
    const routes: [string, string][] = [
      ['GET', '/health'],
      ['GET', '/v1/models'],
      ['GET', '/props'],
      ['GET', '/slots'],
      ['GET', '/metrics'],
      ['POST', '/v1/messages'],
      ['POST', '/v1/messages/count_tokens'],
    ];
    for (const [method, path] of routes) {
      const response = await fetch(`${emu.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: body('hi') } : {}),
      });
      const answer = [
        response.status,
        response.headers.get('content-length'),
        await response.text(),
      ];
      expect(answer, `${method} ${path}`).toEqual([
        captured.response.status,
        responseHeader(captured, 'content-length'),
        expected,
      ]);
    }
    emu.setLoading(false);
    expect(await getJson(emu.url, '/health')).toEqual({ status: 'ok' });
    expect((await post(emu.url, body('hi'))).status).toBe(200);
  });

  it('answers /metrics with 501 not_supported_error without --metrics (llama.cpp)', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2 });
    const response = await fetch(`${emu.url}/metrics`);
    expect(response.status).toBe(501);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    // No capture has /metrics switched off; the body is the one backends.md §2.11 quotes from
    // server-context.cpp, in the handler's key order (code, message, type).
    expect(await response.text()).toBe(
      '{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `--metrics`","type":"not_supported_error"}}',
    );
    const props = (await getJson(emu.url, '/props')) as Record<string, unknown>;
    expect([props.endpoint_metrics, props.endpoint_slots]).toEqual([false, true]);
  });

  it('answers /slots with 501 not_supported_error with --no-slots, after the key check (llama.cpp)', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2, slots: false, apiKey: 'k' });
    expect((await fetch(`${emu.url}/slots`)).status).toBe(401);
    const response = await fetch(`${emu.url}/slots`, { headers: { 'x-api-key': 'k' } });
    expect(response.status).toBe(501);
    // backends.md §2.11 (server-context.cpp), same layout as the /metrics one; not captured.
    expect(await response.text()).toBe(
      '{"error":{"code":501,"message":"This server does not support slots endpoint. Start it with `--slots`","type":"not_supported_error"}}',
    );
    const props = (await (
      await fetch(`${emu.url}/props`, { headers: { 'x-api-key': 'k' } })
    ).json()) as Record<string, unknown>;
    expect([props.endpoint_slots, props.total_slots]).toEqual([false, 2]);
  });

  it('refuses connections while loading and listens afterwards (vLLM)', async () => {
    const emu = await emulator({ backend: 'vllm', loadingMs: 60_000 });
    await expect(fetch(`${emu.url}/health`)).rejects.toThrow();
    emu.setLoading(false);
    const health = await waitFor(
      () =>
        fetch(`${emu.url}/health`).then(
          (r) => r.status,
          () => false,
        ),
      { what: 'vLLM to listen' },
    );
    expect(health).toBe(200);
  });

  it.each([
    [{ 'x-api-key': 'k' }, 200],
    [{ authorization: 'Bearer k' }, 200],
    [{ authorization: 'Bearer wrong', 'x-api-key': 'k' }, 401],
    [{}, 401],
  ])('guards /v1/messages with the llama.cpp key rules (%j → %i)', async (headers, status) => {
    const emu = await emulator({ apiKey: 'k' });
    const response = await post(emu.url, body('hi'), {
      headers: { 'content-type': 'application/json', ...headers },
    });
    expect(response.status).toBe(status);
  });
});

describe('scripts and the CLI', () => {
  it('loads a YAML script and rejects a malformed one with the field named', async () => {
    const dir = await tempDir({
      'ok.yaml': '- text: hi\n- toolCalls:\n    - name: Bash\n      input: { command: ls }\n',
      'bad.json': '[{"toolCalls": [{"name": "Bash"}]}]',
    });
    expect(await loadScript(join(dir, 'ok.yaml'))).toEqual([
      { text: 'hi' },
      { toolCalls: [{ name: 'Bash', input: { command: 'ls' } }] },
    ]);
    await expect(loadScript(join(dir, 'bad.json'))).rejects.toThrow(/0\.toolCalls\.0\.input/);
  });

  it('prints the base URL as the first stdout line, plays a JSON --script and serves until aborted', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 's.json'), JSON.stringify([{ text: 'scripted' }]));
    const stdout = new PassThrough();
    const controller = new AbortController();
    const args = [
      '--port',
      '0',
      '--n-ctx',
      '16384',
      '--parallel',
      '2',
      '--metrics',
      '--script',
      join(dir, 's.json'),
    ];
    const exit = runEmulate({
      args,
      stdout,
      stderr: new PassThrough(),
      env: {},
      cwd: dir,
      signal: controller.signal,
    });
    const line = await new Promise<string>((resolve) =>
      stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    );
    const url = line.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const props = (await getJson(url, '/props')) as {
      default_generation_settings: { n_ctx: number };
      total_slots: number;
    };
    expect([props.default_generation_settings.n_ctx, props.total_slots]).toEqual([8192, 2]);
    const tools = [{ name: 'Bash', description: 'run', input_schema: { type: 'object' } }];
    const reply = (await (await post(url, body('go', { tools }))).json()) as { content: unknown };
    expect(reply.content).toEqual([{ type: 'text', text: 'scripted' }]);
    controller.abort();
    expect(await exit).toBe(0);
  });

  it.each([
    [['--no-slots'], '/slots', 501],
    [['--backend', 'vllm', '--enable-auto-tool-choice'], '/v1/messages', 200],
    [['--backend', 'vllm'], '/v1/messages', 400],
  ])('maps %j to the emulator option (%s → %i)', async (flags, path, status) => {
    const stdout = new PassThrough();
    const controller = new AbortController();
    const exit = runEmulate({
      args: ['--port', '0', ...flags],
      stdout,
      stderr: new PassThrough(),
      env: {},
      cwd: process.cwd(),
      signal: controller.signal,
    });
    onTestFinished(() => controller.abort());
    const url = await new Promise<string>((resolve) =>
      stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
    );
    const tools = [{ name: 'Bash', description: 'run', input_schema: { type: 'object' } }];
    const response =
      path === '/slots'
        ? await fetch(`${url}/slots`)
        : await post(
            url,
            JSON.stringify({ ...JSON.parse(body('go', { tools })), model: 'qwen3-coder' }),
          );
    expect(response.status).toBe(status);
    controller.abort();
    expect(await exit).toBe(0);
  });
});
