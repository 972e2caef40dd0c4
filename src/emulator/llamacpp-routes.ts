/**
 * llama-server b10108's HTTP surface: readiness (503 on every route while loading), the API-key
 * middleware (public: /health, /v1/health, /models, /v1/models), probe endpoints (/metrics and
 * /slots answer 501 when switched off, as with no `--metrics` / with `--no-slots`) and the
 * Anthropic routes, with llama.cpp's error bodies and status codes (malformed JSON → 500, …).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runCompletion } from './completion.js';
import {
  LLAMA_BAD_KEY,
  LLAMA_LOADING,
  LLAMA_MESSAGES_REQUIRED,
  LLAMA_METRICS_OFF,
  LLAMA_NOT_FOUND,
  LLAMA_NO_SLOT,
  LLAMA_SLOTS_OFF,
  llamaContextError,
  llamaErrorForStatus,
  llamaParseError,
  llamaTemplateError,
} from './errors.js';
import { randomId } from './generate.js';
import { sendJson, sendText } from './http.js';
import { llamaModelsBody, llamaPropsBody, llamaSlotsBody } from './llamacpp-bodies.js';
import { renderLlamaMetrics } from './metrics.js';
import { renderPrompt } from './render.js';
import type { EmulatorState, RecordedRequest } from './state.js';
import { tokenize } from './tokens.js';

const PUBLIC_PATHS = new Set(['/health', '/v1/health', '/models', '/v1/models']);

export function hasLlamaKey(req: IncomingMessage, key: string): boolean {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) return authorization.replace(/^Bearer /, '') === key;
  return req.headers['x-api-key'] === key;
}

type Prepared =
  | { kind: 'ok'; body: Record<string, unknown>; tokens: string[] }
  | { kind: 'error'; status: number; body: unknown };

/** Parse, convert and render a body the way llama-server does before it looks for a slot. */
function prepare(state: EmulatorState, raw: string, record: RecordedRequest): Prepared {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { kind: 'error', status: 500, body: llamaParseError(raw) };
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    Array.isArray(parsed) ||
    !('messages' in parsed)
  ) {
    return { kind: 'error', status: 500, body: LLAMA_MESSAGES_REQUIRED };
  }
  const body = { ...parsed };
  const rendered = renderPrompt(body, { strictTemplate: state.strictTemplate });
  if (rendered.kind === 'error')
    return { kind: 'error', status: 400, body: llamaTemplateError(rendered.failure) };
  const tokens = tokenize(rendered.text);
  record.promptTokens = tokens.length;
  return { kind: 'ok', body, tokens };
}

async function handleMessages(
  state: EmulatorState,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const fault = state.faults.take();
  if (fault?.kind === 'status') {
    return sendJson(
      res,
      'llama.cpp',
      fault.status,
      fault.body ?? llamaErrorForStatus(fault.status),
    );
  }
  const prepared = prepare(state, raw, record);
  if (prepared.kind === 'error') return sendJson(res, 'llama.cpp', prepared.status, prepared.body);
  const { body, tokens } = prepared;
  const stream = body.stream === true;
  record.stream = stream;
  // The prompt check runs before the stream starts: plain JSON 400 even with stream:true (A35).
  if (tokens.length >= state.window) {
    return sendJson(res, 'llama.cpp', 400, llamaContextError(tokens.length, state.window));
  }
  const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : 4096;
  const model = state.identity.id;
  await runCompletion(
    state,
    res,
    { body, tokens, stream, maxTokens, model, record },
    fault,
    signal,
  );
}

function handleCountTokens(
  state: EmulatorState,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
): void {
  const prepared = prepare(state, raw, record);
  if (prepared.kind === 'error') return sendJson(res, 'llama.cpp', prepared.status, prepared.body);
  sendJson(res, 'llama.cpp', 200, { input_tokens: prepared.tokens.length });
}

/** The OpenAI route exists for comparison captures (A26, A36): same checks, a plain text reply. */
function handleChatCompletions(
  state: EmulatorState,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
): void {
  const prepared = prepare(state, raw, record);
  if (prepared.kind === 'error') return sendJson(res, 'llama.cpp', prepared.status, prepared.body);
  const promptTokens = prepared.tokens.length;
  if (promptTokens >= state.window) {
    return sendJson(res, 'llama.cpp', 400, llamaContextError(promptTokens, state.window));
  }
  const text = 'Hello from the emulator.';
  const completionTokens = tokenize(text).length;
  sendJson(res, 'llama.cpp', 200, {
    choices: [{ finish_reason: 'stop', index: 0, message: { role: 'assistant', content: text } }],
    created: Math.floor(Date.now() / 1000),
    model: state.identity.id,
    system_fingerprint: 'b10108-0a50d99',
    object: 'chat.completion',
    usage: {
      completion_tokens: completionTokens,
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + completionTokens,
    },
    id: `chatcmpl-${randomId()}`,
  });
}

export async function handleLlamaRequest(
  state: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://emulator');
  const path = url.pathname;
  const method = req.method ?? 'GET';
  if (state.loading) return sendJson(res, 'llama.cpp', 503, LLAMA_LOADING);
  if (
    state.apiKey !== undefined &&
    method !== 'OPTIONS' &&
    !PUBLIC_PATHS.has(path) &&
    !hasLlamaKey(req, state.apiKey)
  ) {
    return sendJson(res, 'llama.cpp', 401, LLAMA_BAD_KEY);
  }
  const route = `${method} ${path}`;
  switch (route) {
    case 'GET /health':
    case 'GET /v1/health':
      return sendJson(res, 'llama.cpp', 200, { status: 'ok' });
    case 'GET /models':
    case 'GET /v1/models':
      return sendJson(res, 'llama.cpp', 200, llamaModelsBody(state.identity, state.window));
    case 'GET /props':
      return sendJson(
        res,
        'llama.cpp',
        200,
        llamaPropsBody(state.identity, state.pool, {
          slots: state.slotsEndpoint,
          metrics: state.metrics,
        }),
      );
    case 'GET /slots': {
      if (!state.slotsEndpoint) return sendJson(res, 'llama.cpp', 501, LLAMA_SLOTS_OFF);
      const failOnNoSlot = url.searchParams.get('fail_on_no_slot');
      if (failOnNoSlot && failOnNoSlot !== '0' && state.pool.busy() === state.pool.slots.length) {
        return sendJson(res, 'llama.cpp', 503, LLAMA_NO_SLOT);
      }
      return sendJson(res, 'llama.cpp', 200, llamaSlotsBody(state.pool));
    }
    case 'GET /metrics': {
      if (!state.metrics) return sendJson(res, 'llama.cpp', 501, LLAMA_METRICS_OFF);
      const text = renderLlamaMetrics(state.stats, state.pool.busy(), state.pool.deferred());
      return sendText(res, 'llama.cpp', 200, text, {
        'Process-Start-Time-Unix': String(Math.floor(state.stats.startedAtMs / 1000)),
        'Content-Type': 'text/plain; version=0.0.4',
      });
    }
    case 'POST /v1/messages':
      return handleMessages(state, res, raw, record, signal);
    case 'POST /v1/messages/count_tokens':
      return handleCountTokens(state, res, raw, record);
    case 'POST /v1/chat/completions':
    case 'POST /chat/completions':
      return handleChatCompletions(state, res, raw, record);
    default:
      return sendJson(res, 'llama.cpp', 404, LLAMA_NOT_FOUND);
  }
}
