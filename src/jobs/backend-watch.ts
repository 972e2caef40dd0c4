import type { BackendError } from '../shim/backend-errors.js';
import type { RouteEvent } from '../shim/route.js';

/** Why a job was ended for its backend: its configuration refuses the work, or it is gone. */
export interface BackendFailure {
  kind: 'backend_config' | 'backend_down';
  message: string;
}

export interface BackendWatch {
  /** Given to the job's shim route (RouteConfig.watch). */
  watch: (event: RouteEvent) => void;
  close: () => void;
}

/** A backend answer no retry can change: a refused key, a model it does not serve, a server flag it lacks. */
function isConfigurationError(error: BackendError): boolean {
  if (error.kind === 'auth') return true;
  if (error.kind !== 'other') return false;
  if (error.status === 404) return true;
  // vLLM names the server flags a request needs: "requires --enable-auto-tool-choice and --tool-call-parser".
  return error.status === 400 && /(^|\s)--[a-z][a-z-]+/.test(error.message);
}

/**
 * Claude Code retries a failing backend ten times with backoff, about three minutes, whatever the failure. The
 * shim sees each failure first: what retries cannot fix ends the job at once, in the backend's words with the
 * fix; a backend that is gone or keeps loading gets `graceMs` to answer again (any answer resets it), then the
 * job ends as backend_down with what was tried.
 */
export function watchBackend(options: {
  endpoint: string;
  graceMs: number;
  onFailure: (failure: BackendFailure) => void;
}): BackendWatch {
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let last = '';
  let ended = false;
  const end = (failure: BackendFailure): void => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    options.onFailure(failure);
  };
  const down = (message: string): void => {
    failures++;
    last = message;
    timer ??= setTimeout(() => {
      const seconds = Math.round(options.graceMs / 100) / 10;
      end({
        kind: 'backend_down',
        message: `${options.endpoint} did not answer for ${seconds} s (${failures} failed request${failures === 1 ? '' : 's'}; the last: ${last})`,
      });
    }, options.graceMs);
  };
  return {
    watch: (event) => {
      if (ended) return;
      if (event.kind === 'answered') {
        clearTimeout(timer);
        timer = undefined;
        failures = 0;
        return;
      }
      if (event.kind === 'unreachable') return down(event.message);
      if (isConfigurationError(event.error))
        end({ kind: 'backend_config', message: event.message });
      else if (event.error.kind === 'unavailable') down(event.message);
    },
    close: () => {
      ended = true;
      clearTimeout(timer);
    },
  };
}
