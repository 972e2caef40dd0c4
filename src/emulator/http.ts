/** Response writing with each server's headers (fixtures: `Server: llama.cpp`, empty CORS header; vLLM: uvicorn). */
import type { IncomingMessage, ServerResponse } from 'node:http';
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
  return dialect === 'llama.cpp'
    ? llamaHeaders(status, res.shouldKeepAlive)
    : { server: 'uvicorn' };
}

export function sendJson(
  res: ServerResponse,
  dialect: Dialect,
  status: number,
  body: unknown,
): void {
  if (res.headersSent || res.destroyed) return;
  // A string is JSON text already (fault bodies given verbatim).
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const type = dialect === 'llama.cpp' ? 'application/json; charset=utf-8' : 'application/json';
  res.writeHead(status, {
    ...baseHeaders(res, dialect, status),
    'Content-Type': type,
    'Content-Length': String(Buffer.byteLength(text)),
  });
  res.end(text);
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
  });
  res.end(text);
}

export function startSse(res: ServerResponse, dialect: Dialect): void {
  const type = dialect === 'llama.cpp' ? 'text/event-stream' : 'text/event-stream; charset=utf-8';
  const extra = dialect === 'llama.cpp' ? { 'X-Accel-Buffering': 'no' } : {};
  res.writeHead(200, { ...baseHeaders(res, dialect, 200), ...extra, 'Content-Type': type });
  res.flushHeaders();
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
