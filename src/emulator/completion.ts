/**
 * One generation, shared by every personality: faults, latency knobs, a slot lease, the scripted
 * reply, then a JSON body or a progressively written SSE stream. Client aborts stop generation and
 * free the slot; nothing here blocks the event loop (pacing uses timers only when a knob is set).
 * What differs per server is in dialect-rules.ts and the formatters.
 */
import type { ServerResponse } from 'node:http';
import { dialectRules, type DialectRules } from './dialect-rules.js';
import { LLAMA_KV_EXHAUSTED, ollamaError } from './errors.js';
import type { Fault } from './faults.js';
import { generate, type Generation } from './generate.js';
import { sendJson, startSse } from './http.js';
import { recordCompletion } from './metrics.js';
import { messageEvents, messageJson, type MessageInfo } from './message-format.js';
import { ollamaEvents, ollamaMessageJson, ollamaSse } from './ollama-format.js';
import { chooseReply, type ScriptedReply } from './script.js';
import { errorEventText, pause, playStream, type StreamPlan } from './sse.js';
import type { EmulatorState, RecordedRequest } from './state.js';

export interface CompletionRequest {
  body: Record<string, unknown>;
  tokens: string[];
  stream: boolean;
  maxTokens: number;
  model: string;
  record: RecordedRequest;
  /** The window of the model that answers (default: state.window). */
  window?: number;
  /** Ollama: message_start's len/4 estimate of the request. */
  estimatedInputTokens?: number;
  /** Instead of the script's turn (Ollama's model after it lost its truncated prompt). */
  reply?: ScriptedReply;
}

/** Applies a fault that answers before generation; true when the request is done. */
async function applyEarlyFault(
  state: EmulatorState,
  rules: DialectRules,
  res: ServerResponse,
  request: CompletionRequest,
  fault: Fault | undefined,
  signal: AbortSignal,
): Promise<boolean> {
  if (!fault) return false;
  const dialect = state.backend;
  if (fault.kind === 'status') {
    sendJson(res, dialect, fault.status, fault.body ?? rules.statusBody(fault.status));
    return true;
  }
  if (fault.kind === 'context_overflow') {
    const window = request.window ?? state.window;
    const { status, body } = rules.overflow(window, request.tokens.length, request.maxTokens);
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

/** Ollama's 500 for a runner error: the message goes into its envelope. */
function ollamaFailure(error: unknown): unknown {
  return ollamaError(500, typeof error === 'string' ? error : JSON.stringify(error));
}

/** How the dialect streams: its events, their text, when the head goes out, how an error ends it. */
function streamShape(
  state: EmulatorState,
  res: ServerResponse,
  info: MessageInfo,
  generation: Generation,
): Pick<StreamPlan, 'events' | 'start' | 'format' | 'endWithError'> {
  const dialect = state.backend;
  if (dialect !== 'ollama') {
    startSse(res, dialect);
    return { events: messageEvents(info, generation, dialect) };
  }
  return {
    events: ollamaEvents(info, generation),
    start: () => startSse(res, 'ollama'),
    format: ollamaSse,
    // An error before the first chunk is plain JSON; after it, the NDJSON error line decodes into
    // no event at all, so the stream just ends (no message_delta, no message_stop).
    endWithError: (error, started) => {
      if (started) res.end();
      else sendJson(res, 'ollama', 500, ollamaFailure(error));
    },
  };
}

export async function runCompletion(
  state: EmulatorState,
  res: ServerResponse,
  request: CompletionRequest,
  fault: Fault | undefined,
  signal: AbortSignal,
): Promise<void> {
  const dialect = state.backend;
  const rules = dialectRules(state);
  if (await applyEarlyFault(state, rules, res, request, fault, signal)) return;
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
  const window = request.window ?? state.window;
  const room = rules.room(window, promptTokens, request.maxTokens);
  const generation: Generation = generate(
    request.reply ?? chooseReply(request.body, state.script, state.plainReply),
    {
      maxOutputTokens: Math.min(request.maxTokens, room),
      thinking: rules.thinking(request.body),
      toolId: rules.toolId,
    },
  );
  const info: MessageInfo = {
    id: rules.messageId(),
    model: request.model,
    promptTokens,
    cachedTokens: lease.cachedTokens,
    ...(request.estimatedInputTokens === undefined
      ? {}
      : { estimatedInputTokens: request.estimatedInputTokens }),
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
      const plan: StreamPlan = {
        ...streamShape(state, res, info, generation),
        fault,
        prefillMs,
        msPerToken,
        defaultError: rules.streamError,
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
        const body =
          dialect === 'ollama' && fault.error !== undefined
            ? ollamaFailure(fault.error)
            : (fault.error ?? rules.failedBody);
        return sendJson(res, dialect, 500, body);
      }
      outputTokens = generation.outputTokens;
      const body =
        dialect === 'ollama'
          ? ollamaMessageJson(info, generation)
          : messageJson(info, generation, dialect);
      sendJson(res, dialect, 200, body);
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
