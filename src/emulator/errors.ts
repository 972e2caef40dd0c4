/**
 * Error bodies exactly as the captured servers send them. llama-server: `{"error":{code,message,type}}`
 * (HTTP-layer errors order the keys message, type, code); vLLM: Anthropic-shaped handler errors with
 * vLLM's class-style types, `{"error":"Unauthorized"}` from its auth middleware. Ollama: `anthropic.NewError`
 * with a `request_id` (ollama-lmstudio.md §2); LM Studio: the Anthropic envelope (§6).
 */
import { randomBytes } from 'node:crypto';
import type { TemplateFailure } from './render.js';

export interface LlamaError {
  code: number;
  message: string;
  type: string;
  [extra: string]: unknown;
}

export function llamaError(code: number, message: string, type: string): { error: LlamaError } {
  return { error: { code, message, type } };
}

/** The HTTP layer's key order (401, 404, 503 loading), see fixtures A46, F07, Z01. */
export function llamaHttpLayerError(
  code: number,
  message: string,
  type: string,
): { error: { message: string; type: string; code: number } } {
  return { error: { message, type, code } };
}

export const LLAMA_LOADING = llamaHttpLayerError(503, 'Loading model', 'unavailable_error');
export const LLAMA_NOT_FOUND = llamaHttpLayerError(404, 'File Not Found', 'not_found_error');
export const LLAMA_BAD_KEY = llamaHttpLayerError(401, 'Invalid API Key', 'authentication_error');
export const LLAMA_METRICS_OFF = llamaError(
  501,
  'This server does not support metrics endpoint. Start it with `--metrics`',
  'not_supported_error',
);
// backends.md §2.11: the handler's error (code, message, type order), like the /metrics one.
export const LLAMA_SLOTS_OFF = llamaError(
  501,
  'This server does not support slots endpoint. Start it with `--slots`',
  'not_supported_error',
);
export const LLAMA_NO_SLOT = llamaError(503, 'no slot available', 'unavailable_error');
export const LLAMA_KV_EXHAUSTED = llamaError(
  500,
  'Context size has been exceeded.',
  'server_error',
);
export const LLAMA_MESSAGES_REQUIRED = llamaError(500, "'messages' is required", 'server_error');

const PARSER_PREFIX =
  'Unable to generate parser for this template. Automatic parser generation failed: \n------------\n';

// The jinja excerpts are the captured ones (A22, A43); the other two follow the same layout.
const TEMPLATE_MESSAGES: Record<TemplateFailure['kind'], string> = {
  'mid-system':
    "While executing CallExpression at line 85, column 32 in source:\n...first %}↵            {{- raise_exception('System message must be at the beginnin...\n                                           ^\nError: Jinja Exception: System message must be at the beginning.",
  'no-messages':
    "While executing CallExpression at line 43, column 24 in source:\n... not messages %}↵    {{- raise_exception('No messages provided.') }}↵{%- endif %...\n                                           ^\nError: Jinja Exception: No messages provided.",
  'no-user-query':
    "While executing CallExpression at line 80, column 24 in source:\n...ol_step %}↵    {{- raise_exception('No user query found in messages.') }}↵{%- en...\n                                           ^\nError: Jinja Exception: No user query found in messages.",
  'bad-role':
    "While executing CallExpression at line 147, column 20 in source:\n...  {%- else %}↵        {{- raise_exception('Unexpected message role.') }}↵    {%- en...\n                                           ^\nError: Jinja Exception: Unexpected message role.",
};

export function llamaTemplateError(failure: TemplateFailure): { error: LlamaError } {
  return llamaError(400, PARSER_PREFIX + TEMPLATE_MESSAGES[failure.kind], 'invalid_request_error');
}

/** `exceed_context_size_error` with the prompt size and the per-slot window (A34). */
export function llamaContextError(promptTokens: number, nCtx: number): { error: LlamaError } {
  return {
    error: {
      code: 400,
      message: `request (${promptTokens} tokens) exceeds the available context size (${nCtx} tokens), try increasing it`,
      type: 'exceed_context_size_error',
      n_prompt_tokens: promptTokens,
      n_ctx: nCtx,
    },
  };
}

/** nlohmann's message for a body that is not JSON (A40), as near as JSON.parse lets us tell. */
export function llamaParseError(raw: string): { error: LlamaError } {
  const column = raw.length + 1;
  const message =
    raw.trim() === ''
      ? `[json.exception.parse_error.101] parse error at line 1, column 1: attempting to parse an empty input; check that your input string or stream contains the expected JSON`
      : `[json.exception.parse_error.101] parse error at line 1, column ${column}: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal`;
  return llamaError(500, message, 'server_error');
}

/** A llama error body for an arbitrary status (faults), typed like llama.cpp's table. */
export function llamaErrorForStatus(status: number, message?: string): object {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    501: 'not_supported_error',
    503: 'unavailable_error',
  };
  if (status === 503 && message === undefined) return LLAMA_LOADING;
  return llamaError(status, message ?? 'Internal Server Error', types[status] ?? 'server_error');
}

export interface VllmError {
  type: 'error';
  error: { type: string; message: string };
}

export function vllmError(type: string, message: string): VllmError {
  return { type: 'error', error: { type, message } };
}

export const VLLM_UNAUTHORIZED = { error: 'Unauthorized' };
export const VLLM_TOOL_CHOICE = vllmError(
  'BadRequestError',
  '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
);

export function vllmUnknownModel(name: string): VllmError {
  return vllmError('NotFoundError', `The model \`${name}\` does not exist.`);
}

/** The two recorded wordings of vLLM's prompt + max_tokens > max_model_len check (backends.md §1.6). */
export function vllmContextMessage(
  wording: 'at-least' | 'too-large',
  maxModelLen: number,
  promptTokens: number,
  maxTokens: number,
): string {
  if (wording === 'too-large') {
    return `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context length is ${maxModelLen} tokens and your request has ${promptTokens} input tokens (${maxTokens} > ${maxModelLen} - ${promptTokens}).`;
  }
  const atLeast = Math.max(maxModelLen - maxTokens + 1, 1);
  return `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${maxTokens} output tokens and your prompt contains at least ${atLeast} input tokens, for a total of at least ${atLeast + maxTokens} tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=${atLeast})`;
}

/**
 * The whole answer to prompt + max_tokens > max_model_len on /v1/messages: a 400 BadRequestError (recorded), or as
 * newer vLLM's Anthropic router answers an exception raised while it prepares the request: 500 `internal_error`
 * with the same message (vllm/entrypoints/anthropic/api_router.py, `create_messages`).
 */
export function vllmContextError(
  state: { vllmContextWording: 'at-least' | 'too-large'; vllmContextStatus: 400 | 500 },
  maxModelLen: number,
  promptTokens: number,
  maxTokens: number,
): { status: number; body: VllmError } {
  const message = vllmContextMessage(
    state.vllmContextWording,
    maxModelLen,
    promptTokens,
    maxTokens,
  );
  return state.vllmContextStatus === 500
    ? { status: 500, body: vllmError('internal_error', message) }
    : { status: 400, body: vllmError('BadRequestError', message) };
}

/** vLLM's request-validation handler answers in the OpenAI shape, even on /v1/messages. */
export function vllmValidationError(message: string): {
  error: { message: string; type: string; param: null; code: number };
} {
  return { error: { message, type: 'Bad Request', param: null, code: 400 } };
}

/**
 * Ollama's status → Anthropic error type table (`anthropic.NewError`, reference §2); LM Studio's answers are
 * assumed to follow Anthropic's own table, which is the same [inferred].
 */
export function ollamaErrorType(status: number): string {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    429: 'rate_limit_error',
    503: 'overloaded_error',
    529: 'overloaded_error',
  };
  return types[status] ?? 'api_error';
}

export interface OllamaError {
  type: 'error';
  error: { type: string; message: string };
  request_id: string;
}

/** `{"type":"error","error":{type,message},"request_id":"req_<24 hex>"}`. */
export function ollamaError(status: number, message: string): OllamaError {
  return {
    type: 'error',
    error: { type: ollamaErrorType(status), message },
    request_id: `req_${randomBytes(12).toString('hex')}`,
  };
}

/** ErrMaxQueue (OLLAMA_MAX_QUEUE exceeded); the two spaces are Ollama's. */
export const OLLAMA_BUSY = 'server busy, please try again.  maximum pending requests exceeded';
/** v0.30.11+ with context shift off (deepseek2): a prompt over num_ctx − 1 tokens. */
export const OLLAMA_PROMPT_TOO_LONG =
  'the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length';
/** The qwen3.8 renderer up to v0.32.13 (ollama#17774), answered 500 by ChatHandler. */
export const OLLAMA_MID_SYSTEM = 'system message must be at the beginning';
/** An error the runner reports mid-generation [inferred: the runner's usual wording]. */
export const OLLAMA_RUNNER_ERROR =
  'an error was encountered while running the model: unexpected EOF';

/** The default body of a `status` fault on Ollama: the busy message for 503, else the status text. */
export function ollamaErrorForStatus(status: number): OllamaError {
  const texts: Record<number, string> = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    502: 'Bad Gateway',
    503: OLLAMA_BUSY,
    504: 'Gateway Timeout',
  };
  return ollamaError(status, texts[status] ?? 'Internal Server Error');
}

export interface AnthropicError {
  type: 'error';
  error: { type: string; message: string };
}

export function lmstudioError(type: string, message: string): AnthropicError {
  return { type: 'error', error: { type, message } };
}

/**
 * The overflow message (openclaude#353, LM Studio 0.4.x): n_keep is the whole prompt, n_ctx the loaded
 * window. `old` is the 0.3.x wording.
 */
export function lmstudioContextMessage(promptTokens: number, nCtx: number, old: boolean): string {
  return old
    ? `Trying to keep the first ${promptTokens} tokens when context the overflows. However, the model is loaded with context length of only ${nCtx} tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input`
    : `The number of tokens to keep from the initial prompt is greater than the context length (n_keep: ${promptTokens}>= n_ctx: ${nCtx}). Try to load the model with a larger context length, or provide a shorter input.`;
}

/** A `status` fault's default body on LM Studio: the Anthropic type for the status [inferred]. */
export function lmstudioErrorForStatus(status: number): AnthropicError {
  return lmstudioError(
    ollamaErrorType(status),
    status === 503 ? 'Overloaded' : 'Internal Server Error',
  );
}
