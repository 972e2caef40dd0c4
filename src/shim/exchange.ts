import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { RequestLogLine } from './log.js';
import type { AnthropicRequest } from './normalize.js';
import type { RouteRuntime } from './route.js';
import { countInStats } from './route.js';
import { createCancellation, type Cancellation } from './upstream.js';

/** One request on one route: the client's request and response, and the log line built up as it goes. */
export interface Exchange {
  route: RouteRuntime;
  req: IncomingMessage;
  res: ServerResponse;
  /** Path below `/j/<token>`, query kept. */
  path: string;
  /** Cancelled when the client goes away or the route closes: ends the backend request. */
  cancellation: Cancellation;
  /** Cancels the backend requests, and drops the client's connection if its answer is unfinished. */
  abandon: () => void;
  /** performance.now() when the request arrived. */
  startedAt: number;
  /** Date.now() then: `line.ts` is formatted from it off the hot path. */
  startedWall: number;
  line: RequestLogLine;
  /** Bookkeeping deferred off the hot path, run at the latest just before the line is written. */
  beforeLog: Array<() => void>;
  /** The forwarded request, parsed on first use (a `/v1/messages` body; undefined for other paths). */
  request: () => AnthropicRequest | undefined;
}

export function createExchange(
  route: RouteRuntime,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Exchange {
  const cancellation = createCancellation();
  const exchange: Exchange = {
    route,
    req,
    res,
    path,
    cancellation,
    abandon: () => {
      cancellation.cancel();
      if (!res.writableEnded) res.destroy();
    },
    startedAt: performance.now(),
    startedWall: Date.now(),
    beforeLog: [],
    request: () => undefined,
    line: {
      kind: 'request',
      // Formatted when first needed (requestTime): a Date and its ISO string are not worth making on the way in.
      ts: '',
      seq: ++route.seq,
      method: req.method ?? 'GET',
      path,
      session: headerValue(req.headers['x-claude-code-session-id']),
      status: 0,
      upstream_status: null,
      ttfb_ms: null,
      ms: 0,
      model: null,
      upstream_model: null,
      stream: false,
      messages: 0,
      tools: 0,
      bytes_in: 0,
      bytes_upstream: 0,
      bytes_out: 0,
      events: null,
      usage: null,
      stop_reason: null,
      rewrites: [],
      error: null,
      prefix: null,
      aborted: false,
    },
  };
  route.open.add(exchange);
  res.on('close', () => {
    route.open.delete(exchange);
    // The client went away (or the route closed) before the answer was complete: stop the backend's generation.
    if (!res.writableFinished) {
      exchange.line.aborted = true;
      cancellation.cancel();
    }
  });
  return exchange;
}

/** The request's arrival as requests.jsonl writes it (`ts`). */
export function requestTime(exchange: Exchange): string {
  if (exchange.line.ts === '') exchange.line.ts = new Date(exchange.startedWall).toISOString();
  return exchange.line.ts;
}

function headerValue(value: string | string[] | undefined): string | null {
  if (Array.isArray(value)) return value[0] ?? null;
  return value ?? null;
}

function elapsed(exchange: Exchange): number {
  return Math.round((performance.now() - exchange.startedAt) * 100) / 100;
}

/** Sends the head once; the first byte also fixes `ttfb_ms`. */
export function writeHead(exchange: Exchange, status: number, headers: OutgoingHttpHeaders): void {
  if (exchange.res.headersSent) return;
  exchange.line.status = status;
  exchange.res.writeHead(status, headers);
}

/** Writes body bytes; returns false when the client's socket is full (the caller pauses the backend). */
export function writeBody(exchange: Exchange, data: Buffer | string): boolean {
  if (exchange.line.ttfb_ms === null) exchange.line.ttfb_ms = elapsed(exchange);
  exchange.line.bytes_out += typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  return exchange.res.write(data);
}

export function endResponse(exchange: Exchange, data?: Buffer | string): void {
  if (data !== undefined && data.length > 0) writeBody(exchange, data);
  else if (exchange.line.ttfb_ms === null) exchange.line.ttfb_ms = elapsed(exchange);
  exchange.res.end();
}

/** A complete JSON answer (local answers and translated errors). */
export function sendJson(
  exchange: Exchange,
  status: number,
  body: string,
  headers: OutgoingHttpHeaders = {},
): void {
  if (exchange.res.headersSent) {
    exchange.res.end();
    return;
  }
  writeHead(exchange, status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  endResponse(exchange, body);
}

/** Writes the log line and counts the request, once, after the response is done or abandoned. */
export function finishExchange(exchange: Exchange): void {
  const { line, route } = exchange;
  requestTime(exchange);
  for (const task of exchange.beforeLog.splice(0)) task();
  line.ms = elapsed(exchange);
  if (line.status === 0) line.status = exchange.res.headersSent ? exchange.res.statusCode : 499;
  countInStats(route.stats, line);
  route.log?.append(line);
  route.diagnostics.debug('shim request', {
    seq: line.seq,
    path: line.path,
    status: line.status,
    ms: line.ms,
  });
}
