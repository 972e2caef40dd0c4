/** Every request the emulator saw, in arrival order, with a way to await one (no polling in tests). */
import type { IncomingMessage } from 'node:http';
import { headerRecord } from './http.js';
import type { RecordedRequest } from './state.js';

export interface RequestLog {
  requests: RecordedRequest[];
  record(req: IncomingMessage, raw: string): RecordedRequest;
  /** Call after a record changed (status filled in) so waiters re-check. */
  changed(): void;
  waitFor(predicate: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
}

export function parseJsonOrUndefined(raw: string): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

export function createRequestLog(): RequestLog {
  const requests: RecordedRequest[] = [];
  const watchers = new Set<() => void>();
  const changed = (): void => watchers.forEach((watch) => watch());
  return {
    requests,
    changed,
    record(req, raw) {
      const entry: RecordedRequest = {
        id: requests.length + 1,
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: headerRecord(req),
        body: parseJsonOrUndefined(raw),
        rawBody: raw,
        status: 0,
        receivedAt: Date.now(),
      };
      requests.push(entry);
      changed();
      return entry;
    },
    waitFor: (predicate, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = requests.find(predicate);
          if (!found) return;
          cleanup();
          resolve(found);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `emulator: no matching request within ${timeoutMs} ms (${requests.length} seen)`,
            ),
          );
        }, timeoutMs);
        const cleanup = (): void => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        check();
      }),
  };
}
