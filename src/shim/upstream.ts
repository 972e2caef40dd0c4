import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { classifyConnectError } from '../connect-errors.js';

/** How to reach one backend: its base URL split once, the key to send, the pooled agents. */
export interface Upstream {
  url: URL;
  /** What http.request needs of the URL, read once: a URL's getters build a string on every read. */
  target: {
    send: typeof http.request;
    protocol: string;
    hostname: string;
    port: string | number;
    agent: http.Agent;
  };
  /** Path prefix of the base URL, without a trailing slash or `/v1` (Claude Code's paths carry `/v1`). */
  prefix: string;
  apiKey: string | undefined;
  /** `Basic …` from a base URL's userinfo (`http://user:pass@host`), sent when there is no API key. */
  basicAuth: string | undefined;
  agents: Agents;
  /** A request opened ahead of the route's next one (see openUpstream), or undefined. */
  spare: SpareRequest | undefined;
  /** The route is gone: no spare is opened any more. */
  closed: boolean;
}

/** A request opened on a pooled connection before it is needed: nothing of it is sent until it is used. */
interface SpareRequest {
  method: string;
  path: string;
  opened: OpenedRequest;
}

export interface Agents {
  http: http.Agent;
  https: https.Agent;
}

/** Keep-alive pools: a fresh TCP connection per request would cost more than the whole relay. */
export function createAgents(): Agents {
  return {
    http: new http.Agent({ keepAlive: true, maxSockets: Infinity, noDelay: true }),
    https: new https.Agent({ keepAlive: true, maxSockets: Infinity, noDelay: true }),
  };
}

export function destroyAgents(agents: Agents): void {
  agents.http.destroy();
  agents.https.destroy();
}

export function createUpstream(
  backendUrl: string,
  apiKey: string | undefined,
  agents: Agents,
): Upstream {
  const url = new URL(backendUrl);
  const prefix = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  // The probes send it (Node's http takes userinfo from a URL), so jobs must too.
  const basicAuth =
    url.username === '' && url.password === ''
      ? undefined
      : `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  const secure = url.protocol === 'https:';
  const target = {
    send: secure ? https.request : http.request,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port || (secure ? 443 : 80),
    agent: secure ? agents.https : agents.http,
  };
  return { url, target, prefix, apiKey, basicAuth, agents, spare: undefined, closed: false };
}

/** RFC 9110 §7.6.1 hop-by-hop headers, plus what the shim itself sets or must not pass on. */
const DROPPED_REQUEST_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'content-length',
  'content-encoding',
  // The client's key is a placeholder for the shim; the backend's own key is added below.
  'authorization',
  'x-api-key',
  // The shim reads the response, so it must arrive uncompressed.
  'accept-encoding',
]);

export function forwardHeaders(
  headers: IncomingHttpHeaders,
  upstream: Upstream,
  bodyLength: number | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  // Keys, not entries: no array per header on every request (Claude Code sends about twenty).
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined || DROPPED_REQUEST_HEADERS.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  if (bodyLength !== undefined) out['content-length'] = String(bodyLength);
  // vLLM accepts only `Authorization: Bearer`; llama.cpp accepts it too (backends.md §3 item 17).
  if (upstream.apiKey) out.authorization = `Bearer ${upstream.apiKey}`;
  else if (upstream.basicAuth) out.authorization = upstream.basicAuth;
  return out;
}

/**
 * What ends backend requests early: the client went away or the route closed. A plain callback list, not an
 * AbortSignal: http.request's `signal` option costs 18 µs a request (measured), a tenth of what the shim adds.
 */
export interface Cancellation {
  readonly cancelled: boolean;
  /** Runs `stop` on cancel (at once when already cancelled); the returned function unsubscribes it. */
  onCancel(stop: () => void): () => void;
}

/** A Cancellation and the means to cancel it (once; later calls do nothing). */
export interface CancellationSource extends Cancellation {
  cancel(): void;
}

interface CancellationState extends CancellationSource {
  cancelled: boolean;
  /** Most requests never subscribe more than their one backend request. */
  stops: Set<() => void> | undefined;
}

const NOTHING_TO_UNSUBSCRIBE = (): void => undefined;

function onCancel(this: CancellationState, stop: () => void): () => void {
  if (this.cancelled) {
    stop();
    return NOTHING_TO_UNSUBSCRIBE;
  }
  const stops = (this.stops ??= new Set());
  stops.add(stop);
  return () => stops.delete(stop);
}

function cancel(this: CancellationState): void {
  if (this.cancelled) return;
  this.cancelled = true;
  if (this.stops) for (const stop of this.stops) stop();
  this.stops = undefined;
}

/**
 * One is made for every request: a plain object whose methods are shared, not closures over a literal with a
 * getter (a literal's accessor is defined through the runtime each time it is evaluated).
 */
export function createCancellation(): CancellationSource {
  const state: CancellationState = { cancelled: false, stops: undefined, onCancel, cancel };
  return state;
}

export interface UpstreamRequest {
  method: string;
  /** Path below the base URL, query included: `/v1/messages?beta=true`. */
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  cancellation: Cancellation;
}

/** A request under way: its body may still be being written. `response` never rejects unhandled. */
export interface OpenedRequest {
  outgoing: http.ClientRequest;
  response: Promise<IncomingMessage>;
  /**
   * Told of the answer's head as it arrives, before `response` settles: whoever acts on it there (a stream relay
   * attaching) saves the turns of the event loop an awaited promise takes. Set before the head can arrive.
   */
  onHead: ((upstream: IncomingMessage) => void) | undefined;
  /** Drops a request whose body was not finished: the backend never sees a complete request. */
  abandon(): void;
}

/**
 * Opens a request to the backend; nothing is sent until its body is written. The route's next request is opened
 * ahead of need once an answer ends, on the connection that answer frees: when the next one has the same method
 * and path (Claude Code's `POST /v1/messages?beta=true`, turn after turn), building the request and attaching its
 * socket (a third of the time from the client's request to the backend's, measured) are already done.
 */
export function openUpstream(
  upstream: Upstream,
  request: Omit<UpstreamRequest, 'body'>,
): OpenedRequest {
  const opened =
    takeSpare(upstream, request) ??
    openRequest(upstream, request.method, request.path, request.headers);
  const { outgoing } = opened;
  const unsubscribe = request.cancellation.onCancel(() => outgoing.destroy());
  outgoing.on('close', unsubscribe);
  return opened;
}

/** The spare, with this request's headers, when it was opened for the same method and path and still works. */
function takeSpare(
  upstream: Upstream,
  request: Omit<UpstreamRequest, 'body'>,
): OpenedRequest | undefined {
  const { spare } = upstream;
  if (!spare || spare.method !== request.method || spare.path !== request.path) return undefined;
  upstream.spare = undefined;
  const { outgoing } = spare.opened;
  // Its connection went while it waited, in a turn that has not run its 'close' yet.
  if (outgoing.destroyed) {
    outgoing.destroy();
    return undefined;
  }
  for (const name of Object.keys(request.headers)) {
    const value = request.headers[name];
    if (value !== undefined) outgoing.setHeader(name, value);
  }
  return spare.opened;
}

function openRequest(
  upstream: Upstream,
  method: string,
  path: string,
  headers: Record<string, string>,
): OpenedRequest {
  const { target } = upstream;
  const outgoing = target.send({
    protocol: target.protocol,
    hostname: target.hostname,
    port: target.port,
    method,
    path: upstream.prefix + path,
    headers,
    agent: target.agent,
  });
  const opened: OpenedRequest = {
    outgoing,
    response: new Promise<IncomingMessage>((resolve, reject) => {
      outgoing.on('response', (answer) => {
        // The connection comes free when this answer ends: the next message can be opened on it.
        if (isMessages(method, path))
          answer.on('end', () => setImmediate(openSpare, upstream, method, path));
        try {
          opened.onHead?.(answer);
        } finally {
          resolve(answer);
        }
      });
      // `on`, not `once`: a request opened early can fail again when its body is written after a connect error.
      outgoing.on('error', reject);
    }),
    onHead: undefined,
    abandon: () => outgoing.destroy(),
  };
  opened.response.catch(() => undefined);
  return opened;
}

/** What Claude Code sends turn after turn; a spare for anything else would only hold a connection. */
function isMessages(method: string, path: string): boolean {
  return method === 'POST' && (path === '/v1/messages' || path.startsWith('/v1/messages?'));
}

function openSpare(upstream: Upstream, method: string, path: string): void {
  if (upstream.closed || upstream.spare) return;
  const opened = openRequest(upstream, method, path, {});
  const spare: SpareRequest = { method, path, opened };
  // A spare whose connection fails while it waits (the backend closed an idle keep-alive connection) is dropped;
  // once taken, its errors are the request's to handle.
  const drop = (): void => {
    if (upstream.spare === spare) upstream.spare = undefined;
  };
  opened.response.catch(drop);
  opened.outgoing.on('close', drop);
  upstream.spare = spare;
}

/** The route is done with its backend: its spare request goes, and none is opened again. */
export function closeUpstream(upstream: Upstream): void {
  upstream.closed = true;
  upstream.spare?.opened.outgoing.destroy();
  upstream.spare = undefined;
}

/** Sends the whole body on a request opened before its body was known (nothing written on it yet). */
export function sendOn(opened: OpenedRequest, body: Buffer): OpenedRequest {
  opened.outgoing.setHeader('content-length', body.length);
  opened.outgoing.end(body);
  return opened;
}

/** Opens a request and sends its whole body; the caller awaits `response` (rejects on connect/socket errors). */
export function sendUpstream(upstream: Upstream, request: UpstreamRequest): OpenedRequest {
  const opened = openUpstream(upstream, request);
  opened.outgoing.end(request.body);
  return opened;
}

/** Resolves with the response head; the body is the caller's to stream. Rejects on connect/socket errors. */
export function requestUpstream(
  upstream: Upstream,
  request: UpstreamRequest,
): Promise<IncomingMessage> {
  return sendUpstream(upstream, request).response;
}

/** A whole (small) body: error answers, count_tokens. Capped so a misbehaving backend cannot fill memory. */
export async function readBody(stream: AsyncIterable<Buffer>, limitBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size + chunk.length > limitBytes) {
      chunks.push(chunk.subarray(0, limitBytes - size));
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks);
}

/**
 * Why a backend could not be reached, in words a user can act on (classified as the probes do): the endpoint by
 * its name and URL (never the shim's own port), and vLLM's loading habit only for a vLLM endpoint.
 */
export function describeConnectError(
  error: unknown,
  url: URL,
  endpoint: { name?: string | undefined; backend?: string | undefined } = {},
): string {
  const { failure, code } = classifyConnectError(error);
  const what =
    failure === 'refused'
      ? endpoint.backend === 'vllm'
        ? 'connection refused (nothing listening; vLLM refuses connections while it loads a model)'
        : 'connection refused (nothing listening there: the server is not running)'
      : failure === 'unreachable'
        ? code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? 'host not found'
          : 'host unreachable'
        : failure === 'timeout'
          ? 'host unreachable (timed out)'
          : code === 'ECONNRESET'
            ? 'connection reset'
            : error instanceof Error
              ? error.message
              : String(error);
  const where = endpoint.name
    ? `endpoint ${endpoint.name} (${url.origin})`
    : `backend ${url.origin}`;
  return `${where} unreachable: ${what}`;
}
