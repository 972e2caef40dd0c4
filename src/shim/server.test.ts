import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { messagesBody } from '../../test/support/messages-body.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { startEmulator, type EmulatorOptions } from '../emulator/emulator.js';
import { isRecord } from './fold-system.js';
import type { RequestLogLine } from './log.js';
import { createShim, type Shim, type ShimRoute } from './server.js';
import type { RouteConfig } from './route.js';

const CLAUDE_CODE = new URL('../../test/fixtures/claude-code/', import.meta.url);

function capturedBody(name: string, edit?: (body: Record<string, unknown>) => void): string {
  const fixture: unknown = JSON.parse(readFileSync(new URL(name, CLAUDE_CODE), 'utf8'));
  if (!isRecord(fixture) || !isRecord(fixture.body)) throw new Error(`${name}: no body`);
  edit?.(fixture.body);
  return JSON.stringify(fixture.body);
}

const BIG_WINDOW = { nCtx: 2_000_000, nCtxTrain: 2_000_000, parallel: 1 };

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

async function setup(emulator: EmulatorOptions = {}, route: Partial<RouteConfig> = {}) {
  const emu = await startEmulator({ nCtx: 65536, ...emulator });
  cleanup.push(() => emu.close());
  const shim = await createShim();
  cleanup.push(() => shim.close());
  const logDir = await tempDir();
  const backend = emulator.backend ?? 'llama.cpp';
  const servedId = backend === 'vllm' ? 'qwen3-coder' : 'qwen-test';
  const added = shim.addRoute({ backendUrl: emu.url, backend, servedId, logDir, ...route });
  return { emu, shim, route: added, logDir };
}

async function post(
  route: ShimRoute,
  body: string,
  path = '/v1/messages?beta=true',
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${route.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'x', ...headers },
    body,
  });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    text: await response.text(),
  };
}

async function logLines(route: ShimRoute, logDir: string): Promise<RequestLogLine[]> {
  await route.close();
  const text = await readFile(join(logDir, 'requests.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RequestLogLine);
}

/** The Anthropic error envelope of an answer, or a failure if it is not one. */
function errorOf(text: string): { type: unknown; message: unknown } {
  const json: unknown = JSON.parse(text);
  if (!isRecord(json) || json.type !== 'error' || !isRecord(json.error))
    throw new Error(`not an error envelope: ${text}`);
  return { type: json.error.type, message: json.error.message };
}

const simple = messagesBody;

describe('createShim', () => {
  it('answers an unknown token with an Anthropic 404', async () => {
    const shim: Shim = await createShim();
    cleanup.push(() => shim.close());
    const response = await fetch(`${shim.url}/j/nosuchtoken/v1/messages`, {
      method: 'POST',
      body: '{}',
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error' },
    });
  });

  it('gives each route a 128-bit random token', async () => {
    const { shim } = await setup();
    const a = shim.addRoute({ backendUrl: 'http://127.0.0.1:9', backend: 'other', servedId: 'm' });
    const b = shim.addRoute({ backendUrl: 'http://127.0.0.1:9', backend: 'other', servedId: 'm' });
    expect(Buffer.from(a.token, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect(a.token).not.toBe(b.token);
    expect(a.baseUrl).toBe(`${shim.url}/j/${a.token}`);
  });

  it('folds Claude Code’s first request so a strict Qwen template accepts it, and logs the rewrites', async () => {
    const { emu, route, logDir } = await setup();
    const result = await post(route, capturedBody('first-turn-request.json'));
    expect(result.status).toBe(200);
    expect(result.type).toContain('text/event-stream');
    expect(result.text).toContain('event: message_stop');
    const forwarded = emu.requests[0];
    expect(forwarded?.path).toBe('/v1/messages?beta=true');
    expect(forwarded?.rawBody).not.toContain('"role":"system"');
    expect(forwarded?.headers['x-api-key']).toBeUndefined();
    const [line] = await logLines(route, logDir);
    expect(line?.rewrites).toEqual(expect.arrayContaining(['fold_system', 'billing_nonce']));
    expect(line).toMatchObject({
      status: 200,
      upstream_status: 200,
      stream: true,
      messages: 2,
      tools: 12,
      prefix: { kind: 'new' },
    });
    expect(line?.usage?.input_tokens).toBeGreaterThan(0);
  });

  it('forwards a body that needs no rewrite byte-for-byte, query string kept', async () => {
    const { emu, route } = await setup();
    const body = simple();
    expect((await post(route, body, '/v1/messages?beta=true&x=1')).status).toBe(200);
    expect(emu.requests[0]?.rawBody).toBe(body);
    expect(emu.requests[0]?.path).toBe('/v1/messages?beta=true&x=1');
  });

  it('streams a 1 MB body with nothing to rewrite to the backend unchanged as it arrives', async () => {
    const { emu, route, logDir } = await setup(BIG_WINDOW);
    const body = simple({
      messages: [{ role: 'user', content: 'x'.repeat(1_000_000) }],
      max_tokens: 8,
    });
    expect((await post(route, body)).status).toBe(200);
    expect(emu.requests).toHaveLength(1);
    expect(emu.requests[0]?.rawBody).toBe(body);
    const [line] = await logLines(route, logDir);
    expect(line).toMatchObject({
      rewrites: [],
      messages: 1,
      bytes_in: body.length,
      bytes_upstream: body.length,
    });
  });

  it('drops the half-sent request and sends the rewrite when a system message turns up at the end', async () => {
    const { emu, route } = await setup(BIG_WINDOW);
    const body = simple({
      messages: [
        { role: 'user', content: 'x'.repeat(1_000_000) },
        { role: 'system', content: 'late note' },
      ],
      max_tokens: 8,
    });
    expect((await post(route, body)).status).toBe(200);
    const completed = emu.requests.filter((r) => r.path.startsWith('/v1/messages'));
    expect(completed).toHaveLength(1);
    expect(completed[0]?.rawBody).toContain('<system>\\nlate note\\n</system>');
    expect(completed[0]?.rawBody).not.toContain('"role":"system"');
  });

  it('adds "input":{} to llama.cpp tool_use block starts', async () => {
    const { route } = await setup();
    const result = await post(route, capturedBody('first-turn-request.json'));
    const starts = result.text
      .split('\n')
      .filter((l) => l.includes('"content_block_start"') && l.includes('"tool_use"'));
    expect(starts.length).toBeGreaterThan(0);
    for (const start of starts) expect(start).toContain('"input":{}');
  });

  it('answers "prompt is too long" when llama-server reports a context overflow', async () => {
    const { emu, route, logDir } = await setup();
    emu.injectFaults([{ kind: 'context_overflow' }]);
    const result = await post(route, simple());
    expect(result.status).toBe(400);
    const error = errorOf(result.text);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/^prompt is too long: \d+ tokens > 32768 maximum$/);
    const [line] = await logLines(route, logDir);
    expect(line?.error?.original).toContain('exceed_context_size_error');
    expect(line?.upstream_status).toBe(400);
  });

  it.each([
    [
      503,
      529,
      'overloaded_error',
      { error: { message: 'Loading model', type: 'unavailable_error', code: 503 } },
    ],
    [500, 500, 'api_error', { error: { code: 500, message: 'boom', type: 'server_error' } }],
    [
      401,
      401,
      'authentication_error',
      { error: { message: 'Invalid API Key', type: 'authentication_error', code: 401 } },
    ],
  ])('translates a backend %i into %i %s', async (status, expected, type, body) => {
    const { emu, route } = await setup();
    emu.injectFaults([{ kind: 'status', status, body }]);
    const result = await post(route, simple());
    expect(result.status).toBe(expected);
    expect(JSON.parse(result.text)).toMatchObject({ type: 'error', error: { type } });
  });

  it('answers 502 api_error, not a socket reset, when the backend cannot be reached', async () => {
    const shim = await createShim();
    cleanup.push(() => shim.close());
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const route = shim.addRoute({
      backendUrl: `http://127.0.0.1:${port}`,
      backend: 'llama.cpp',
      servedId: 'm',
    });
    const result = await post(route, simple());
    expect(result.status).toBe(502);
    expect(errorOf(result.text).type).toBe('api_error');
    expect(errorOf(result.text).message).toContain('connection refused');
  });

  it('turns a mid-stream llama.cpp error into an Anthropic error event', async () => {
    const { emu, route, logDir } = await setup();
    emu.injectFaults([{ kind: 'sse_error', afterEvents: 3 }]);
    const result = await post(route, simple());
    expect(result.status).toBe(200);
    expect(result.text).toMatch(
      /event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"[^"]+"\}\}\n\n$/,
    );
    const [line] = await logLines(route, logDir);
    expect(line?.rewrites).toContain('translate_stream_error');
    expect(line?.error?.original).toContain('"code":500');
  });

  it.each([
    // A first exchange: Claude Code cannot compact it, so it is told to retry (529, which it backs off on).
    [
      'a first exchange',
      simple(),
      65536,
      529,
      /^backend overloaded: Context size has been exceeded\./,
    ],
    // A conversation that fills half the window or more: it compacts.
    [
      'a long conversation',
      simple({
        messages: [
          { role: 'user', content: 'Read the file.' },
          { role: 'assistant', content: 'hello '.repeat(300) },
          { role: 'user', content: 'Go on.' },
        ],
      }),
      512,
      400,
      /^prompt is too long: \d+ tokens > 512 maximum$/,
    ],
    // A compaction request (captured) is as big, but compacting it again cannot help: retry.
    [
      'a compaction request',
      capturedBody('compaction-request-reactive.json', (body) => {
        body.model = 'qwen-test';
        body.stream = true;
      }),
      512,
      529,
      /^backend overloaded: Context size has been exceeded\./,
    ],
  ])(
    'turns unified-KV exhaustion that is a stream’s first event (C21) into an HTTP error for %s',
    async (_, body, contextTokens, status, message) => {
      const { emu, route } = await setup({}, { contextTokens });
      emu.injectFaults([
        {
          kind: 'sse_error',
          afterEvents: 0,
          error: { code: 500, message: 'Context size has been exceeded.', type: 'server_error' },
        },
      ]);
      const result = await post(route, body);
      expect(result.status).toBe(status);
      expect(errorOf(result.text).message).toMatch(message);
    },
  );

  it('sends event: ping while the backend is silent on an open stream', async () => {
    const { emu, route, logDir } = await setup({}, { keepaliveMs: 40 });
    emu.injectFaults([{ kind: 'stall', afterEvents: 1, ms: 300 }]);
    const result = await post(route, simple());
    expect(result.text).toContain('event: ping\ndata: {"type": "ping"}\n\n');
    expect(result.text).toContain('event: message_stop');
    const [line] = await logLines(route, logDir);
    expect(line?.rewrites).toContain('keepalive_ping');
  });

  it('aborts the backend request when the client goes away', async () => {
    const { emu, route, logDir } = await setup();
    emu.injectFaults([{ kind: 'stall', afterEvents: 1, ms: 30_000 }]);
    const controller = new AbortController();
    const response = await fetch(`${route.baseUrl}/v1/messages`, {
      method: 'POST',
      body: simple(),
      signal: controller.signal,
    });
    const reader = response.body?.getReader();
    await reader?.read();
    controller.abort();
    await waitFor(
      async () => {
        const slots = (await (await fetch(`${emu.url}/slots`)).json()) as Array<{
          is_processing: boolean;
        }>;
        return slots.every((slot) => !slot.is_processing);
      },
      { what: 'the emulator slot to be released' },
    );
    await waitFor(() => route.stats().requests === 1, { what: 'the request to be logged' });
    const [line] = await logLines(route, logDir);
    expect(line?.aborted).toBe(true);
  });

  it('aborts the streams in flight and flushes the log when the route closes', async () => {
    const { emu, route, logDir } = await setup();
    emu.injectFaults([{ kind: 'stall', afterEvents: 1, ms: 30_000 }]);
    const response = await fetch(`${route.baseUrl}/v1/messages`, {
      method: 'POST',
      body: simple(),
    });
    const reader = response.body?.getReader();
    await reader?.read();
    await route.close();
    await expect(reader?.read()).rejects.toThrow();
    await waitFor(
      async () => {
        const slots = (await (await fetch(`${emu.url}/slots`)).json()) as Array<{
          is_processing: boolean;
        }>;
        return slots.every((slot) => !slot.is_processing);
      },
      { what: 'the emulator slot to be released' },
    );
    const line = JSON.parse(
      (await readFile(join(logDir, 'requests.jsonl'), 'utf8')).trim(),
    ) as RequestLogLine;
    expect(line).toMatchObject({ aborted: true, status: 200 });
    const after = await fetch(`${route.baseUrl}/v1/messages`, { method: 'POST', body: simple() });
    expect(after.status).toBe(404);
  });

  it('clamps max_tokens and retries once when vLLM says prompt + max_tokens is too large', async () => {
    const { emu, route, logDir } = await setup({
      backend: 'vllm',
      nCtx: 4096,
      vllmContextWording: 'too-large',
    });
    const result = await post(route, simple({ model: 'qwen3-coder', max_tokens: 32000 }));
    expect(result.status).toBe(200);
    const messages = emu.requests.filter(
      (r) => r.path.startsWith('/v1/messages') && !r.path.includes('count_tokens'),
    );
    expect(messages).toHaveLength(2);
    const retried = messages[1]?.body;
    expect(
      isRecord(retried) && typeof retried.max_tokens === 'number' && retried.max_tokens < 4096,
    ).toBe(true);
    const [line] = await logLines(route, logDir);
    expect(line?.rewrites).toContain('retry_clamped');
    expect(line?.upstream_status).toBe(200);
  });

  it('asks count_tokens when vLLM gives only an "at least" prompt size, then retries', async () => {
    const { emu, route } = await setup({
      backend: 'vllm',
      nCtx: 4096,
      vllmContextWording: 'at-least',
    });
    const result = await post(route, simple({ model: 'qwen3-coder', max_tokens: 32000 }));
    expect(result.status).toBe(200);
    expect(emu.requests.some((r) => r.path.includes('count_tokens'))).toBe(true);
  });

  it('clamps max_tokens up front on vLLM from the route’s window', async () => {
    const { emu, route, logDir } = await setup(
      { backend: 'vllm', nCtx: 8192 },
      { contextTokens: 8192 },
    );
    const body = simple({ model: 'claude-sonnet-4-5', max_tokens: 32000 });
    const result = await post(route, body);
    expect(result.status).toBe(200);
    expect(emu.requests).toHaveLength(1);
    // Window minus the prompt estimate (bytes / 4) of the body as the client sent it.
    expect(emu.requests[0]?.body).toMatchObject({
      model: 'qwen3-coder',
      max_tokens: 8192 - Math.ceil(Buffer.byteLength(body) / 4),
    });
    const [line] = await logLines(route, logDir);
    expect(line?.rewrites).toEqual(expect.arrayContaining(['clamp_max_tokens', 'model_map']));
    expect(line?.rewrites).not.toContain('retry_clamped');
  });

  it('estimates count_tokens when the backend has no such route', async () => {
    const bare = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"detail":"Not Found"}');
    });
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => bare.close(() => resolve())));
    const address = bare.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const shim = await createShim();
    cleanup.push(() => shim.close());
    const route = shim.addRoute({
      backendUrl: `http://127.0.0.1:${port}`,
      backend: 'vllm',
      servedId: 'm',
    });
    const body = simple({ model: 'm' });
    const result = await post(route, body, '/v1/messages/count_tokens');
    expect(result.status).toBe(200);
    expect(JSON.parse(result.text)).toEqual({
      input_tokens: Math.ceil(Buffer.byteLength(body) / 4),
    });
  });

  it('answers Claude Code’s HEAD /api/hello itself', async () => {
    const { emu, route } = await setup();
    const response = await fetch(`${route.baseUrl}/api/hello`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(emu.requests).toHaveLength(0);
  });

  it('writes requests_full.jsonl with the forwarded body and the key redacted when asked', async () => {
    const { route, logDir } = await setup({}, { dumpFullRequests: true, apiKey: 'sk-secret' });
    await post(route, capturedBody('first-turn-request.json'), '/v1/messages?beta=true', {
      'x-api-key': 'sk-client',
      authorization: 'Bearer sk-client-bearer',
      cookie: 'session=sk-cookie',
    });
    await route.close();
    const full = await readFile(join(logDir, 'requests_full.jsonl'), 'utf8');
    expect(full).not.toContain('sk-client');
    expect(full).not.toContain('sk-secret');
    const entry = JSON.parse(full.trim()) as {
      headers: Record<string, string>;
      body: { messages: unknown[] };
    };
    expect(full).not.toContain('sk-client-bearer');
    expect(full).not.toContain('sk-cookie');
    expect(entry.headers).toMatchObject({
      'x-api-key': '[redacted]',
      authorization: '[redacted]',
      cookie: '[redacted]',
    });
    expect(entry.body.messages).toHaveLength(1);
  });

  it('sends the route’s key as Authorization: Bearer', async () => {
    const { emu, route } = await setup({ apiKey: 'sk-local' }, { apiKey: 'sk-local' });
    expect((await post(route, simple())).status).toBe(200);
    expect(emu.requests[0]?.headers.authorization).toBe('Bearer sk-local');
  });
});
