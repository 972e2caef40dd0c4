import { z } from 'zod';

/**
 * What a backend's error body means, whatever shape it came in: llama.cpp's `{"error":{code,message,type}}`,
 * vLLM's Anthropic-wrapped `{"type":"error","error":{type,message}}`, its OpenAI shapes (nested and flat),
 * its bare 401 `{"error":"Unauthorized"}`, FastAPI's `{"detail":…}`, or plain text.
 * See docs/reference/backends.md §1.5, §1.6, §1.8, §2.3, §2.5.
 */
export type BackendError =
  /**
   * The prompt alone does not fit: `promptTokens >= contextTokens` (exact unless `lowerBound`). Undefined numbers:
   * the backend said so without them (Ollama's 400 when it may not truncate), and the route's own stand in.
   */
  | {
      kind: 'context_overflow';
      promptTokens: number | undefined;
      contextTokens: number | undefined;
      lowerBound: boolean;
      message: string;
    }
  /** vLLM: prompt + max_tokens > max_model_len. `promptTokens` is exact, a lower bound, or unknown. */
  | {
      kind: 'max_tokens_too_large';
      contextTokens: number;
      promptTokens: number | undefined;
      lowerBound: boolean;
      message: string;
    }
  /** llama.cpp with unified KV: the shared cells ran out (500 `Context size has been exceeded.`). */
  | { kind: 'kv_exhausted'; message: string }
  /** llama.cpp 503 while loading or with no free slot; vLLM overload. */
  | { kind: 'unavailable'; status: number; message: string }
  | { kind: 'auth'; status: number; message: string }
  | { kind: 'other'; status: number; type: string | undefined; message: string };

const ErrorObject = z.looseObject({
  message: z.string().optional(),
  type: z.string().optional(),
  code: z.unknown().optional(),
  n_prompt_tokens: z.number().optional(),
  n_ctx: z.number().optional(),
});

const ErrorBody = z.looseObject({
  error: z.union([z.string(), ErrorObject]).optional(),
  message: z.string().optional(),
  type: z.string().optional(),
  detail: z.unknown().optional(),
});

interface ErrorFields {
  message: string;
  type: string | undefined;
  promptTokens: number | undefined;
  contextTokens: number | undefined;
}

/** Pulls message/type (and llama.cpp's token counts) out of any of the error shapes above. */
export function readErrorFields(bodyText: string): ErrorFields {
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    return {
      message: bodyText.trim(),
      type: undefined,
      promptTokens: undefined,
      contextTokens: undefined,
    };
  }
  const parsed = ErrorBody.safeParse(json);
  if (!parsed.success) {
    return {
      message: bodyText.trim(),
      type: undefined,
      promptTokens: undefined,
      contextTokens: undefined,
    };
  }
  const body = parsed.data;
  if (typeof body.error === 'string') {
    return {
      message: body.error,
      type: body.type,
      promptTokens: undefined,
      contextTokens: undefined,
    };
  }
  if (body.error) {
    return {
      message: body.error.message ?? bodyText.trim(),
      type: body.error.type,
      promptTokens: body.error.n_prompt_tokens,
      contextTokens: body.error.n_ctx,
    };
  }
  const detail = typeof body.detail === 'string' ? body.detail : undefined;
  return {
    message: body.message ?? detail ?? bodyText.trim(),
    type: body.type,
    promptTokens: undefined,
    contextTokens: undefined,
  };
}

const num = (text: string | undefined): number => Number(text);

/** vLLM's context-length wordings, every era (backends.md §1.6). Returns undefined for anything else. */
export function parseVllmContextError(message: string): BackendError | undefined {
  let m =
    /maximum context length is (\d+) tokens\. However, you requested (\d+) tokens \((\d+) in the messages, (\d+) in the completion\)/.exec(
      message,
    );
  if (m) return fromExact(num(m[1]), num(m[3]), message);
  m = /maximum context length is (\d+) tokens\. However, your request has (\d+) input tokens/.exec(
    message,
  );
  if (m) return fromExact(num(m[1]), num(m[2]), message);
  m =
    /'max_tokens' or 'max_completion_tokens' is too large: (\d+)\. This model's maximum context length is (\d+) tokens and your request has (\d+) input tokens/.exec(
      message,
    );
  if (m) return fromExact(num(m[2]), num(m[3]), message);
  m =
    /You passed (\d+) input tokens and requested (\d+) output tokens\. However, the model's context length is only (\d+) tokens/.exec(
      message,
    );
  if (m) return fromExact(num(m[3]), num(m[1]), message);
  m =
    /You passed (\d+) input characters and requested (\d+) output tokens\. However, the model's context length is only (\d+) tokens/.exec(
      message,
    );
  if (m) return tooLarge(num(m[3]), undefined, message);
  m =
    /max_output_tokens=(\d+)\s*cannot be greater than max_total_tokens=(?:max_total_tokens=)?(\d+)/.exec(
      message,
    );
  if (m) return tooLarge(num(m[2]), undefined, message);
  // v0.25: the prompt was tokenised whole, so the count is exact (docs/reference/backends.md §1.6).
  m =
    /maximum context length is (\d+) tokens\. However, you requested (\d+) output tokens and your prompt contains (\d+) input tokens, for a total of (\d+) tokens/.exec(
      message,
    );
  if (m) return fromExact(num(m[1]), num(m[3]), message);
  // v0.25: too many characters to be worth tokenising; the prompt size in tokens is unknown.
  m =
    /maximum context length is (\d+) tokens\. However, you requested (\d+) output tokens and your prompt contains (\d+) characters/.exec(
      message,
    );
  if (m) return tooLarge(num(m[1]), undefined, message);
  // Released ~v0.18+: the prompt count is always L-M+1, a lower bound, so it cannot tell overflow from a too-big max_tokens.
  m =
    /maximum context length is (\d+) tokens\. However, you requested (\d+) output tokens and your prompt contains at least (\d+) input tokens/.exec(
      message,
    );
  if (m)
    return {
      kind: 'max_tokens_too_large',
      contextTokens: num(m[1]),
      promptTokens: num(m[3]),
      lowerBound: true,
      message,
    };
  m = /maximum context length is (\d+)|context length is only (\d+)/.exec(message);
  if (m) return tooLarge(num(m[1] ?? m[2]), undefined, message);
  return undefined;
}

/**
 * Ollama's and LM Studio's overflow wordings (docs/reference/ollama-lmstudio.md §2, §6), whatever the status: LM
 * Studio answers them as 500 on /v1/messages (and has been seen to on 200), Ollama as 400.
 */
export function parseLocalServerOverflow(message: string): BackendError | undefined {
  // LM Studio 0.4 (its llama.cpp engine): `… (n_keep: 13055>= n_ctx: 4096). Try to load the model with …`.
  let m = /n_keep: (\d+)\s*>=\s*n_ctx: (\d+)/.exec(message);
  if (m) return overflow(num(m[1]), num(m[2]), message);
  // LM Studio 0.3: `Trying to keep the first N tokens when context the overflows. However, the model is loaded
  // with context length of only M tokens, …`.
  m =
    /keep the first (\d+) tokens when context the overflows\. However, the model is loaded with context length of only (\d+) tokens/.exec(
      message,
    );
  if (m) return overflow(num(m[1]), num(m[2]), message);
  // Ollama with context shift off (the deepseek2 family): no numbers in it.
  if (/the prompt is longer than the context length/.test(message))
    return {
      kind: 'context_overflow',
      promptTokens: undefined,
      contextTokens: undefined,
      lowerBound: true,
      message,
    };
  return undefined;
}

function overflow(promptTokens: number, contextTokens: number, message: string): BackendError {
  return { kind: 'context_overflow', promptTokens, contextTokens, lowerBound: false, message };
}

function fromExact(contextTokens: number, promptTokens: number, message: string): BackendError {
  return promptTokens >= contextTokens
    ? { kind: 'context_overflow', promptTokens, contextTokens, lowerBound: false, message }
    : { kind: 'max_tokens_too_large', contextTokens, promptTokens, lowerBound: false, message };
}

function tooLarge(
  contextTokens: number,
  promptTokens: number | undefined,
  message: string,
): BackendError {
  return { kind: 'max_tokens_too_large', contextTokens, promptTokens, lowerBound: false, message };
}

/** Classifies one backend error response (HTTP status + body text, or a stream error's data as status 500). */
export function classifyBackendError(status: number, bodyText: string): BackendError {
  const fields = readErrorFields(bodyText);
  const { message, type } = fields;
  if (type === 'exceed_context_size_error' || /exceeds the available context size/.test(message)) {
    const numbers =
      /request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)/.exec(message);
    return {
      kind: 'context_overflow',
      promptTokens: fields.promptTokens ?? num(numbers?.[1]),
      contextTokens: fields.contextTokens ?? num(numbers?.[2]),
      lowerBound: false,
      message,
    };
  }
  if (message.includes('Context size has been exceeded')) return { kind: 'kv_exhausted', message };
  const local = parseLocalServerOverflow(message);
  if (local) return local;
  // 500: newer vLLM's Anthropic router answers an exception raised while preparing the request as
  // `internal_error` with its message, and the renderer's context check raises one (api_router.py).
  if (status === 400 || status === 413 || status === 500) {
    const vllm = parseVllmContextError(message);
    if (vllm) return vllm;
  }
  if (status === 401 || type === 'authentication_error') return { kind: 'auth', status, message };
  if (
    status === 503 ||
    status === 529 ||
    type === 'unavailable_error' ||
    type === 'overloaded_error'
  ) {
    return { kind: 'unavailable', status, message };
  }
  return { kind: 'other', status, type, message };
}
