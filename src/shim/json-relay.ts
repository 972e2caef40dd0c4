import type { IncomingMessage } from 'node:http';
import { endResponse, writeBody, writeHead, type Exchange } from './exchange.js';
import { isRecord } from './fold-system.js';

/** A copy of a non-streamed answer is kept up to this size, for the usage in the log. */
const MAX_JSON_COPY_BYTES = 8 * 1024 * 1024;

/** A non-streamed answer, passed through as it arrives; a bounded copy is parsed afterwards for the log. */
export function relayJson(exchange: Exchange, upstream: IncomingMessage): Promise<void> {
  const { res, line } = exchange;
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
  function readUsage(ex: Exchange, body: Buffer): void {
    try {
      const json: unknown = JSON.parse(body.toString('utf8'));
      if (!isRecord(json)) return;
      if (typeof json.stop_reason === 'string') line.stop_reason = json.stop_reason;
      const usage = json.usage;
      if (isRecord(usage) && typeof usage.input_tokens === 'number') {
        ex.line.usage = {
          input_tokens: usage.input_tokens,
          output_tokens: typeof usage.output_tokens === 'number' ? usage.output_tokens : 0,
          cache_read_input_tokens:
            typeof usage.cache_read_input_tokens === 'number' ? usage.cache_read_input_tokens : 0,
        };
      }
    } catch {
      // Not JSON (or cut at the copy limit): the log simply has no usage for it.
    }
  }
}
