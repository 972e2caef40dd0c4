/**
 * One generation, shared by both personalities: faults, latency knobs, a slot lease, the scripted
 * reply, then a JSON body or a progressively written SSE stream. Client aborts stop generation and
 * free the slot; nothing here blocks the event loop (pacing uses timers only when a knob is set).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  LLAMA_KV_EXHAUSTED,
  llamaContextError,
  llamaErrorForStatus,
  vllmContextError,
  vllmError,
} from './errors.js';
import type { Fault } from './faults.js';
import { generate, randomId, type Generation } from './generate.js';
import { sendJson, startSse } from './http.js';
import { recordCompletion } from './metrics.js';
import { messageEvents, messageJson, type MessageInfo } from './message-format.js';
import { isThinkingEnabled } from './render.js';
import { chooseReply } from './script.js';
import { errorEventText, pause, playStream } from './sse.js';
import type { EmulatorState, RecordedRequest } from './state.js';

const uuidHex = (): string => randomUUID().replaceAll('-', '');

export interface CompletionRequest {
  body: Record<string, unknown>;
  tokens: string[];
  stream: boolean;
  maxTokens: number;
  model: string;
  record: RecordedRequest;
}

const LLAMA_STREAM_ERROR = {
  code: 500,
  message: 'The model produced output that does not match the expected peg-native format',
  type: 'server_error',
};

function defaultStreamError(state: EmulatorState): unknown {
  return state.backend === 'vllm'
    ? { type: 'error', error: { type: 'internal_error', message: 'Internal Server Error' } }
    : LLAMA_STREAM_ERROR;
}

function overflowBody(
  state: EmulatorState,
  request: CompletionRequest,
): { status: number; body: unknown } {
  if (state.backend === 'llama.cpp')
    return { status: 400, body: llamaContextError(request.tokens.length, state.window) };
  return vllmContextError(state, state.window, request.tokens.length, request.maxTokens);
}

/** Applies a fault that answers before generation; true when the request is done. */
async function applyEarlyFault(
  state: EmulatorState,
  res: ServerResponse,
  request: CompletionRequest,
  fault: Fault | undefined,
  signal: AbortSignal,
): Promise<boolean> {
  if (!fault) return false;
  const dialect = state.backend;
  if (fault.kind === 'status') {
    sendJson(res, dialect, fault.status, fault.body ?? defaultStatusBody(state, fault.status));
    return true;
  }
  if (fault.kind === 'context_overflow') {
    const { status, body } = overflowBody(state, request);
    sendJson(res, dialect, status, body);
    return true;
  }
  if (fault.kind === 'delay') return !(await pause(fault.ms, signal));
  if (fault.kind === 'hold') return !(await state.holds.wait(signal));
  if (fault.kind === 'drop' && !request.stream) {
    res.socket?.destroy();
    return true;
  }
  return false;
}

function defaultStatusBody(state: EmulatorState, status: number): unknown {
  if (state.backend === 'llama.cpp') return llamaErrorForStatus(status);
  const types: Record<number, string> = {
    400: 'BadRequestError',
    404: 'NotFoundError',
    429: 'RateLimitError',
  };
  return vllmError(
    types[status] ?? 'InternalServerError',
    status === 503 ? 'Service Unavailable' : 'Internal Server Error',
  );
}

export async function runCompletion(
  state: EmulatorState,
  res: ServerResponse,
  request: CompletionRequest,
  fault: Fault | undefined,
  signal: AbortSignal,
): Promise<void> {
  const dialect = state.backend;
  if (await applyEarlyFault(state, res, request, fault, signal)) return;
  if (!(await pause(state.latency.ttfbMs, signal))) return;
  const acquired = await state.pool.acquire(
    request.tokens,
    { maxTokens: request.maxTokens, stream: request.stream },
    signal,
  );
  if (acquired.kind === 'aborted') return;
  if (acquired.kind === 'exhausted') {
    if (!request.stream) return sendJson(res, dialect, 500, LLAMA_KV_EXHAUSTED);
    startSse(res, dialect);
    res.end(errorEventText(LLAMA_KV_EXHAUSTED.error));
    return;
  }
  const { lease } = acquired;
  let exhausted = false;
  lease.onExhausted(() => (exhausted = true));
  const promptTokens = request.tokens.length;
  request.record.cachedTokens = lease.cachedTokens;
  const room = dialect === 'llama.cpp' ? state.window - promptTokens : request.maxTokens;
  const thinking = dialect === 'vllm' || isThinkingEnabled(request.body);
  const generation: Generation = generate(
    chooseReply(request.body, state.script, state.plainReply),
    {
      maxOutputTokens: Math.min(request.maxTokens, room),
      thinking,
      toolId: () => (dialect === 'vllm' ? `chatcmpl-tool-${uuidHex()}` : randomId()),
    },
  );
  const info: MessageInfo = {
    // vLLM: `chatcmpl-{random_uuid()}` (uuid4 hex); llama.cpp: 32 alphanumerics.
    id: dialect === 'vllm' ? `chatcmpl-${uuidHex()}` : `chatcmpl-${randomId()}`,
    model: request.model,
    promptTokens,
    cachedTokens: lease.cachedTokens,
  };
  const { prefillMsPerToken, decodeTokensPerSecond } = state.latency;
  const prefillMs = (promptTokens - lease.cachedTokens) * prefillMsPerToken;
  const msPerToken = decodeTokensPerSecond > 0 ? 1000 / decodeTokensPerSecond : 0;
  // Sub-millisecond clock: a fast scripted turn can finish within one Date.now() tick, and llama.cpp
  // reports its timings as fractional milliseconds too, so the seconds counters always move.
  const started = performance.now();
  let outputTokens = 0;
  try {
    if (request.stream) {
      startSse(res, dialect);
      const plan = {
        events: messageEvents(info, generation, dialect),
        fault,
        prefillMs,
        msPerToken,
        defaultError: defaultStreamError(state),
        failure: () => (exhausted ? LLAMA_KV_EXHAUSTED.error : undefined),
        onDecoded: (tokens: number) => lease.setDecoded(tokens),
      };
      outputTokens = await playStream(res, plan, signal);
    } else {
      const stallMs = fault?.kind === 'stall' ? fault.ms : 0;
      if (!(await pause(prefillMs + generation.outputTokens * msPerToken + stallMs, signal)))
        return;
      if (exhausted) return sendJson(res, dialect, 500, LLAMA_KV_EXHAUSTED);
      if (fault?.kind === 'sse_error') {
        return sendJson(res, dialect, 500, fault.error ?? { error: LLAMA_STREAM_ERROR });
      }
      outputTokens = generation.outputTokens;
      sendJson(res, dialect, 200, messageJson(info, generation, dialect));
    }
  } finally {
    lease.release();
    const elapsedMs = performance.now() - started;
    const promptMs = Math.min(prefillMs, elapsedMs);
    const generationMs = Math.max(elapsedMs - promptMs, 0);
    recordCompletion(state.stats, {
      promptTokens,
      cachedTokens: lease.cachedTokens,
      outputTokens,
      promptMs,
      generationMs,
    });
  }
}
