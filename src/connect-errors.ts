/**
 * Why a connection to a backend failed, classified once for everyone who connects: the registry's probes
 * and the shim's relay. node:http puts the errno code on the error itself, fetch (undici) on its `cause`,
 * sometimes inside an AggregateError (one per address tried).
 */
export type FailureKind = 'refused' | 'unreachable' | 'timeout' | 'error';

const UNREACHABLE = new Set([
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);

/** The errno-style code of a failed connection, wherever it is buried. */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) current = errors[0] as unknown;
    else current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export function classifyConnectError(error: unknown): { failure: FailureKind; code?: string } {
  if (error instanceof Error && error.name === 'TimeoutError') return { failure: 'timeout' };
  const code = errorCode(error);
  if (code === 'ECONNREFUSED') return { failure: 'refused', code };
  if (code !== undefined && UNREACHABLE.has(code)) return { failure: 'unreachable', code };
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT')
    return { failure: 'timeout', code };
  if (error instanceof Error && error.name === 'AbortError')
    return { failure: 'error', code: 'ABORTED' };
  return code === undefined ? { failure: 'error' } : { failure: 'error', code };
}
