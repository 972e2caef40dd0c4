import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BackendError } from '../shim/backend-errors.js';
import { watchBackend, type BackendFailure } from './backend-watch.js';

const error = (backendError: BackendError) => ({
  kind: 'error' as const,
  error: backendError,
  message: `translated: ${backendError.message}`,
});

describe('watchBackend', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function watched(graceMs = 30_000) {
    const failures: BackendFailure[] = [];
    const watch = watchBackend({
      endpoint: 'endpoint desk',
      graceMs,
      onFailure: (failure) => failures.push(failure),
    });
    return { failures, watch };
  }

  it.each<[string, BackendError]>([
    ['a refused key', { kind: 'auth', status: 401, message: 'Invalid API Key' }],
    [
      'an unknown model',
      {
        kind: 'other',
        status: 404,
        type: 'not_found_error',
        message: 'The model `x` does not exist.',
      },
    ],
    [
      'a missing server flag',
      {
        kind: 'other',
        status: 400,
        type: 'BadRequestError',
        message:
          '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
      },
    ],
  ])('ends the job at once for %s, in the words the client got', (_what, backendError) => {
    const { failures, watch } = watched();
    watch.watch(error(backendError));
    expect(failures).toEqual([
      { kind: 'backend_config', message: `translated: ${backendError.message}` },
    ]);
  });

  it('gives a gone or loading backend the grace, then ends the job with what was tried', () => {
    const { failures, watch } = watched(30_000);
    watch.watch({
      kind: 'unreachable',
      message: 'endpoint desk (http://127.0.0.1:9) unreachable: connection refused',
    });
    vi.advanceTimersByTime(10_000);
    watch.watch(error({ kind: 'unavailable', status: 503, message: 'Loading model' }));
    vi.advanceTimersByTime(19_999);
    expect(failures).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(failures).toEqual([
      {
        kind: 'backend_down',
        message:
          'endpoint desk did not answer for 30 s (2 failed requests; the last: translated: Loading model)',
      },
    ]);
  });

  it('starts the grace over after any answer, and ignores errors a retry or the client can fix', () => {
    const { failures, watch } = watched(1000);
    watch.watch(error({ kind: 'unavailable', status: 503, message: 'no slot' }));
    vi.advanceTimersByTime(900);
    watch.watch({ kind: 'answered' });
    vi.advanceTimersByTime(900);
    watch.watch(
      error({
        kind: 'context_overflow',
        promptTokens: 9,
        contextTokens: 8,
        lowerBound: false,
        message: 'too long',
      }),
    );
    watch.watch(
      error({ kind: 'other', status: 400, type: 'invalid_request_error', message: 'bad json' }),
    );
    vi.advanceTimersByTime(5000);
    expect(failures).toEqual([]);
    watch.close();
  });
});
