import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { classifyBackendError } from './backend-errors.js';
import { isRecord } from './fold-system.js';
import { toClientError, type ErrorContext } from './errors.js';

const LLAMA = new URL('../../test/fixtures/llama.cpp/', import.meta.url);

/** Status and raw body text of a captured llama-server answer. */
function captured(name: string): { status: number; body: string } {
  const fixture: unknown = JSON.parse(readFileSync(new URL(name, LLAMA), 'utf8'));
  if (!isRecord(fixture) || !isRecord(fixture.response)) throw new Error(`${name}: no response`);
  const { status, body } = fixture.response;
  return { status: Number(status), body: JSON.stringify(body) };
}

const context: ErrorContext = {
  contextTokens: 16384,
  estimatedPromptTokens: 12000,
  endpointName: 'gpu',
  apiKeyEnv: 'LLAMA_API_KEY',
};

function translate(status: number, body: string, ctx: ErrorContext = context) {
  return toClientError(classifyBackendError(status, body), ctx);
}

describe('toClientError with llama.cpp captures', () => {
  it.each([
    [
      'A34-messages-overflow.json',
      400,
      'invalid_request_error',
      'prompt is too long: 9011 tokens > 8192 maximum',
    ],
    [
      'A35-messages-overflow-stream.json',
      400,
      'invalid_request_error',
      'prompt is too long: 9011 tokens > 8192 maximum',
    ],
    [
      'A91-messages-prompt-8192-of-8192-rejected.json',
      400,
      'invalid_request_error',
      'prompt is too long: 8192 tokens > 8192 maximum',
    ],
    // Unified-KV exhaustion of a first exchange (no earlier turn): compaction cannot help, retry.
    [
      'C13-messages-concurrent-r0.json',
      529,
      'overloaded_error',
      'backend overloaded: Context size has been exceeded. (its shared KV cache is held by other requests; retry)',
    ],
    [
      'C14-messages-concurrent-r1.json',
      529,
      'overloaded_error',
      'backend overloaded: Context size has been exceeded. (its shared KV cache is held by other requests; retry)',
    ],
    [
      'Z01-get-health-while-loading.json',
      529,
      'overloaded_error',
      'backend unavailable: Loading model',
    ],
    [
      'A69c-get-slots-fail-on-no-slot-busy.json',
      529,
      'overloaded_error',
      'backend unavailable: no slot available',
    ],
    ['A46-get-unknown-path.json', 404, 'not_found_error', 'File Not Found'],
    [
      'random-model/R-messages-no-max-tokens-parse-error-500.json',
      500,
      'api_error',
      'The model produced output that does not match the expected peg-native format',
    ],
  ])('translates %s to %i %s', (name, status, type, message) => {
    const { status: upstream, body } = captured(name);
    expect(translate(upstream, body)).toEqual({ status, type, message });
  });

  it('names the endpoint and its key variable when llama-server rejects the key (F07)', () => {
    const { status, body } = captured('F07-messages-no-key.json');
    const client = translate(status, body);
    expect(client.status).toBe(401);
    expect(client.type).toBe('authentication_error');
    expect(client.message).toContain('endpoint "gpu" rejected the API key (Invalid API Key)');
    expect(client.message).toContain('LLAMA_API_KEY');
  });

  it.each<[Partial<ErrorContext>, string]>([
    [{ apiKeyFrom: 'endpoint' }, 'set the endpoint’s api_key_env variable to the key'],
    [{}, 'set the endpoint’s api_key_env variable to the key'],
    // `localagents proxy --base-url` has no models.yaml entry: the flag is the fix.
    [
      { apiKeyFrom: 'proxy-flag' },
      'restart localagents proxy with --api-key-env VAR, VAR holding the key',
    ],
    [{ apiKeyFrom: 'proxy-flag', apiKeyEnv: 'VLLM_KEY' }, 'set VLLM_KEY to the key'],
  ])('gives a rejected key (F07) on a route with %o the fix “%s”', (where, advice) => {
    const { status, body } = captured('F07-messages-no-key.json');
    const client = translate(status, body, { estimatedPromptTokens: 10, ...where });
    expect(client).toEqual({
      status: 401,
      type: 'authentication_error',
      message: `the backend rejected the API key (Invalid API Key); ${advice} the server was started with`,
    });
  });

  it('keeps the template error a 400 with its text (A22)', () => {
    const { status, body } = captured('A22-messages-midsystem-error.json');
    const client = translate(status, body);
    expect(client.status).toBe(400);
    expect(client.message).toContain('System message must be at the beginning.');
  });

  it('answers 529 for unified-KV exhaustion when the window is unknown, so Claude Code retries', () => {
    const { status, body } = captured('C13-messages-concurrent-r0.json');
    const client = translate(status, body, { estimatedPromptTokens: 10 });
    expect(client).toMatchObject({ status: 529, type: 'overloaded_error' });
  });

  it.each([
    // A conversation that is at least half the window compacts; the estimate is the size when above it.
    [
      { compactable: true, estimatedPromptTokens: 12000 },
      'prompt is too long: 16385 tokens > 16384 maximum',
    ],
    [
      { compactable: true, estimatedPromptTokens: 8192 },
      'prompt is too long: 16385 tokens > 16384 maximum',
    ],
    [
      { compactable: true, estimatedPromptTokens: 20000 },
      'prompt is too long: 20000 tokens > 16384 maximum',
    ],
    // Small, or a first exchange Claude Code cannot compact, or no known window: retry.
    [{ compactable: true, estimatedPromptTokens: 8191 }, 'backend overloaded'],
    [{ compactable: false, estimatedPromptTokens: 20000 }, 'backend overloaded'],
    [
      { compactable: true, estimatedPromptTokens: 20000, contextTokens: undefined },
      'backend overloaded',
    ],
  ])('answers unified-KV exhaustion (C14) on a route with %o: %s', (patch, expected) => {
    const { status, body } = captured('C14-messages-concurrent-r1.json');
    expect(translate(status, body, { ...context, ...patch }).message).toMatch(
      new RegExp(`^${expected.replace(/[()]/g, '\\$&')}`),
    );
  });
});

const vllmAnthropic = (message: string): string =>
  JSON.stringify({ type: 'error', error: { type: 'BadRequestError', message } });

/**
 * Every vLLM context-length wording of backends.md §1.6, what it is read as, and what Claude Code gets when the
 * shim cannot clamp its way out of it (toClientError with `context`: estimate 12000). A too-big max_tokens that
 * survived the clamp-and-retry means the prompt itself fills the window, so it is said as an overflow too.
 */
const VLLM_WORDINGS: Array<[string, Record<string, unknown>, string]> = [
  [
    "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (35000 in the messages, 5000 in the completion). Please reduce the length of the messages or completion.",
    { kind: 'context_overflow', promptTokens: 35000, contextTokens: 32768, lowerBound: false },
    'prompt is too long: 35000 tokens > 32768 maximum',
  ],
  [
    "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (20000 in the messages, 20000 in the completion). Please reduce the length of the messages or completion.",
    { kind: 'max_tokens_too_large', promptTokens: 20000, contextTokens: 32768, lowerBound: false },
    'prompt is too long: 32769 tokens > 32768 maximum',
  ],
  [
    "This model's maximum context length is 32768 tokens. However, your request has 33000 input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=33000)",
    { kind: 'context_overflow', promptTokens: 33000, contextTokens: 32768, lowerBound: false },
    'prompt is too long: 33000 tokens > 32768 maximum',
  ],
  [
    "This model's maximum context length is 32768 tokens. However, your request has 33000 input tokens. Please reduce the length of the input messages.",
    { kind: 'context_overflow', promptTokens: 33000, contextTokens: 32768, lowerBound: false },
    'prompt is too long: 33000 tokens > 32768 maximum',
  ],
  [
    "'max_tokens' or 'max_completion_tokens' is too large: 64000. This model's maximum context length is 20000 tokens and your request has 16614 input tokens (64000 > 20000 - 16614).",
    { kind: 'max_tokens_too_large', promptTokens: 16614, contextTokens: 20000, lowerBound: false },
    'prompt is too long: 20001 tokens > 20000 maximum',
  ],
  [
    "'max_tokens' or 'max_completion_tokens' is too large: 64000. This model's maximum context length is 20000 tokens and your request has 16614 input tokens (64000 > 20000 - 16614). None",
    { kind: 'max_tokens_too_large', promptTokens: 16614, contextTokens: 20000, lowerBound: false },
    'prompt is too long: 20001 tokens > 20000 maximum',
  ],
  [
    "You passed 9000 input tokens and requested 32000 output tokens. However, the model's context length is only 32768 tokens, resulting in a maximum input length of 768 tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=9000)",
    { kind: 'max_tokens_too_large', promptTokens: 9000, contextTokens: 32768, lowerBound: false },
    'prompt is too long: 32769 tokens > 32768 maximum',
  ],
  [
    "You passed 40000 input tokens and requested 32000 output tokens. However, the model's context length is only 32768 tokens, resulting in a maximum input length of 768 tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=40000)",
    { kind: 'context_overflow', promptTokens: 40000, contextTokens: 32768, lowerBound: false },
    'prompt is too long: 40000 tokens > 32768 maximum',
  ],
  [
    "You passed 120000 input characters and requested 32000 output tokens. However, the model's context length is only 32768 tokens, resulting in a maximum input length of 768 tokens (at most 3072 characters). Please reduce the length of the input prompt. (parameter=input_text, value=120000)",
    {
      kind: 'max_tokens_too_large',
      promptTokens: undefined,
      contextTokens: 32768,
      lowerBound: false,
    },
    'prompt is too long: 32769 tokens > 32768 maximum',
  ],
  [
    'max_output_tokens=128000cannot be greater than max_total_tokens=max_total_tokens=65536. Please request fewer output tokens.',
    {
      kind: 'max_tokens_too_large',
      promptTokens: undefined,
      contextTokens: 65536,
      lowerBound: false,
    },
    'prompt is too long: 65537 tokens > 65536 maximum',
  ],
  [
    "This model's maximum context length is 65536 tokens. However, you requested 32000 output tokens and your prompt contains at least 33537 input tokens, for a total of at least 65537 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=33537)",
    { kind: 'max_tokens_too_large', promptTokens: 33537, contextTokens: 65536, lowerBound: true },
    'prompt is too long: 65537 tokens > 65536 maximum',
  ],
  [
    "This model's maximum context length is 65536 tokens. However, you requested 32000 output tokens and your prompt contains 70000 input tokens, for a total of 102000 tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
    { kind: 'context_overflow', promptTokens: 70000, contextTokens: 65536, lowerBound: false },
    'prompt is too long: 70000 tokens > 65536 maximum',
  ],
  [
    "This model's maximum context length is 65536 tokens. However, you requested 32000 output tokens and your prompt contains 20000 input tokens, for a total of 52000 tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
    { kind: 'max_tokens_too_large', promptTokens: 20000, contextTokens: 65536, lowerBound: false },
    'prompt is too long: 65537 tokens > 65536 maximum',
  ],
  [
    "This model's maximum context length is 65536 tokens. However, you requested 32000 output tokens and your prompt contains 900000 characters (more than 134144 characters, which is the upper bound for 33536 input tokens). Please reduce the length of the input prompt or the number of requested output tokens.",
    {
      kind: 'max_tokens_too_large',
      promptTokens: undefined,
      contextTokens: 65536,
      lowerBound: false,
    },
    'prompt is too long: 65537 tokens > 65536 maximum',
  ],
];

describe('classifyBackendError with vLLM wordings (backends.md §1.6)', () => {
  it.each(VLLM_WORDINGS)('reads %s', (message, expected) => {
    expect(classifyBackendError(400, vllmAnthropic(message))).toMatchObject(expected);
  });

  it.each(VLLM_WORDINGS)(
    'translates %s into the 400 Claude Code compacts on',
    (message, _kind, translated) => {
      expect(translate(400, vllmAnthropic(message))).toEqual({
        status: 400,
        type: 'invalid_request_error',
        message: translated,
      });
    },
  );

  // Newer vLLM's Anthropic router: the renderer's check raises inside create_messages, which answers
  // 500 internal_error with the message (vllm/entrypoints/anthropic/api_router.py).
  it.each(VLLM_WORDINGS)('reads %s in a 500 internal_error too', (message, expected) => {
    const body = JSON.stringify({ type: 'error', error: { type: 'internal_error', message } });
    expect(classifyBackendError(500, body)).toMatchObject(expected);
  });

  it.each(VLLM_WORDINGS)(
    'reads %s in the nested OpenAI shape of /v1/chat/completions too',
    (message, expected) => {
      const nested = JSON.stringify({
        error: { message, type: 'BadRequestError', param: 'input_tokens', code: 400 },
      });
      expect(classifyBackendError(400, nested)).toMatchObject(expected);
    },
  );

  it.each([
    [401, '{"error":"Unauthorized"}', 401, 'authentication_error'],
    [
      404,
      '{"type":"error","error":{"type":"NotFoundError","message":"The model `claude-x` does not exist."}}',
      404,
      'not_found_error',
    ],
    [404, '{"detail":"Not Found"}', 404, 'not_found_error'],
    [500, '{"type":"error","error":{"type":"internal_error","message":"boom"}}', 500, 'api_error'],
    [
      400,
      '{"error":{"message":"1 validation error","type":"Bad Request","param":"body.max_tokens","code":400}}',
      400,
      'invalid_request_error',
    ],
    [502, 'Bad Gateway', 502, 'api_error'],
    [429, '{"error":{"message":"slow down"}}', 429, 'rate_limit_error'],
  ])('maps a vLLM %i answer to an Anthropic envelope', (status, body, expectedStatus, type) => {
    expect(translate(status, body)).toMatchObject({ status: expectedStatus, type });
  });
});

const anthropicShaped = (status: number, type: string, message: string): string =>
  JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_0123' });

describe('Ollama and LM Studio error answers (ollama-lmstudio.md §2, §6)', () => {
  it('reads LM Studio’s 500 n_keep overflow as the prompt is too long, with its numbers', () => {
    const message =
      'The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input.';
    expect(translate(500, anthropicShaped(500, 'api_error', message))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: 'prompt is too long: 13055 tokens > 4096 maximum',
    });
  });

  it('reads LM Studio 0.3’s older overflow wording too', () => {
    const message =
      'Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 8192 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input';
    expect(translate(500, JSON.stringify({ error: message })).message).toBe(
      'prompt is too long: 9000 tokens > 8192 maximum',
    );
  });

  it('reads Ollama’s 400 without numbers (context shift off) with the route’s window and estimate', () => {
    const message =
      'the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length';
    expect(translate(400, anthropicShaped(400, 'invalid_request_error', message))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: 'prompt is too long: 16385 tokens > 16384 maximum',
    });
    expect(
      translate(400, anthropicShaped(400, 'invalid_request_error', message), {
        estimatedPromptTokens: 30000,
      }).message,
    ).toBe('prompt is too long: 30000 tokens > 29999 maximum');
  });

  it('answers Ollama’s busy 503 with the 529 Claude Code retries', () => {
    const message = 'server busy, please try again.  maximum pending requests exceeded';
    expect(translate(503, anthropicShaped(503, 'overloaded_error', message))).toMatchObject({
      status: 529,
      type: 'overloaded_error',
    });
  });

  it('answers Ollama’s 404 for a model it lacks with what the endpoint has', () => {
    const answer = translate(
      404,
      anthropicShaped(404, 'not_found_error', "model 'qwen9' not found"),
      {
        ...context,
        endpointName: 'laptop',
        servedIds: ['qwen3-coder:30b', 'gemma3:latest'],
      },
    );
    expect(answer).toEqual({
      status: 404,
      type: 'not_found_error',
      message:
        'model \'qwen9\' is not installed on endpoint "laptop"; it has qwen3-coder:30b, gemma3:latest. Run the job with one of those, or ask the user to pull it (ollama pull qwen9)',
    });
  });
});
