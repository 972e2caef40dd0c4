import type { IncomingMessage } from 'node:http';
import { endResponse, writeBody, writeHead, type Exchange } from './exchange.js';
import { isRecord } from './fold-system.js';
import { sendClientError } from './translate.js';
import { truncationNote, type AnswerCheck } from './truncation-guard.js';
import { readBody } from './upstream.js';

/** A copy of a non-streamed answer is kept up to this size, for the usage in the log. */
const MAX_JSON_COPY_BYTES = 8 * 1024 * 1024;

/**
 * A non-streamed answer, passed through as it arrives; a bounded copy is parsed afterwards for the log. With a
 * `check` (a backend that cuts prompts silently), the answer is read whole first and its prompt count checked.
 */
export function relayJson(
  exchange: Exchange,
  upstream: IncomingMessage,
  check?: AnswerCheck,
): Promise<void> {
  if (check) return relayChecked(exchange, upstream, check);
  const { res } = exchange;
  const headers: Record<string, string> = {
    'content-type': upstream.headers['content-type'] ?? 'application/json',
  };
  const length = upstream.headers['content-length'];
  if (length !== undefined) headers['content-length'] = length;
  writeHead(exchange, upstream.statusCode ?? 200, headers);
  const copy: Buffer[] = [];
  let copied = 0;
  return new Promise((resolve) => {
    upstream.on('data', (chunk: Buffer) => {
      if (copied + chunk.length <= MAX_JSON_COPY_BYTES) {
        copy.push(chunk);
        copied += chunk.length;
      }
      if (!writeBody(exchange, chunk)) {
        upstream.pause();
        res.once('drain', () => upstream.resume());
      }
    });
    upstream.once('end', () => {
      endResponse(exchange);
      readUsage(exchange, Buffer.concat(copy));
      resolve();
    });
    upstream.on('error', () => {});
    upstream.once('close', () => {
      if (!upstream.complete && !res.writableEnded) res.destroy();
      resolve();
    });
  });
}

/** The answer's stop reason and usage into the log line; the prompt count, if the answer reports one. */
function readUsage(exchange: Exchange, body: Buffer): number | undefined {
  try {
    const json: unknown = JSON.parse(body.toString('utf8'));
    if (!isRecord(json)) return undefined;
    if (typeof json.stop_reason === 'string') exchange.line.stop_reason = json.stop_reason;
    const usage = json.usage;
    if (isRecord(usage) && typeof usage.input_tokens === 'number') {
      exchange.line.usage = {
        input_tokens: usage.input_tokens,
        output_tokens: typeof usage.output_tokens === 'number' ? usage.output_tokens : 0,
        cache_read_input_tokens:
          typeof usage.cache_read_input_tokens === 'number' ? usage.cache_read_input_tokens : null,
      };
      return usage.input_tokens;
    }
  } catch {
    // Not JSON (or cut at the copy limit): the log simply has no usage for it.
  }
  return undefined;
}

async function relayChecked(
  exchange: Exchange,
  upstream: IncomingMessage,
  check: AnswerCheck,
): Promise<void> {
  let body: Buffer;
  try {
    body = await readBody(upstream, MAX_JSON_COPY_BYTES);
  } catch {
    if (!exchange.res.headersSent) exchange.res.destroy();
    return;
  }
  const reported = readUsage(exchange, body);
  const error = reported === undefined ? undefined : check.verify(reported);
  if (error && reported !== undefined) {
    exchange.line.rewrites.push('truncated_by_backend');
    sendClientError(exchange, error, truncationNote(reported));
    return;
  }
  writeHead(exchange, upstream.statusCode ?? 200, {
    'content-type': upstream.headers['content-type'] ?? 'application/json',
    'content-length': String(body.length),
  });
  endResponse(exchange, body);
}
