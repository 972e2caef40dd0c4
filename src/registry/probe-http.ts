import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { classifyConnectError, type FailureKind } from '../connect-errors.js';

/** One GET for the prober: always resolves, with the answer or a classified failure (never throws). */

export type { FailureKind };

export type HttpAnswer =
  | { ok: true; status: number; headers: Headers; body: string; ms: number }
  | { ok: false; failure: FailureKind; code?: string; ms: number };

const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * node:http rather than fetch: fetch refuses the "bad ports" of the Fetch spec (6000, 6665–6669, 10080…),
 * where a llama-server may well listen, and node:http gives the errno code directly.
 */
export function probeGet(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const fail = (error: unknown): void => {
      // An abort carries the signal's reason: a TimeoutError from the probe deadline, else a cancel.
      const reason: unknown = signal.aborted ? signal.reason : error;
      resolve({ ok: false, ...classifyConnectError(reason ?? error), ms: elapsed() });
    };
    let url: URL;
    try {
      url = new URL(`${baseUrl}${path}`);
    } catch (error) {
      fail(error);
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json, text/plain', ...headers },
        signal,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) response.destroy(new Error('answer too large'));
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
    request.end();
  });
}

/** JSON.parse that reports failure as undefined instead of throwing. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
