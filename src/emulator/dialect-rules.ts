/**
 * What differs between the servers within one generation: message and tool-use ids, whether the model
 * thinks, how many tokens it may write, and the bodies of the errors a fault or an overflow produces.
 * Every dialect is spelled out; none is "the other one".
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import {
  llamaContextError,
  llamaErrorForStatus,
  lmstudioContextMessage,
  lmstudioError,
  lmstudioErrorForStatus,
  OLLAMA_PROMPT_TOO_LONG,
  OLLAMA_RUNNER_ERROR,
  ollamaError,
  ollamaErrorForStatus,
  vllmContextError,
  vllmError,
} from './errors.js';
import { randomId } from './generate.js';
import type { Dialect } from './message-format.js';
import { isThinkingEnabled } from './render.js';
import type { EmulatorState } from './state.js';

const uuidHex = (): string => randomUUID().replaceAll('-', '');
const LOWER_ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Ollama's toolCallId(): `call_` and 8 of [a-z0-9]. */
function ollamaToolId(): string {
  let id = 'call_';
  for (let index = 0; index < 8; index += 1)
    id += LOWER_ALPHANUMERIC[randomInt(LOWER_ALPHANUMERIC.length)];
  return id;
}

export const LLAMA_STREAM_ERROR = {
  code: 500,
  message: 'The model produced output that does not match the expected peg-native format',
  type: 'server_error',
};

/** Anthropic's `thinking: {type: "disabled"}` (Ollama sends think:false; LM Studio [inferred]). */
function thinkingNotDisabled(body: Record<string, unknown>): boolean {
  const { thinking } = body;
  return !(
    typeof thinking === 'object' &&
    thinking !== null &&
    'type' in thinking &&
    thinking.type === 'disabled'
  );
}

export interface Overflow {
  status: number;
  body: unknown;
}

export interface DialectRules {
  messageId: () => string;
  toolId: () => string;
  thinking: (body: Record<string, unknown>) => boolean;
  /** Tokens the reply may use before the window (or max_tokens) stops it. */
  room: (window: number, promptTokens: number, maxTokens: number) => number;
  /** A `status` fault without a body. */
  statusBody: (status: number) => unknown;
  /** The overflow answer (also a `context_overflow` fault's). */
  overflow: (window: number, promptTokens: number, maxTokens: number) => Overflow;
  /** The data of an `sse_error` fault's event (Ollama: the message of its error). */
  streamError: unknown;
  /** The 500 body of an `sse_error` fault on a request that does not stream. */
  failedBody: unknown;
}

export function dialectRules(state: EmulatorState): DialectRules {
  const dialect: Dialect = state.backend;
  switch (dialect) {
    case 'llama.cpp':
      return {
        // 32 alphanumerics (random_string()).
        messageId: () => `chatcmpl-${randomId()}`,
        toolId: () => randomId(),
        thinking: isThinkingEnabled,
        room: (window, prompt) => window - prompt,
        statusBody: (status) => llamaErrorForStatus(status),
        overflow: (window, prompt) => ({ status: 400, body: llamaContextError(prompt, window) }),
        streamError: LLAMA_STREAM_ERROR,
        failedBody: { error: LLAMA_STREAM_ERROR },
      };
    case 'vllm':
      return {
        // `chatcmpl-{random_uuid()}` (uuid4 hex).
        messageId: () => `chatcmpl-${uuidHex()}`,
        toolId: () => `chatcmpl-tool-${uuidHex()}`,
        thinking: () => true,
        room: (_window, _prompt, maxTokens) => maxTokens,
        statusBody: (status) => {
          const types: Record<number, string> = {
            400: 'BadRequestError',
            404: 'NotFoundError',
            429: 'RateLimitError',
          };
          const message = status === 503 ? 'Service Unavailable' : 'Internal Server Error';
          return vllmError(types[status] ?? 'InternalServerError', message);
        },
        overflow: (window, prompt, maxTokens) => vllmContextError(state, window, prompt, maxTokens),
        streamError: {
          type: 'error',
          error: { type: 'internal_error', message: 'Internal Server Error' },
        },
        // Unchanged from before the dialects were split out: the llama.cpp-shaped body.
        failedBody: { error: LLAMA_STREAM_ERROR },
      };
    case 'ollama':
      return {
        messageId: () => `msg_${randomBytes(12).toString('hex')}`,
        toolId: ollamaToolId,
        // The emulated model has the thinking capability, so it thinks unless told not to (§1).
        thinking: thinkingNotDisabled,
        // Context shift lets generation run past the window; num_predict is bounded to 10 × num_ctx.
        room: (window, _prompt, maxTokens) => Math.min(maxTokens, 10 * window),
        statusBody: (status) => ollamaErrorForStatus(status),
        // The context_overflow fault: the deepseek2 (context shift off) 400.
        overflow: () => ({ status: 400, body: ollamaError(400, OLLAMA_PROMPT_TOO_LONG) }),
        streamError: OLLAMA_RUNNER_ERROR,
        failedBody: ollamaError(500, OLLAMA_RUNNER_ERROR),
      };
    case 'lmstudio':
      return {
        // [inferred] Anthropic-style ids.
        messageId: () => `msg_${randomId(24)}`,
        toolId: () => `toolu_${randomId(24)}`,
        thinking: thinkingNotDisabled,
        // The llama.cpp engine stops when the loaded window is full [inferred].
        room: (window, prompt) => window - prompt,
        statusBody: (status) => lmstudioErrorForStatus(status),
        overflow: (window, prompt) => ({
          status: 500,
          body: lmstudioError(
            'api_error',
            lmstudioContextMessage(prompt, window, state.local.lmstudioOldWording),
          ),
        }),
        streamError: lmstudioError('api_error', 'Unexpected error during prediction'),
        failedBody: lmstudioError('api_error', 'Unexpected error during prediction'),
      };
  }
}
