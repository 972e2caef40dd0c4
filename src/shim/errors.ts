import type { BackendError } from './backend-errors.js';

/** The error types of Anthropic's API, the only ones Claude Code acts on. */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export interface ClientError {
  status: number;
  type: AnthropicErrorType;
  message: string;
}

/** What the translation needs to know about the route. */
export interface ErrorContext {
  /** The job's window, for llama.cpp's unified-KV `Context size has been exceeded.` (which carries no numbers). */
  contextTokens?: number | undefined;
  /** Our own estimate of the prompt, used when the backend gives no prompt size. */
  estimatedPromptTokens: number;
  /** What the backend serves (and, for Ollama and LM Studio, has installed): named when a model is missing. */
  servedIds?: readonly string[] | undefined;
  endpointName?: string | undefined;
  apiKeyEnv?: string | undefined;
  /** Where the key is configured when `apiKeyEnv` is not set (RouteConfig.apiKeyFrom). */
  apiKeyFrom?: 'endpoint' | 'proxy-flag' | undefined;
  /**
   * Claude Code can compact the conversation this request belongs to: it has an assistant turn and is not
   * itself a compaction (or title) request.
   */
  compactable?: boolean | undefined;
}

/**
 * Unified-KV exhaustion is contention: a prompt too big for the window alone is refused up front with
 * `exceed_context_size_error`, so this 500 means other requests hold the shared cells. Compacting helps when
 * this conversation is a big share of the cache (at least half the window) and can be compacted at all;
 * Claude Code cannot compact a first exchange ("A single-exchange conversation cannot be compacted", the job
 * fails) nor a compaction request (it would start its compaction-retry chain over the same contention), and
 * a small conversation gains little. Those are told to retry instead, which Claude Code does with backoff
 * while the other requests finish.
 */
function kvExhausted(error: { message: string }, context: ErrorContext): ClientError {
  const window = context.contextTokens;
  if (
    window !== undefined &&
    context.compactable === true &&
    context.estimatedPromptTokens * 2 >= window
  ) {
    return promptTooLong(Math.max(context.estimatedPromptTokens, window + 1), window);
  }
  return {
    status: 529,
    type: 'overloaded_error',
    message: `backend overloaded: ${error.message} (its shared KV cache is held by other requests; retry)`,
  };
}

/** The fix for a rejected key, in the terms of where the user configures it. */
function keyAdvice(context: ErrorContext): string {
  if (context.apiKeyEnv) return `set ${context.apiKeyEnv} to the key the server was started with`;
  // `localagents proxy --base-url` has no models.yaml entry to edit: the flag is the only way to give a key.
  if (context.apiKeyFrom === 'proxy-flag')
    return 'restart localagents proxy with --api-key-env VAR, VAR holding the key the server was started with';
  return 'set the endpoint’s api_key_env variable to the key the server was started with';
}

export function anthropicErrorJson(type: AnthropicErrorType, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** An SSE `event: error` frame in Anthropic's shape, which Claude Code treats like a cut stream and retries. */
export function anthropicErrorEvent(type: AnthropicErrorType, message: string): string {
  return `event: error\ndata: ${anthropicErrorJson(type, message)}\n\n`;
}

/**
 * The wording Claude Code compacts on (contract §3.3). It is Anthropic's own; Claude Code also knows llama.cpp's and
 * vLLM's overflow texts but not llama.cpp's `Context size has been exceeded.`, so every overflow is said this way.
 */
export function promptTooLong(promptTokens: number, contextTokens: number): ClientError {
  return {
    status: 400,
    type: 'invalid_request_error',
    message: `prompt is too long: ${promptTokens} tokens > ${contextTokens} maximum`,
  };
}

const TYPE_BY_STATUS: Record<number, AnthropicErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
};

/** Backend error → what Claude Code should see. Loading/overload → 529 so it retries; 5xx → api_error. */
export function toClientError(error: BackendError, context: ErrorContext): ClientError {
  switch (error.kind) {
    case 'context_overflow': {
      if (error.promptTokens !== undefined && error.contextTokens !== undefined)
        return promptTooLong(error.promptTokens, error.contextTokens);
      // A backend that gives no numbers: the route's window and our estimate say the same thing in Anthropic's words.
      const window = error.contextTokens ?? context.contextTokens;
      const prompt = error.promptTokens ?? context.estimatedPromptTokens;
      return promptTooLong(
        window === undefined ? prompt : Math.max(prompt, window + 1),
        window ?? Math.max(prompt - 1, 0),
      );
    }
    case 'max_tokens_too_large': {
      // Reached only when the clamp-and-retry could not make it fit: the prompt itself is (about) the window.
      const prompt = Math.max(
        error.promptTokens ?? 0,
        context.estimatedPromptTokens,
        error.contextTokens + 1,
      );
      return promptTooLong(prompt, error.contextTokens);
    }
    case 'kv_exhausted':
      return kvExhausted(error, context);
    case 'unavailable':
      return {
        status: 529,
        type: 'overloaded_error',
        message: `backend unavailable: ${error.message}`,
      };
    case 'auth': {
      const endpoint = context.endpointName ? `endpoint "${context.endpointName}"` : 'the backend';
      return {
        status: 401,
        type: 'authentication_error',
        message: `${endpoint} rejected the API key (${error.message}); ${keyAdvice(context)}`,
      };
    }
    case 'other':
      return otherError(error.status, modelMissing(error, context) ?? error.message);
  }
}

/**
 * Ollama's 404 `model 'X' not found` names only what was asked for (ollama-lmstudio.md §2): the answer also says
 * what the endpoint has, so the caller can pick one without another round trip.
 */
function modelMissing(
  error: { status: number; message: string },
  context: ErrorContext,
): string | undefined {
  const match = /^model '(.+)' not found/.exec(error.message);
  if (error.status !== 404 || !match) return undefined;
  const where = context.endpointName ? `endpoint "${context.endpointName}"` : 'the backend';
  const has =
    context.servedIds && context.servedIds.length > 0
      ? `; it has ${context.servedIds.join(', ')}`
      : '';
  return `model '${match[1] ?? ''}' is not installed on ${where}${has}. Run the job with one of those, or ask the user to pull it (ollama pull ${match[1] ?? ''})`;
}

function otherError(status: number, message: string): ClientError {
  const known = TYPE_BY_STATUS[status];
  if (known) return { status, type: known, message };
  if (status >= 500) return { status: status === 501 ? 500 : status, type: 'api_error', message };
  return { status, type: 'invalid_request_error', message };
}

/** A mid-stream backend error → the Anthropic error type Claude Code retries on (overload or server error). */
export function streamErrorType(error: BackendError): AnthropicErrorType {
  return error.kind === 'unavailable' || error.kind === 'kv_exhausted'
    ? 'overloaded_error'
    : 'api_error';
}
