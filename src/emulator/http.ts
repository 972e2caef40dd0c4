/**
 * Response writing with each server's headers: llama-server (`Server: llama.cpp`, empty CORS header),
 * vLLM (uvicorn), Ollama (Go net/http: no Server header; Go-encoded JSON), LM Studio (Express:
 * `X-Powered-By`, a weak ETag, lmstudio-bug-tracker#618).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { goJson } from './go-json.js';
import type { Dialect } from './message-format.js';

/**
 * cpp-httplib's headers: errors close the connection; successes advertise Keep-Alive, unless the
 * client asked for `Connection: close` (A49: then only `Connection: close`, which node:http adds).
 */
export function llamaHeaders(status: number, keepAlive: boolean): Record<string, string> {
  const connection: Record<string, string> =
    status >= 400
      ? { Connection: 'close' }
      : keepAlive
        ? { 'Keep-Alive': 'timeout=5, max=100' }
        : {};
  return { ...connection, Server: 'llama.cpp', 'Access-Control-Allow-Origin': '' };
}

function baseHeaders(
  res: ServerResponse,
  dialect: Dialect,
  status: number,
): Record<string, string> {
  switch (dialect) {
    case 'llama.cpp':
      return llamaHeaders(status, res.shouldKeepAlive);
    case 'vllm':
      return { server: 'uvicorn' };
    case 'ollama':
      return {};
    case 'lmstudio':
      return { 'X-Powered-By': 'Express' };
  }
}

interface JsonStyle {
  type: string;
  encode: (body: unknown) => string;
}

const JSON_STYLES: Readonly<Record<Dialect, JsonStyle>> = {
  'llama.cpp': { type: 'application/json; charset=utf-8', encode: (body) => JSON.stringify(body) },
  vllm: { type: 'application/json', encode: (body) => JSON.stringify(body) },
  // Ollama's Anthropic and OpenAI writers: json.NewEncoder, so Go escaping and a trailing newline.
  ollama: { type: 'application/json', encode: (body) => `${goJson(body)}\n` },
  lmstudio: { type: 'application/json; charset=utf-8', encode: (body) => JSON.stringify(body) },
};

/** Express's default ETag: weak, the length in hex and 27 characters of the body's base64 SHA-1. */
export function expressEtag(text: string): string {
  const hash = createHash('sha1').update(text, 'utf8').digest('base64').slice(0, 27);
  return `W/"${Buffer.byteLength(text).toString(16)}-${hash}"`;
}

function extraHeaders(dialect: Dialect, text: string): Record<string, string> {
  return dialect === 'lmstudio' ? { ETag: expressEtag(text) } : {};
}

export function sendJson(
  res: ServerResponse,
  dialect: Dialect,
  status: number,
  body: unknown,
): void {
  if (res.headersSent || res.destroyed) return;
  const style = JSON_STYLES[dialect];
  // A string is JSON text already (fault bodies given verbatim).
  const text = typeof body === 'string' ? body : style.encode(body);
  res.writeHead(status, {
    ...baseHeaders(res, dialect, status),
    'Content-Type': style.type,
    'Content-Length': String(Buffer.byteLength(text)),
    ...extraHeaders(dialect, text),
  });
  res.end(text);
}

/** Ollama's gin `c.JSON` (its /api routes, the middleware's 400s): Go JSON, no newline, charset. */
export function sendGinJson(res: ServerResponse, status: number, body: unknown): void {
  sendText(res, 'ollama', status, goJson(body), {
    'Content-Type': 'application/json; charset=utf-8',
  });
}

export function sendText(
  res: ServerResponse,
  dialect: Dialect,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    ...baseHeaders(res, dialect, status),
    ...headers,
    'Content-Length': String(Buffer.byteLength(text)),
    ...extraHeaders(dialect, text),
  });
  res.end(text);
}

const SSE_HEADERS: Readonly<Record<Dialect, Record<string, string>>> = {
  'llama.cpp': { 'X-Accel-Buffering': 'no', 'Content-Type': 'text/event-stream' },
  vllm: { 'Content-Type': 'text/event-stream; charset=utf-8' },
  // Set by the Anthropic middleware; Go writes them with the first chunk.
  ollama: {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
  },
  // [inferred] what an Express SSE handler sets.
  lmstudio: {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
  },
};

/**
 * Writes an SSE response head. Every server but Ollama sends it at once; Ollama's goes out with the
 * first chunk, so during prefill the client sees no byte at all (node:http holds an unflushed head
 * until the first write).
 */
export function startSse(res: ServerResponse, dialect: Dialect): void {
  const headers = { ...baseHeaders(res, dialect, 200), ...SSE_HEADERS[dialect] };
  // A client that sent `Connection: close` gets that, whatever the handler set.
  if (!res.shouldKeepAlive) delete headers.Connection;
  res.writeHead(200, headers);
  if (dialect !== 'ollama') res.flushHeaders();
}

/** The whole body as text; requests are small enough (≤ a few MB) to hold. */
export async function readBody(req: IncomingMessage): Promise<string> {
  req.setEncoding('utf8');
  let text = '';
  for await (const chunk of req as AsyncIterable<string>) text += chunk;
  return text;
}

export function headerRecord(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}
