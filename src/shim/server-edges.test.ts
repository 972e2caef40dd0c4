import { readFile } from 'node:fs/promises';
import { createServer, type RequestListener } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { messagesBody } from '../../test/support/messages-body.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../emulator/emulator.js';
import type { RequestLogLine } from './log.js';
import { createShim, type ShimRoute } from './server.js';
import type { RouteConfig } from './route.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

async function routeTo(backendUrl: string, config: Partial<RouteConfig> = {}) {
  const shim = await createShim();
  cleanup.push(() => shim.close());
  const logDir = await tempDir();
  const route = shim.addRoute({
    backendUrl,
    backend: 'llama.cpp',
    servedId: 'qwen-test',
    logDir,
    ...config,
  });
  return { route, logDir };
}

async function withEmulator(options: EmulatorOptions = {}, config: Partial<RouteConfig> = {}) {
  const emu = await startEmulator({ nCtx: 65536, ...options });
  cleanup.push(() => emu.close());
  return { emu, ...(await routeTo(emu.url, config)) };
}

/** A hand-written backend on 127.0.0.1, closed after the test. */
async function listenBackend(handler: RequestListener) {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { url: `http://127.0.0.1:${address.port}`, server };
}

/** A hand-written backend for answers the emulator does not give (timed errors, a vLLM without count_tokens). */
async function fakeBackend(handler: RequestListener) {
  return (await listenBackend(handler)).url;
}

const body = messagesBody;

async function post(route: ShimRoute, text: string, signal?: AbortSignal) {
  return fetch(`${route.baseUrl}/v1/messages?beta=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'x' },
    body: text,
    ...(signal ? { signal } : {}),
  });
}

async function logLines(route: ShimRoute, logDir: string): Promise<RequestLogLine[]> {
  await route.close();
  return (await readFile(join(logDir, 'requests.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RequestLogLine);
}

async function slotsBusy(emu: Emulator): Promise<boolean> {
  const slots = (await (await fetch(`${emu.url}/slots`)).json()) as Array<{
    is_processing: boolean;
  }>;
  return slots.some((slot) => slot.is_processing);
}

const PING = 'event: ping\ndata: {"type": "ping"}\n\n';
const KV_EXHAUSTED =
  '{"code":500,"message":"Context size has been exceeded.","type":"server_error"}';

/** Reads a response body until `until` shows up in it (or the body ends); returns what was read. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, until: string) {
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes(until)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

describe('createShim keepalive and pre-first-byte errors', () => {
  it.each([
    [30, true],
    [0, false],
  ])(
    'with keepaliveMs %i, a prefill silent for many periods gets event: ping first: %s',
    async (keepaliveMs, pings) => {
      const { emu, route, logDir } = await withEmulator({}, { keepaliveMs });
      // Headers out, then nothing: what llama.cpp and vLLM do while they process a long prompt.
      emu.injectFaults([{ kind: 'stall', afterEvents: 0, ms: 250 }]);
      const response = await post(route, body());
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(text.startsWith(PING)).toBe(pings);
      expect(text.includes('event: ping')).toBe(pings);
      expect(text.startsWith('event: message_start')).toBe(!pings);
      expect(text).toContain('event: message_stop');
      const [line] = await logLines(route, logDir);
      expect(line?.rewrites.includes('keepalive_ping')).toBe(pings);
    },
  );

  it('turns unified-KV exhaustion that is a stream’s first event after a ping into overloaded_error', async () => {
    const { emu, route, logDir } = await withEmulator(
      { nCtx: 16384, parallel: 2, kvUnified: true },
      { keepaliveMs: 20, contextTokens: 16384 },
    );
    // Headers out, then silence: long enough for the shim's pings and for the second request below.
    emu.injectFaults([{ kind: 'stall', afterEvents: 0, ms: 1500 }]);
    const response = await post(
      route,
      body({ messages: [{ role: 'user', content: 'hello '.repeat(1000) }] }),
    );
    // The ping committed the 200: the head came before any backend event.
    expect(response.status).toBe(200);
    const reader = response.body?.getReader();
    if (!reader) throw new Error('no body');
    let text = await readUntil(reader, PING);
    // A prompt that does not fit beside the first in the shared cells fails the running one too (C20/C21).
    const second = await fetch(`${emu.url}/v1/messages`, {
      method: 'POST',
      body: body({ messages: [{ role: 'user', content: 'hello '.repeat(16000) }] }),
    });
    expect(await second.text()).toContain('Context size has been exceeded.');
    text += await readUntil(reader, 'never');
    expect(text.replaceAll(PING, '')).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Context size has been exceeded."}}\n\n',
    );
    const [line] = await logLines(route, logDir);
    expect(line).toMatchObject({ status: 200, events: 1 });
    expect(line?.rewrites).toEqual(
      expect.arrayContaining(['keepalive_ping', 'translate_stream_error']),
    );
    expect(line?.error?.original).toBe(KV_EXHAUSTED);
  });

  it('sends a server error that follows a ping as an api_error event, which Claude Code retries', async () => {
    const { emu, route, logDir } = await withEmulator(
      { latency: { prefillMsPerToken: 25 } },
      { keepaliveMs: 20 },
    );
    // The prefill delays message_start well past the keepalive; the error comes right after it.
    emu.injectFaults([{ kind: 'sse_error', afterEvents: 1 }]);
    const response = await post(route, body());
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text.startsWith(PING)).toBe(true);
    const events = text.replaceAll(PING, '').split('\n\n').filter(Boolean);
    expect(events.map((event) => event.split('\n')[0])).toEqual([
      'event: message_start',
      'event: error',
    ]);
    expect(JSON.parse(events[1]?.split('data: ')[1] ?? '')).toEqual({
      type: 'error',
      error: {
        type: 'api_error',
        message: 'The model produced output that does not match the expected peg-native format',
      },
    });
    const [line] = await logLines(route, logDir);
    expect(line?.rewrites).toEqual(
      expect.arrayContaining(['keepalive_ping', 'translate_stream_error']),
    );
  });

  it.each([
    // The shim's own ping decides when the head goes out: the backend's comment is held, the error stays HTTP.
    [
      60_000,
      529,
      '{"type":"error","error":{"type":"overloaded_error","message":"backend overloaded: Context size has been exceeded. (its shared KV cache is held by other requests; retry)"}}',
    ],
    // No shim keepalive: the backend's comment is the only one, passed on, so the error can only be an event.
    [
      0,
      200,
      ':\n\nevent: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Context size has been exceeded."}}\n\n',
    ],
  ])(
    'with keepaliveMs %i, a backend comment then a leading KV-exhaustion error gives the client %i',
    async (keepaliveMs, status, expected) => {
      const url = await fakeBackend((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // llama.cpp's keepalive comment (`--sse-ping-interval`), then, later, an error as the first event.
        res.write(':\n\n');
        setTimeout(() => res.end(`event: error\ndata: ${KV_EXHAUSTED}\n\n`), 100);
      });
      const { route } = await routeTo(url, { keepaliveMs, contextTokens: 8192 });
      const response = await post(route, body());
      expect(response.status).toBe(status);
      expect(await response.text()).toBe(expected);
    },
  );

  it('keeps an overflow the backend reports after a long silence an HTTP 400, with no ping before it', async () => {
    const url = await fakeBackend((req, res) => {
      req.resume();
      // Silent for many keepalive periods before the backend's answer head.
      setTimeout(() => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              code: 400,
              message: 'request (9011 tokens) exceeds the available context size (8192 tokens)',
              type: 'exceed_context_size_error',
              n_prompt_tokens: 9011,
              n_ctx: 8192,
            },
          }),
        );
      }, 200);
    });
    const { route } = await routeTo(url, { keepaliveMs: 20 });
    const response = await post(route, body());
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'prompt is too long: 9011 tokens > 8192 maximum',
      },
    });
  });
});

describe('createShim client disconnects', () => {
  it('frees the backend slot when the client leaves during a silent prefill, before any byte', async () => {
    const { emu, route, logDir } = await withEmulator();
    emu.injectFaults([{ kind: 'stall', afterEvents: 0, ms: 30_000 }]);
    const controller = new AbortController();
    // The shim holds the head until the first event, so this fetch only settles by the abort.
    const pending = post(route, body(), controller.signal).catch((error: unknown) => error);
    await waitFor(() => slotsBusy(emu), { what: 'the emulator slot to be taken' });
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await waitFor(async () => !(await slotsBusy(emu)), { what: 'the slot to be released' });
    await waitFor(() => route.stats().requests === 1, { what: 'the request to be logged' });
    const [line] = await logLines(route, logDir);
    expect(line).toMatchObject({ aborted: true, status: 499, upstream_status: 200 });
  });
});

const AT_LEAST = (prompt: number, type = 'BadRequestError') =>
  JSON.stringify({
    type: 'error',
    error: {
      type,
      message: `This model's maximum context length is 65536 tokens. However, you requested 32000 output tokens and your prompt contains at least ${prompt} input tokens, for a total of at least ${prompt + 32000} tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=${prompt})`,
    },
  });

describe('createShim vLLM clamp-and-retry', () => {
  it.each([
    // The lower bound leaves room: one clamped retry, which fails too, and no third attempt.
    [33537, 2, 'prompt is too long: 65537 tokens > 65536 maximum', 400],
    // The lower bound alone fills the window: no retry at all.
    [70001, 1, 'prompt is too long: 70001 tokens > 65536 maximum', 400],
    // Newer vLLM's /v1/messages answers the same check 500 internal_error.
    [33537, 2, 'prompt is too long: 65537 tokens > 65536 maximum', 500],
    [70001, 1, 'prompt is too long: 70001 tokens > 65536 maximum', 500],
  ])(
    'answers "at least %i" without count_tokens with %i attempt(s), then prompt is too long, noting the lower bound (HTTP %i)',
    async (prompt, attempts, message, status) => {
      const seen: Array<{ path: string; body: string }> = [];
      const url = await fakeBackend((req, res) => {
        let text = '';
        req.setEncoding('utf8');
        req.on('data', (chunk: string) => (text += chunk));
        req.on('end', () => {
          seen.push({ path: req.url ?? '', body: text });
          const isCount = req.url?.includes('count_tokens') === true;
          res.writeHead(isCount ? 404 : status, { 'content-type': 'application/json' });
          res.end(
            isCount
              ? '{"detail":"Not Found"}'
              : AT_LEAST(prompt, status === 500 ? 'internal_error' : 'BadRequestError'),
          );
        });
      });
      const { route, logDir } = await routeTo(url, { backend: 'vllm', servedId: 'qwen3-coder' });
      const response = await post(route, body({ model: 'qwen3-coder', max_tokens: 32000 }));
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message },
      });
      const messages = seen.filter((r) => !r.path.includes('count_tokens'));
      expect(messages).toHaveLength(attempts);
      if (attempts === 2)
        expect(JSON.parse(messages[1]?.body ?? '{}')).toMatchObject({ max_tokens: 31999 });
      const [line] = await logLines(route, logDir);
      expect(line?.error).toMatchObject({ translated: message, lower_bound: true });
      expect(line?.error?.original).toContain(`at least ${prompt} input tokens`);
      expect(line?.rewrites.includes('retry_clamped')).toBe(attempts === 2);
    },
  );
});

describe('createShim with a vLLM that answers the overflow 500', () => {
  it('turns the emulator’s 500 internal_error into the 400 prompt is too long Claude Code compacts on', async () => {
    const { route, logDir } = await withEmulator(
      { backend: 'vllm', nCtx: 8192, servedNames: ['qwen3-coder'], vllmContextStatus: 500 },
      { backend: 'vllm', servedId: 'qwen3-coder', contextTokens: 8192 },
    );
    const big = 'word '.repeat(12000);
    const response = await post(
      route,
      body({ model: 'qwen3-coder', max_tokens: 4000, messages: [{ role: 'user', content: big }] }),
    );
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: { type: string; message: string } };
    expect(answer.error.type).toBe('invalid_request_error');
    expect(answer.error.message).toMatch(/^prompt is too long: \d+ tokens > 8192 maximum$/);
    const lines = await logLines(route, logDir);
    // The emulator's count_tokens gave the exact size, so the "at least" lower bound was not needed.
    expect(lines.at(-1)).toMatchObject({
      upstream_status: 500,
      error: { translated: answer.error.message },
    });
    expect(lines.at(-1)?.error?.original).toContain('"type":"internal_error"');
    expect(lines.at(-1)?.error?.original).toContain('your prompt contains at least');
  });
});

describe('createShim when the backend drops the stream', () => {
  it('ends the answer with an api_error event Claude Code retries, and logs it', async () => {
    const { emu, route, logDir } = await withEmulator();
    emu.injectFaults([{ kind: 'drop', afterEvents: 3 }]);
    const response = await post(route, body());
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('event: error');
    expect(text).toContain('backend closed the stream mid-response');
    const [line] = await logLines(route, logDir);
    expect(line?.error).toMatchObject({
      original: 'connection closed',
      translated: 'backend closed the stream mid-response',
    });
  });
});

describe('createShim with a malformed event', () => {
  it('passes it on and logs the request with the event, not as a clean 200', async () => {
    const url = await fakeBackend((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"q","usage":{"input_tokens":3,"output_tokens":0}}}\n\n' +
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"te\n\n' +
            'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        );
      });
    });
    const { route, logDir } = await routeTo(url, { backend: 'llama.cpp', servedId: 'q' });
    const response = await post(route, body({ model: 'q' }));
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('"delta":{"type":"te\n');
    const [line] = await logLines(route, logDir);
    expect(line).toMatchObject({
      status: 200,
      error: { translated: '1 malformed event(s) passed on as the backend sent them' },
    });
    expect(line?.error?.original).toContain('event: content_block_delta');
  });
});

describe('requests.jsonl', () => {
  it('has exactly the fields docs/shim.md documents', async () => {
    const { route, logDir } = await withEmulator();
    expect((await post(route, body())).status).toBe(200);
    const [line] = await logLines(route, logDir);
    const docs = await readFile(new URL('../../docs/shim.md', import.meta.url), 'utf8');
    const section = docs.slice(
      docs.indexOf('## Request log'),
      docs.indexOf('**Prefix stability**'),
    );
    const documented = [...section.matchAll(/^\| ((?:`[a-z_]+`(?:, )?)+) \|/gm)].flatMap((m) =>
      [...(m[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((name) => name[1]),
    );
    expect(documented.sort()).toEqual(Object.keys(line ?? {}).sort());
  });
});

describe('createShim onBackendError', () => {
  const KV_FULL = { code: 500, message: 'Context size has been exceeded.', type: 'server_error' };

  async function observedShim(onBackendError: (route: RouteConfig, kind: string) => void) {
    const emu = await startEmulator({ nCtx: 65536 });
    cleanup.push(() => emu.close());
    const shim = await createShim({
      onBackendError: (route, error) => onBackendError(route, error.kind),
    });
    cleanup.push(() => shim.close());
    const route = shim.addRoute({
      backendUrl: emu.url,
      backend: 'llama.cpp',
      servedId: 'qwen-test',
    });
    return { emu, route };
  }

  it.each([
    // As an HTTP answer (C13/C14) and as an event after some deltas (C20).
    ['an HTTP 500', { kind: 'status', status: 500, body: { error: KV_FULL } }, 529],
    ['a mid-stream event: error', { kind: 'sse_error', afterEvents: 3, error: KV_FULL }, 200],
  ] as const)('reports unified-KV exhaustion that comes as %s', async (_, fault, status) => {
    const seen: Array<[string, string]> = [];
    const { emu, route } = await observedShim((config, kind) =>
      seen.push([config.backendUrl, kind]),
    );
    emu.injectFaults([fault]);
    const response = await post(route, body());
    expect(response.status).toBe(status);
    await response.text();
    expect(seen).toEqual([[emu.url, 'kv_exhausted']]);
  });

  it('still answers the client when the observer throws', async () => {
    const { emu, route } = await observedShim(() => {
      throw new Error('observer bug');
    });
    emu.injectFaults([{ kind: 'status', status: 500, body: { error: KV_FULL } }]);
    const response = await post(route, body());
    expect(response.status).toBe(529);
    expect(await response.text()).toContain('overloaded_error');
  });
});

describe('createShim opening a route’s next request ahead of need', () => {
  /** A backend that answers every request with a small JSON message and tracks its open connections. */
  async function countingBackend() {
    const open = new Set<Socket>();
    const paths: string[] = [];
    const { url, server } = await listenBackend((req, res) => {
      paths.push(req.url ?? '');
      req.resume();
      req.on('end', () => {
        const answer = JSON.stringify({
          id: 'm',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'ok' }],
          model: 'qwen-test',
          stop_reason: 'end_turn',
          usage: { input_tokens: 1, output_tokens: 1 },
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
      });
    });
    server.on('connection', (socket: Socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    });
    return { url, server, open, paths };
  }

  const ask = (route: ShimRoute) => post(route, body({ stream: false }));

  it('answers the next request after the backend closed the idle connection the spare waited on', async () => {
    const backend = await countingBackend();
    const { route } = await routeTo(backend.url);
    expect((await ask(route)).status).toBe(200);
    // The spare is opened on the freed connection a turn after the answer; then the backend drops it.
    await waitFor(() => backend.open.size === 1, { what: 'the answer’s connection kept open' });
    backend.server.closeIdleConnections();
    await waitFor(() => backend.open.size === 0, { what: 'the backend to close the connection' });
    const again = await ask(route);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { content: unknown[] }).content).toHaveLength(1);
    expect(backend.paths).toEqual(['/v1/messages?beta=true', '/v1/messages?beta=true']);
  });

  it('sends a request for another path the usual way and keeps the spare for the next message', async () => {
    const backend = await countingBackend();
    const { route } = await routeTo(backend.url);
    expect((await ask(route)).status).toBe(200);
    const counted = await fetch(`${route.baseUrl}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body({}),
    });
    expect(counted.status).toBe(200);
    expect((await ask(route)).status).toBe(200);
    expect(backend.paths).toEqual([
      '/v1/messages?beta=true',
      '/v1/messages/count_tokens',
      '/v1/messages?beta=true',
    ]);
  });

  it('leaves no connection of a closed route behind: routes one after another hold one at most', async () => {
    const backend = await countingBackend();
    const shim = await createShim();
    cleanup.push(() => shim.close());
    for (let index = 0; index < 5; index++) {
      const route = shim.addRoute({
        backendUrl: backend.url,
        backend: 'llama.cpp',
        servedId: 'qwen-test',
      });
      expect((await ask(route)).status).toBe(200);
      await route.close();
      expect(backend.open.size).toBeLessThanOrEqual(1);
    }
  });
});

describe('createShim bookkeeping', () => {
  it('counts a finished request once the next one has gone to the backend, not before, and not after its answer', async () => {
    const emu = await startEmulator({ nCtx: 65536 });
    cleanup.push(() => emu.close());
    // A quiet period longer than the test: only the next request's send can trigger the bookkeeping.
    const shim = await createShim({ bookkeepingQuietMs: 600_000 });
    cleanup.push(() => shim.close());
    const route = shim.addRoute({
      backendUrl: emu.url,
      backend: 'llama.cpp',
      servedId: 'qwen-test',
    });
    const first = await post(route, body({ stream: true }));
    await first.text();
    expect(route.stats().requests).toBe(0);
    emu.injectFaults([{ kind: 'hold' }]);
    const second = post(route, body({ stream: true }));
    await waitFor(() => emu.heldRequests() === 1, { what: 'the second request held' });
    await waitFor(() => route.stats().requests === 1, { what: 'the first request counted' });
    emu.releaseHolds();
    await (await second).text();
    await route.close();
    expect(route.stats().requests).toBe(2);
  });
});
