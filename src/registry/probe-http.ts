import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { classifyConnectError, type FailureKind } from '../connect-errors.js';

/**
 * One HTTP exchange with a backend (or the shim in front of one): always resolves, with the answer or a
 * classified failure, never throws. The one client for every request localagents itself sends: the
 * registry's probes, the jobs' /metrics figures, local_complete. node:http rather than fetch: fetch refuses
 * the "bad ports" of the Fetch spec (6000, 6665–6669, 10080…), where a llama-server may well listen, and
 * node:http gives the errno code directly.
 */
export type HttpAnswer =
  | { ok: true; status: number; headers: Headers; body: string; ms: number }
  | { ok: false; failure: FailureKind; code?: string; ms: number };

const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** The code of a probe answer cut off at its byte cap. */
export const ANSWER_TOO_LARGE = 'ANSWER_TOO_LARGE';

export interface HttpExchange {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  maxBodyBytes?: number;
}

export function httpExchange(exchange: HttpExchange): Promise<HttpAnswer> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const { signal } = exchange;
  const maxBytes = exchange.maxBodyBytes ?? MAX_BODY_BYTES;
  return new Promise((resolve) => {
    const fail = (error: unknown): void => {
      // An abort carries the signal's reason: a TimeoutError from the deadline, else a cancel.
      const reason: unknown = signal.aborted ? signal.reason : error;
      resolve({ ok: false, ...classifyConnectError(reason ?? error), ms: elapsed() });
    };
    let url: URL;
    try {
      url = new URL(exchange.url);
    } catch (error) {
      fail(error);
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: exchange.method,
        headers: {
          accept: 'application/json, text/plain',
          ...(exchange.body === undefined
            ? {}
            : { 'content-length': String(Buffer.byteLength(exchange.body)) }),
          ...exchange.headers,
        },
        signal,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          // Its code reaches failureSentence, which says the answer was over the cap, not that it failed.
          if (size > maxBytes)
            response.destroy(
              Object.assign(new Error(`answer over ${maxBytes} bytes`), { code: ANSWER_TOO_LARGE }),
            );
          else chunks.push(chunk);
        });
        response.on('error', fail);
        response.on('end', () => {
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            if (value !== undefined)
              responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
          }
          resolve({
            ok: true,
            status: response.statusCode ?? 0,
            headers: responseHeaders,
            body: Buffer.concat(chunks).toString('utf8'),
            ms: elapsed(),
          });
        });
      },
    );
    request.on('error', fail);
    request.end(exchange.body);
  });
}

/** One GET for the prober. */
export function probeGet(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  return httpExchange({ method: 'GET', url: `${baseUrl}${path}`, headers, signal });
}

/** JSON.parse that reports failure as undefined instead of throwing. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
