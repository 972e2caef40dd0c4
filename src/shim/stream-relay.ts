import type { IncomingMessage } from 'node:http';
import { classifyBackendError } from './backend-errors.js';
import { anthropicErrorEvent } from './errors.js';
import { endResponse, sendJson, writeBody, writeHead, type Exchange } from './exchange.js';
import { isRecord } from './fold-system.js';
import { estimatePromptTokens } from './normalize.js';
import { createSseProcessor, replaceStartPromptTokens } from './sse.js';
import { truncationNote, type AnswerCheck } from './truncation-guard.js';
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

/**
 * Relays a backend's 200 event stream chunk by chunk. The client's head is held until the first event or the
 * shim's first ping, so an error that is the stream's first event (llama.cpp unified-KV exhaustion, fixture C21)
 * still becomes an HTTP error Claude Code acts on, e.g. the `prompt is too long` it compacts on. Backend silence
 * longer than keepaliveMs gets an `event: ping` (Claude Code drops a stream silent for 300 s); that commits the
 * 200, after which an error can only be an Anthropic `event: error`, which Claude Code retries (docs/shim.md).
 * keepaliveMs 0: no pings, and the backend's own keepalives (llama.cpp's `:` comments) are passed on instead.
 */
export function relayStream(
  exchange: Exchange,
  upstream: IncomingMessage,
  check?: AnswerCheck,
): Promise<void> {
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
    promptTokensEstimate: estimatePromptTokens(line.bytes_upstream || line.bytes_in),
    onBackendError: route.onBackendError,
    ...(check ? { verifyInputTokens: check.verify } : {}),
    // Streamed: the shim's estimate in the backend's tokens; held, the real count replaces it at release.
    ...(check && !check.hold ? { promptTokens: check.estimate } : {}),
  });
  const headers = {
    'content-type': upstream.headers['content-type'] ?? 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  };
  const commit = (): void => writeHead(exchange, 200, headers);
  let pinged = false;
  let unfinished = false;

  return new Promise((resolve) => {
    let finished = false;
    const timer = keepalive
      ? setTimeout(function ping() {
          if (finished || res.writableEnded || holding) {
            timer?.refresh();
            return;
          }
          commit();
          writeBody(exchange, PING);
          pinged = true;
          timer?.refresh();
        }, route.keepaliveMs)
      : undefined;

    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
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

    upstream.on('data', (chunk: Buffer) => {
      if (finished) return;
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
      timer?.refresh();
      // No cork here: Node's response already corks its socket until the tick ends on each write, so the
      // token chunks of one backend read leave in one writev.
      if (!writeBody(exchange, out)) {
        upstream.pause();
        res.once('drain', () => upstream.resume());
      }
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

    upstream.once('end', () => {
      if (finished) return;
      if (holding && release()) return finish();
      const rest = processor.flush();
      const { summary } = processor;
      if (!res.headersSent && summary.events === 0) {
        sendJson(exchange, 502, errorJson('backend ended the stream before sending any event'));
      } else if (!summary.sawMessageStop && !summary.error && !summary.truncated) {
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
    upstream.once('close', () => {
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
}

function errorJson(message: string): string {
  return JSON.stringify({ type: 'error', error: { type: 'api_error', message } });
}
