import type { IncomingMessage } from 'node:http';
import { classifyBackendError } from './backend-errors.js';
import { anthropicErrorEvent } from './errors.js';
import { endResponse, sendJson, writeBody, writeHead, type Exchange } from './exchange.js';
import { isRecord } from './fold-system.js';
import { estimatePromptTokens } from './normalize.js';
import { createSseProcessor, replaceStartPromptTokens } from './sse.js';
import { truncationNote, type AnswerCheck } from './truncation-guard.js';
import { watchSilence } from './silence-watch.js';
import { sendClientError, translateAndSend } from './translate.js';

const PING = 'event: ping\ndata: {"type": "ping"}\n\n';
const UNFINISHED = 'backend ended the stream without message_stop (it failed mid-response)';

function leadingErrorStatus(data: string): { status: number; body: string } {
  let inner: unknown;
  try {
    const parsed: unknown = JSON.parse(data);
    inner = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : parsed;
  } catch {
    inner = { message: data };
  }
  const code = isRecord(inner) && typeof inner.code === 'number' ? inner.code : 500;
  return { status: code, body: JSON.stringify({ error: inner }) };
}

/** A stream relay set up before the backend answers (prepareStreamRelay). */
export interface StreamRelay {
  /** Relays `upstream`, a 200 event stream; resolves when the client's answer is done. Called once at most. */
  attach(upstream: IncomingMessage): Promise<void>;
  /** Gives up a relay that was never attached (the answer was no stream, or none came): stops its keepalive. */
  discard(): void;
}

/**
 * Relays a backend's 200 event stream a backend read at a time. The client's head is held until the first event or the
 * shim's first ping, so an error that is the stream's first event (llama.cpp unified-KV exhaustion, fixture C21)
 * still becomes an HTTP error Claude Code acts on, e.g. the `prompt is too long` it compacts on. Backend silence
 * longer than keepaliveMs gets an `event: ping` (Claude Code drops a stream silent for 300 s); that commits the
 * 200, after which an error can only be an Anthropic `event: error`, which Claude Code retries (docs/shim.md).
 * keepaliveMs 0: no pings, and the backend's own keepalives (llama.cpp's `:` comments) are passed on instead.
 *
 * Prepared while the backend works on the request, not when its answer arrives: the side-reader, the keepalive
 * and their closures cost tens of microseconds of code that runs once per request, on the path of the first
 * token otherwise. `bodyBytes`: the size of the body sent, for the prompt estimate.
 */
export function prepareStreamRelay(
  exchange: Exchange,
  check: AnswerCheck | undefined,
  bodyBytes: number,
): StreamRelay {
  const { res, route, line } = exchange;
  // Held: nothing reaches the client (no ping either, which would commit a 200) until the prompt count is checked.
  let holding = check?.hold === true;
  const held: Buffer[] = [];
  const keepalive = route.keepaliveMs > 0;
  const processor = createSseProcessor({
    model: route.config.servedId,
    holdLeadingError: () => !res.headersSent,
    // The shim's ping covers the same silence and is what decides when the 200 is committed.
    holdLeadingKeepalive: () => keepalive && !res.headersSent,
    promptTokensEstimate: estimatePromptTokens(bodyBytes),
    onBackendError: route.onBackendError,
    ...(check ? { verifyInputTokens: check.verify } : {}),
    // Streamed: the shim's estimate in the backend's tokens; held, the real count replaces it at release.
    ...(check && !check.hold ? { promptTokens: check.estimate } : {}),
  });
  const headers = {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  };
  const commit = (): void => writeHead(exchange, 200, headers);
  let attached = false;
  let pinged = false;
  let unfinished = false;
  let finished = false;
  const silence = keepalive
    ? watchSilence(route.keepaliveMs, () => {
        if (!attached || finished || res.writableEnded || holding) return;
        commit();
        writeBody(exchange, PING);
        pinged = true;
      })
    : undefined;

  const attach = (upstream: IncomingMessage): Promise<void> =>
    new Promise((resolve) => {
      attached = true;
      // The silence counts from the backend's head, not from when the relay was prepared.
      silence?.touch();
      headers['content-type'] = upstream.headers['content-type'] ?? 'text/event-stream';

      const finish = (): void => {
        if (finished) return;
        finished = true;
        silence?.stop();
        const { summary } = processor;
        line.events = summary.events;
        line.usage = summary.usage ?? null;
        line.stop_reason = summary.stopReason ?? null;
        line.rewrites.push(...summary.repairs);
        if (pinged) line.rewrites.push('keepalive_ping');
        if (summary.error && !line.error) line.error = summary.error;
        if (summary.truncated) {
          line.rewrites.push('truncated_by_backend');
          line.error ??= {
            original: truncationNote(summary.truncated.reported),
            translated: summary.truncated.error.message,
          };
        }
        // A 200 whose stream held garbage is not a clean 200 in the log (Claude Code retries such a request).
        if (summary.malformed && !line.error)
          line.error = {
            original: summary.malformed.first,
            translated: `${summary.malformed.count} malformed event(s) passed on as the backend sent them${unfinished ? `; ${UNFINISHED}, answered with an error event` : ''}`,
          };
        if (unfinished)
          line.error ??= { original: 'stream ended without message_stop', translated: UNFINISHED };
        resolve();
      };

      /**
       * One backend read often holds many chunks of its chunked encoding (llama.cpp writes an event per token, and
       * a fast one fills a read with them): each would cost the side-reader a pass and the response a write with
       * its own chunk header. Gathered until the read's callbacks are done, then handled as one chunk; the
       * side-reader's output does not depend on where a stream is cut. Node's response would have held those
       * writes until the same moment anyway (it corks its socket until the tick ends), so nothing leaves later.
       */
      let burst: Buffer[] = [];
      const relayBurst = (): void => {
        if (burst.length === 0) return;
        const chunk = burst.length === 1 ? burst[0] : Buffer.concat(burst);
        burst = [];
        if (finished || chunk === undefined) return;
        const { out, leadingError } = processor.push(chunk);
        if (leadingError !== undefined) {
          const { status, body } = leadingErrorStatus(leadingError);
          translateAndSend(exchange, classifyBackendError(status, body), leadingError);
          upstream.destroy();
          finish();
          return;
        }
        if (holding) {
          if (out) held.push(out);
          if (processor.summary.deltaInputTokens === undefined) return;
          if (release()) {
            upstream.destroy();
            finish();
          }
          return;
        }
        if (!out) return;
        commit();
        silence?.touch();
        if (!writeBody(exchange, out)) {
          upstream.pause();
          res.once('drain', () => upstream.resume());
        }
      };

      upstream.on('data', (chunk: Buffer) => {
        if (finished) return;
        burst.push(chunk);
        if (burst.length === 1) process.nextTick(relayBurst);
      });

      /**
       * The count is in (or the stream ended without one): a truncated prompt becomes the HTTP 400 Claude Code
       * compacts on, anything else goes out as held. True when the client has its answer and the stream is done.
       */
      function release(): boolean {
        holding = false;
        const { truncated } = processor.summary;
        if (truncated) {
          sendClientError(exchange, truncated.error, truncationNote(truncated.reported));
          return true;
        }
        if (held.length > 0) {
          commit();
          const counted = processor.summary.deltaInputTokens;
          const answer = Buffer.concat(held);
          writeBody(
            exchange,
            counted === undefined ? answer : replaceStartPromptTokens(answer, counted),
          );
          if (counted !== undefined) line.rewrites.push('count_prompt_tokens');
          held.length = 0;
        }
        return false;
      }

      // `on`, not `once`, for the events that come once: `once` wraps each listener in a closure of its own.
      upstream.on('end', () => {
        relayBurst();
        if (finished) return;
        if (holding && release()) return finish();
        const rest = processor.flush();
        // Not the summary: reading it catches up on chunks passed on unread, which can wait until the end is out.
        const ending = processor.ending();
        if (!res.headersSent && !ending.sawEvents) {
          sendJson(exchange, 502, errorJson('backend ended the stream before sending any event'));
        } else if (!ending.sawMessageStop && !ending.failed) {
          // Ollama ends the stream this way when generation fails after it started (ollama-lmstudio.md §1
          // "Stream"): without a message_stop, Claude Code would keep a half answer as if it were whole.
          commit();
          if (rest) writeBody(exchange, rest);
          endResponse(exchange, Buffer.from(anthropicErrorEvent('api_error', UNFINISHED)));
          unfinished = true;
        } else {
          commit();
          endResponse(exchange, rest);
        }
        finish();
      });

      upstream.on('error', () => {});
      upstream.on('close', () => {
        relayBurst();
        if (finished) return;
        if (!exchange.cancellation.cancelled) cutShort();
        finish();
      });

      // The backend's socket died mid-answer: say so in Anthropic's terms, which Claude Code retries.
      function cutShort(): void {
        const message = 'backend closed the stream mid-response';
        if (!res.headersSent) {
          sendJson(exchange, 502, errorJson(message));
          line.error = { original: 'connection closed', translated: message };
          return;
        }
        if (!processor.summary.sawMessageStop && !processor.summary.error) {
          writeBody(exchange, anthropicErrorEvent('api_error', message));
          line.error = { original: 'connection closed', translated: message };
        }
        endResponse(exchange);
      }
    });

  return {
    attach,
    discard: () => {
      if (!attached) silence?.stop();
    },
  };
}

function errorJson(message: string): string {
  return JSON.stringify({ type: 'error', error: { type: 'api_error', message } });
}
