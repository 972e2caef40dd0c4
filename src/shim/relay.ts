import type { IncomingMessage } from 'node:http';
import { classifyBackendError, type BackendError } from './backend-errors.js';
import { requestTime, sendJson, type Exchange } from './exchange.js';
import { redactHeaders, toPrefixLog } from './log.js';
import { relayJson } from './json-relay.js';
import {
  estimatePromptTokens,
  normalizeRequest,
  type AnthropicRequest,
  type NormalizeResult,
} from './normalize.js';
import { retryDecision } from './retry.js';
import { prepareStreamRelay } from './stream-relay.js';
import { promptTooLong } from './errors.js';
import { classifyRequest } from './prefix-stability.js';
import { sendClientError, translateAndSend } from './translate.js';
import { answerCheck, type AnswerCheck, type Conversation } from './truncation-guard.js';
import { receiveBody } from './receive.js';
import {
  describeConnectError,
  forwardHeaders,
  readBody,
  sendOn,
  sendUpstream,
  type OpenedRequest,
} from './upstream.js';

const MAX_ERROR_BYTES = 1024 * 1024;

/** Handles one request on a route: local answers, `/v1/messages`, `count_tokens`, and everything else passed on. */
export async function handleExchange(exchange: Exchange): Promise<void> {
  const { req, path } = exchange;
  const queryAt = path.indexOf('?');
  const pathname = queryAt === -1 ? path : path.slice(0, queryAt);
  // Claude Code's startup probe (contract §2.1): answered here, the backend has nothing to say about it.
  if (pathname === '/api/hello') {
    sendJson(exchange, 200, '{}');
    return;
  }
  const isMessages = pathname === '/v1/messages';
  const isCount = pathname === '/v1/messages/count_tokens';
  // A guarded route sizes the prompt before sending it: nothing goes upstream while the body arrives.
  const received = await receiveBody(
    exchange,
    req.method === 'POST' && isMessages && exchange.route.guard === undefined,
  );
  if (received === undefined) return;
  const { raw, sent, unsent, scanned } = received;
  exchange.line.bytes_in = raw.length;
  if (req.method === 'POST' && (isMessages || isCount)) {
    // A body already streamed to the backend was proved clean on the way: nothing to rewrite.
    const normalized: NormalizeResult = sent
      ? { kind: 'untouched' }
      : normalizeRequest(raw, exchange.route.config, { scanned });
    if (normalized.kind === 'invalid') {
      unsent?.abandon();
      sendClientError(
        exchange,
        { status: 400, type: 'invalid_request_error', message: normalized.message },
        normalized.message,
      );
      return;
    }
    const body = normalized.kind === 'rewritten' ? normalized.body : raw;
    if (normalized.kind === 'rewritten') exchange.line.rewrites.push(...normalized.rewrites);
    // Built only when asked for: redacting the headers is work every request would otherwise pay.
    if (exchange.route.config.dumpFullRequests)
      exchange.route.log?.appendFull({
        kind: 'request_body',
        ts: requestTime(exchange),
        seq: exchange.line.seq,
        path,
        headers: redactHeaders(req.headers),
        body,
      });
    // Parsed only when needed: the fast path forwards a body nobody has parsed yet.
    let parsed = normalized.request;
    const request = (): AnthropicRequest | undefined => {
      if (parsed) return parsed;
      const result = exchange.route.toolLists.parse(body);
      parsed = result.ok ? result.request : undefined;
      return parsed;
    };
    exchange.request = request;
    // Off the hot path: counted and fingerprinted once the answer is done, so a 1 MB parse never holds up the
    // relay (it shares this thread with every other stream).
    exchange.beforeLog.push(() => {
      const forwarded = request();
      if (!forwarded) return;
      describeRequest(
        exchange,
        normalized.kind === 'rewritten'
          ? normalized.original
          : { model: forwarded.model, messages: forwarded.messages.length },
        forwarded,
      );
      if (isMessages) {
        const verdict = exchange.route.tracker.check(forwarded, exchange.line.session ?? undefined);
        exchange.line.prefix = toPrefixLog(verdict);
      }
    });
    await (isMessages
      ? relayMessages(exchange, request, body, sent ?? unsent)
      : relayCountTokens(exchange, body));
    return;
  }
  await relayOther(exchange, raw);
}

/** `original`: what the client sent of what rewrites change; the tool list is never rewritten. */
function describeRequest(
  exchange: Exchange,
  original: { model: string | undefined; messages: number },
  request: AnthropicRequest,
): void {
  const { line } = exchange;
  line.model = original.model ?? null;
  line.upstream_model = request.model ?? null;
  line.stream = request.stream === true;
  line.messages = original.messages;
  line.tools = request.tools?.length ?? 0;
}

type Attempt =
  | { kind: 'answer'; upstream: IncomingMessage }
  | { kind: 'error'; error: BackendError; text: string }
  | { kind: 'gone' };

/**
 * The request to the backend, sent. `opened`, when given, was opened as the client's request arrived: either
 * already sent whole (its body streamed as it came) or still empty, and then `body` goes out on it.
 */
function backendRequest(
  exchange: Exchange,
  method: string,
  body: Buffer | undefined,
  opened: OpenedRequest | undefined,
): OpenedRequest {
  if (opened?.outgoing.writableEnded) return opened;
  if (opened && body) return sendOn(opened, body);
  const { route, req } = exchange;
  return sendUpstream(route.upstream, {
    method,
    path: exchange.path,
    headers: forwardHeaders(req.headers, route.upstream, body?.length),
    body,
    cancellation: exchange.cancellation,
  });
}

/**
 * Sends the request and reads the answer's head. `onStream` is handed a 200 event stream the moment its head
 * arrives, ahead of the promise (see OpenedRequest.onHead); the attempt still resolves as `answer`.
 */
async function attempt(
  exchange: Exchange,
  method: string,
  body: Buffer | undefined,
  opened?: OpenedRequest,
  onStream?: (upstream: IncomingMessage) => void,
): Promise<Attempt> {
  const { route } = exchange;
  exchange.line.bytes_upstream = body?.length ?? 0;
  let upstream: IncomingMessage;
  let noted = false;
  let failedAtHead: Error | undefined;
  try {
    const request = backendRequest(exchange, method, body, opened);
    route.whileBackendWorks();
    request.onHead = (answer) => {
      noted = true;
      try {
        if (headSaysAnswer(exchange, answer) && isEventStream(answer)) onStream?.(answer);
      } catch (error) {
        failedAtHead = error instanceof Error ? error : new Error(String(error));
      }
    };
    upstream = await request.response;
  } catch (error) {
    if (exchange.cancellation.cancelled) return { kind: 'gone' };
    // Not a socket reset: Claude Code retries a 502 like any 5xx (contract §3.1).
    const message = describeConnectError(error, route.upstream.url, {
      name: route.config.endpointName,
      backend: route.config.backend,
    });
    route.config.watch?.({ kind: 'unreachable', message });
    sendClientError(exchange, { status: 502, type: 'api_error', message }, String(error));
    return { kind: 'gone' };
  }
  // A bug in what the head was handed to: the request fails like any other handler error.
  if (failedAtHead !== undefined) throw failedAtHead;
  // The head arrived before the hook was set (a request opened early): noted now, handed over by the caller.
  if (!noted) headSaysAnswer(exchange, upstream);
  const status = upstream.statusCode ?? 502;
  if (status < 400) return { kind: 'answer', upstream };
  let text: string;
  try {
    text = (await readBody(upstream, MAX_ERROR_BYTES)).toString('utf8');
  } catch (error) {
    // The client left (the backend request was aborted) or the backend died mid-answer.
    if (exchange.cancellation.cancelled) return { kind: 'gone' };
    text = `backend answered ${status} and then closed the connection: ${String(error)}`;
  }
  return { kind: 'error', error: classifyBackendError(status, text), text };
}

/** Notes the answer's status; true for an answer to relay (below 400), which also tells the route's watcher. */
function headSaysAnswer(exchange: Exchange, upstream: IncomingMessage): boolean {
  const status = upstream.statusCode ?? 502;
  exchange.line.upstream_status = status;
  if (status >= 400) return false;
  exchange.route.config.watch?.({ kind: 'answered' });
  return true;
}

function isEventStream(upstream: IncomingMessage): boolean {
  return (upstream.headers['content-type'] ?? '').includes('text/event-stream');
}

/**
 * Which conversation a prompt extends, for the guard's anchors: a session's main chain or one of its subagents. A
 * compaction request extends the main chain's last prompt (its instruction is appended); a title request shares the
 * session id but not the prompt, and belongs to none.
 */
function conversationOf(exchange: Exchange): Conversation | undefined {
  const request = exchange.request();
  if (!request) return undefined;
  const session = exchange.line.session ?? '';
  const kind = classifyRequest(request);
  if (kind.kind === 'chain') return { key: `${session}\n${kind.lane}`, extendsOnly: false };
  return kind.reason === 'compaction' ? { key: `${session}\nmain`, extendsOnly: true } : undefined;
}

/**
 * On a backend that cuts oversize prompts silently (RouteRuntime.guard): one sure not to fit is answered
 * `prompt is too long` here, unsent; any other gets the check its answer's prompt count must pass.
 */
function guardPrompt(exchange: Exchange, body: Buffer): AnswerCheck | undefined | 'refused' {
  const { guard } = exchange.route;
  if (!guard) return undefined;
  const conversation = conversationOf(exchange);
  const decision = guard.before(body.length, conversation);
  if (decision.kind === 'refuse') {
    exchange.line.rewrites.push('refuse_oversize_prompt');
    sendClientError(
      exchange,
      promptTooLong(decision.estimate, decision.window),
      `not sent: about ${decision.estimate} tokens for a ${decision.window}-token window, which the backend would cut without saying so`,
    );
    return 'refused';
  }
  return answerCheck(guard, body.length, decision, conversation);
}

async function relayMessages(
  exchange: Exchange,
  request: () => AnthropicRequest | undefined,
  firstBody: Buffer,
  opened: OpenedRequest | undefined,
): Promise<void> {
  let body = firstBody;
  const check = guardPrompt(exchange, body);
  if (check === 'refused') return opened?.abandon();
  for (let retried = false; ; retried = true) {
    // Ready before the backend answers: its head is handed over the moment it arrives.
    const stream = prepareStreamRelay(exchange, check, body.length);
    let streaming: Promise<void> | undefined;
    let result: Attempt;
    try {
      result = await attempt(exchange, 'POST', body, retried ? undefined : opened, (upstream) => {
        streaming = stream.attach(upstream);
      });
      // Not handed over at its head (see attempt): relayed from here, a few turns of the event loop later.
      if (result.kind === 'answer' && streaming === undefined && isEventStream(result.upstream))
        streaming = stream.attach(result.upstream);
    } finally {
      if (streaming === undefined) stream.discard();
    }
    if (result.kind === 'gone') return;
    if (result.kind === 'answer') {
      await (streaming ?? relayJson(exchange, result.upstream, check));
      return;
    }
    const forwarded =
      result.error.kind === 'max_tokens_too_large' && !retried ? request() : undefined;
    if (result.error.kind === 'max_tokens_too_large' && forwarded) {
      const decision = await retryDecision(exchange, result.error, forwarded, body);
      if (decision.kind === 'retry') {
        body = Buffer.from(JSON.stringify({ ...forwarded, max_tokens: decision.maxTokens }));
        exchange.line.rewrites.push('retry_clamped');
        continue;
      }
      translateAndSend(exchange, decision.error, result.text);
      return;
    }
    translateAndSend(exchange, result.error, result.text);
    return;
  }
}

/** llama.cpp (b7187+) and `vllm serve` count tokens; v0.11's separate Anthropic server has no such route. */
async function relayCountTokens(exchange: Exchange, body: Buffer): Promise<void> {
  const result = await attempt(exchange, 'POST', body);
  if (result.kind === 'gone') return;
  if (result.kind === 'answer') return relayJson(exchange, result.upstream);
  const status = exchange.line.upstream_status ?? 0;
  if (status === 404 || status === 405 || status === 501) {
    exchange.line.rewrites.push('count_tokens_estimate');
    // A guarded route knows the backend's own rate per byte, once it has counted a prompt.
    const estimate =
      exchange.route.guard?.estimate(body.length) ?? estimatePromptTokens(body.length);
    sendJson(exchange, 200, JSON.stringify({ input_tokens: estimate }));
    return;
  }
  translateAndSend(exchange, result.error, result.text);
}

async function relayOther(exchange: Exchange, raw: Buffer): Promise<void> {
  const method = exchange.req.method ?? 'GET';
  const hasBody = raw.length > 0 || (method !== 'GET' && method !== 'HEAD');
  const result = await attempt(exchange, method, hasBody ? raw : undefined);
  if (result.kind === 'gone') return;
  if (result.kind === 'error') return translateAndSend(exchange, result.error, result.text);
  return relayJson(exchange, result.upstream);
}
