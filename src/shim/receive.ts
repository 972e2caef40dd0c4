import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import type { Exchange } from './exchange.js';
import { createFastPathScanner } from './fast-path.js';
import { outputRoom } from './normalize.js';
import { sendClientError } from './translate.js';
import { forwardHeaders, openUpstream, type OpenedRequest } from './upstream.js';

const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

const DECOMPRESS: Record<string, (input: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  br: promisify(brotliDecompress),
  deflate: promisify(inflate),
};

export interface Received {
  raw: Buffer;
  /** Set when the body was streamed to the backend as it arrived and proved to need no rewrite: already sent. */
  sent?: OpenedRequest;
  /**
   * The backend request opened when the client's request arrived, nothing written on it yet: the caller ends it
   * with the body to forward (after setting its length), or abandons it.
   */
  unsent?: OpenedRequest;
  /** The fast-path scanner read the whole body and found it may need a rewrite: no point scanning it again. */
  scanned?: boolean;
}

/**
 * Reads the client's body. With `speculate`, the backend request is opened as the client's arrives, so its pooled
 * connection is attached while the body is read (one turn of the event loop: 0.16 ms of a 42 KB request's path,
 * measured end to end). A body that looks rewrite-free is forwarded while it arrives, one chunk behind, so a 1 MB
 * request does not pay a store-and-forward hop; its last chunk goes out only once the whole body is known to be
 * clean. One found to need a rewrite before anything was written hands the request back unsent; one found later
 * drops it unfinished (the backend never sees a complete one). Undefined when the client has been answered (or
 * has gone).
 */
export async function receiveBody(
  exchange: Exchange,
  speculate: boolean,
): Promise<Received | undefined> {
  const { req, route } = exchange;
  const encoding = req.headers['content-encoding']?.toLowerCase();
  const plain = !encoding || encoding === 'identity';
  const length = Number(req.headers['content-length']);
  const canSpeculate =
    speculate && plain && Number.isSafeInteger(length) && length > 0 && length <= MAX_REQUEST_BYTES;
  const scanner = canSpeculate
    ? createFastPathScanner(route.config, outputRoom(length, route.config))
    : undefined;
  let opened = canSpeculate
    ? openUpstream(route.upstream, {
        method: 'POST',
        path: exchange.path,
        headers: forwardHeaders(req.headers, route.upstream, length),
        cancellation: exchange.cancellation,
      })
    : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  let clean = scanner !== undefined;
  let written = false;
  let held: Buffer | undefined;
  let ended = false;
  const abandon = (): void => {
    opened?.abandon();
    opened = undefined;
  };
  /** Reads one chunk; false when the client has been answered (too large) and reading stops. */
  const take = (chunk: Buffer): boolean => {
    size += chunk.length;
    if (size > MAX_REQUEST_BYTES) {
      abandon();
      const message = `request body over ${MAX_REQUEST_BYTES} bytes`;
      sendClientError(exchange, { status: 413, type: 'request_too_large', message }, message);
      return false;
    }
    chunks.push(chunk);
    if (!clean || !scanner || !opened) return true;
    if (scanner.push(chunk) === 'rewrite') {
      clean = false;
      // Headers and a part of the body are out: only dropping the request keeps the backend from using it.
      if (written) abandon();
      return true;
    }
    if (held) {
      opened.outgoing.write(held);
      written = true;
    }
    held = chunk;
    // The whole body is here (its content-length): prove it clean and send its end now, not a turn of
    // the event loop later when the stream reports its end (measured: 0.16 ms of a small request's path).
    if (size === length && scanner.finish() === 'clean') {
      opened.outgoing.end(held);
      ended = true;
    }
    return true;
  };
  // Listeners, not `for await`: the async iterator costs a promise and a turn per chunk on every request.
  const complete = await new Promise<boolean>((resolve) => {
    const stop = (result: boolean): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      if (!take(chunk)) {
        req.destroy();
        stop(false);
      }
    };
    const onEnd = (): void => stop(true);
    // Before 'end': the client went away mid-body.
    const onClose = (): void => stop(false);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.on('error', () => undefined);
  });
  if (!complete) {
    abandon();
    return undefined;
  }
  // One chunk (most bodies): no copy.
  const raw = chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
  // A clean body's last chunk always reaches the check above, so a body sent whole has ended by now.
  if (opened && ended) return { raw, sent: opened };
  if (opened && !written) return { raw, unsent: opened, scanned: !clean };
  abandon();
  if (scanner && !clean) return { raw, scanned: true };
  return encoding === undefined || encoding === 'identity'
    ? { raw }
    : decompress(exchange, raw, encoding);
}

async function decompress(
  exchange: Exchange,
  raw: Buffer,
  encoding: string,
): Promise<Received | undefined> {
  const inflater = DECOMPRESS[encoding];
  if (!inflater) {
    const message = `unsupported content-encoding "${encoding}"; send the body uncompressed`;
    sendClientError(exchange, { status: 415, type: 'invalid_request_error', message }, message);
    return undefined;
  }
  try {
    return { raw: await inflater(raw) };
  } catch (error) {
    const message = `cannot decode the ${encoding} request body: ${String(error)}`;
    sendClientError(exchange, { status: 400, type: 'invalid_request_error', message }, message);
    return undefined;
  }
}
