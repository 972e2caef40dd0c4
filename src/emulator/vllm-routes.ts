/**
 * vLLM's HTTP surface (`vllm serve`, recent releases; backends.md §1): empty-body /health, /version,
 * one model card per served name plus LoRA cards, labelled `vllm:` metrics, Bearer-only API key on
 * /v1/* (401 `{"error":"Unauthorized"}`), Anthropic-shaped handler errors with vLLM's class-style
 * types, request-validation errors in the OpenAI shape, 400 when prompt + max_tokens > max_model_len.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runCompletion } from './completion.js';
import {
  VLLM_TOOL_CHOICE,
  VLLM_UNAUTHORIZED,
  vllmContextError,
  vllmError,
  vllmUnknownModel,
  vllmValidationError,
} from './errors.js';
import { sendJson, sendText } from './http.js';
import { vllmModelsBody } from './vllm-bodies.js';
import { renderVllmMetrics } from './metrics.js';
import { renderPrompt } from './render.js';
import type { EmulatorState, RecordedRequest } from './state.js';
import { tokenize } from './tokens.js';

export const VLLM_VERSION = '0.24.0';
const GUARDED_PREFIXES = ['/v1', '/v2', '/inference', '/cohere'];

function hasBearer(req: IncomingMessage, key: string): boolean {
  const match = /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  return match?.[1] === key;
}

function knownModel(state: EmulatorState, name: string): boolean {
  return state.servedNames.includes(name) || state.loras.some((lora) => lora.name === name);
}

type Prepared =
  | {
      kind: 'ok';
      body: Record<string, unknown>;
      tokens: string[];
      model: string;
      maxTokens: number;
    }
  | { kind: 'error'; status: number; body: unknown };

function prepare(
  state: EmulatorState,
  raw: string,
  record: RecordedRequest,
  needsMaxTokens: boolean,
): Prepared {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return {
      kind: 'error',
      status: 400,
      body: vllmValidationError(
        `1 validation error:\n  {'type': 'json_invalid', 'loc': ('body',), 'msg': 'JSON decode error', 'ctx': {'error': '${detail}'}}`,
      ),
    };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return {
      kind: 'error',
      status: 400,
      body: vllmValidationError(
        "1 validation error:\n  {'type': 'model_attributes_type', 'loc': ('body',), 'msg': 'Input should be a valid dictionary or object to extract fields from'}",
      ),
    };
  }
  const body: Record<string, unknown> = { ...parsed };
  const missing = ['model', 'messages', ...(needsMaxTokens ? ['max_tokens'] : [])].filter(
    (key) => body[key] === undefined,
  );
  if (missing.length > 0) {
    const lines = missing.map(
      (key) => `  {'type': 'missing', 'loc': ('body', '${key}'), 'msg': 'Field required'}`,
    );
    return {
      kind: 'error',
      status: 400,
      body: vllmValidationError(
        `${missing.length} validation error${missing.length > 1 ? 's' : ''}:\n${lines.join('\n')}`,
      ),
    };
  }
  const model = typeof body.model === 'string' ? body.model : '';
  if (!knownModel(state, model))
    return { kind: 'error', status: 404, body: vllmUnknownModel(model) };
  if (!state.toolChoice && Array.isArray(body.tools) && body.tools.length > 0) {
    return { kind: 'error', status: 400, body: VLLM_TOOL_CHOICE };
  }
  const rendered = renderPrompt(body, { strictTemplate: state.strictTemplate });
  if (rendered.kind === 'error') {
    return {
      kind: 'error',
      status: 400,
      body: vllmError('BadRequestError', `Jinja template error: ${rendered.failure.kind}`),
    };
  }
  const tokens = tokenize(rendered.text);
  record.promptTokens = tokens.length;
  const maxTokens =
    typeof body.max_tokens === 'number' ? body.max_tokens : state.window - tokens.length;
  return { kind: 'ok', body, tokens, model, maxTokens };
}

async function handleMessages(
  state: EmulatorState,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const fault = state.faults.take();
  const prepared = prepare(state, raw, record, true);
  if (prepared.kind === 'error') return sendJson(res, 'vllm', prepared.status, prepared.body);
  const { body, tokens, model, maxTokens } = prepared;
  const stream = body.stream === true;
  record.stream = stream;
  // Checked during preprocessing, before any SSE byte: plain 400 JSON even when streaming.
  if (tokens.length + maxTokens > state.window) {
    const error = vllmContextError(state, state.window, tokens.length, maxTokens);
    return sendJson(res, 'vllm', error.status, error.body);
  }
  await runCompletion(
    state,
    res,
    { body, tokens, stream, maxTokens, model, record },
    fault,
    signal,
  );
}

export async function handleVllmRequest(
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
  const guarded = GUARDED_PREFIXES.some(
    (prefix) => path === prefix || path.startsWith(`${prefix}/`),
  );
  if (
    state.apiKey !== undefined &&
    guarded &&
    method !== 'OPTIONS' &&
    !hasBearer(req, state.apiKey)
  ) {
    return sendJson(res, 'vllm', 401, VLLM_UNAUTHORIZED);
  }
  switch (`${method} ${path}`) {
    case 'GET /health':
    case 'GET /ping':
    case 'POST /ping':
      return sendText(res, 'vllm', 200, '');
    case 'GET /version':
      return sendJson(res, 'vllm', 200, { version: VLLM_VERSION });
    case 'GET /load':
      return sendJson(res, 'vllm', 200, { server_load: state.pool.busy() });
    case 'GET /v1/models':
      return sendJson(res, 'vllm', 200, vllmModelsBody(state));
    case 'GET /metrics': {
      const used = state.pool.slots.reduce(
        (sum, s) => sum + (s.processing && s.task ? s.task.promptTokens + s.task.decoded : 0),
        0,
      );
      const gauges = {
        running: state.pool.busy(),
        waiting: state.pool.deferred(),
        kvCacheUsage: Math.min(used / (state.window * 4), 1),
        modelName: state.servedNames[0] ?? 'qwen3-coder',
      };
      return sendText(res, 'vllm', 200, renderVllmMetrics(state.stats, gauges), {
        'Content-Type': 'text/plain; version=0.0.4; charset=utf-8',
      });
    }
    case 'POST /v1/messages':
      return handleMessages(state, res, raw, record, signal);
    case 'POST /v1/messages/count_tokens': {
      const prepared = prepare(state, raw, record, false);
      if (prepared.kind === 'error') return sendJson(res, 'vllm', prepared.status, prepared.body);
      const count = prepared.tokens.length;
      return sendJson(res, 'vllm', 200, {
        input_tokens: count,
        context_management: { original_input_tokens: count },
      });
    }
    default:
      return sendJson(res, 'vllm', 404, { detail: 'Not Found' });
  }
}
