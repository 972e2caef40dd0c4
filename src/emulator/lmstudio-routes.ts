/**
 * LM Studio's HTTP surface (ollama-lmstudio.md §6): the v1, v0 and OpenAI model lists, /v1/messages
 * (zod validation: a `role:"system"` inside `messages` is a 400 discriminator error; an overflow is a
 * 500, not a truncation), Require Authentication (`x-api-key` or `Authorization: Bearer`), a JIT load
 * for a downloaded model that is not loaded, and the 200 `Unexpected endpoint or method.` answer to
 * anything else — count_tokens included, as it is undocumented.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runCompletion } from './completion.js';
import { lmstudioContextMessage, lmstudioError } from './errors.js';
import { sendJson } from './http.js';
import {
  lmstudioOpenAiModelsBody,
  lmstudioV0ModelBody,
  lmstudioV0ModelsBody,
  lmstudioV1ModelsBody,
} from './lmstudio-bodies.js';
import { renderPrompt } from './render.js';
import type { EmulatorState, RecordedRequest } from './state.js';
import { tokenize } from './tokens.js';

function hasKey(req: IncomingMessage, key: string): boolean {
  const bearer = /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  return bearer === key || req.headers['x-api-key'] === key;
}

/** zod's name for the type it received. */
function received(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * The first issue of LM Studio's request schema as `path: message`. Only the role discriminator's
 * wording was reported (lmstudio-bug-tracker#1399); the rest follows zod's defaults [inferred].
 */
function schemaIssue(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return `request: Expected object, received ${received(body)}`;
  }
  const request = body as Record<string, unknown>;
  const expect = (field: string, type: string): string | undefined => {
    const value = request[field];
    if (value === undefined) return `request.${field}: Required`;
    return received(value) === type
      ? undefined
      : `request.${field}: Expected ${type}, received ${received(value)}`;
  };
  const problem = expect('model', 'string') ?? expect('messages', 'array');
  if (problem) return problem;
  if (request.max_tokens !== undefined && typeof request.max_tokens !== 'number') {
    return `request.max_tokens: Expected number, received ${received(request.max_tokens)}`;
  }
  const messages = request.messages as unknown[];
  for (const [index, message] of messages.entries()) {
    const role =
      typeof message === 'object' && message !== null && 'role' in message
        ? message.role
        : undefined;
    if (role !== 'user' && role !== 'assistant') {
      return `request.messages.${index}.role: Invalid discriminator value. Expected 'user' | 'assistant'`;
    }
  }
  return undefined;
}

function badRequest(res: ServerResponse, message: string): void {
  sendJson(res, 'lmstudio', 400, lmstudioError('invalid_request_error', message));
}

async function handleMessages(
  state: EmulatorState,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const fault = state.faults.take();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    // [inferred] the JSON parser's own message.
    return badRequest(res, error instanceof Error ? error.message : String(error));
  }
  const issue = schemaIssue(parsed);
  if (issue) return badRequest(res, issue);
  const body = { ...(parsed as Record<string, unknown>) };
  const requested = String(body.model);
  const model = state.local.models.find(requested);
  if (!model) {
    // The OpenAI endpoints' wording (gpt-researcher#1556, qwen-code#10065); its status here [inferred].
    const examples = state.local.models.models
      .slice(0, 3)
      .map((candidate) => candidate.name)
      .join(', ');
    return badRequest(
      res,
      `Invalid model identifier "${requested}". Please specify a valid downloaded model (e.g., ${examples}).`,
    );
  }
  const stream = body.stream === true;
  record.stream = stream;
  if (state.loading && !(await state.local.loadGate.wait(signal))) return;
  if (!(await state.local.models.ensureLoaded(model, signal))) return;
  const rendered = renderPrompt(body, { strictTemplate: false, strictRoles: false });
  const tokens = rendered.kind === 'ok' ? tokenize(rendered.text) : [];
  record.promptTokens = tokens.length;
  const window = model.contextLength ?? state.window;
  // The engine refuses a prompt it cannot keep whole: a 500 even when streaming (claudette#740).
  if (tokens.length >= window) {
    const message = lmstudioContextMessage(tokens.length, window, state.local.lmstudioOldWording);
    return sendJson(res, 'lmstudio', 500, lmstudioError('api_error', message));
  }
  const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : window;
  await runCompletion(
    state,
    res,
    { body, tokens, stream, maxTokens, model: requested, record, window },
    fault,
    signal,
  );
}

export async function handleLmstudioRequest(
  state: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const url = req.url ?? '/';
  const path = new URL(url, 'http://emulator').pathname;
  const method = req.method ?? 'GET';
  if (state.apiKey !== undefined && !hasKey(req, state.apiKey)) {
    // The 401 body is undocumented [inferred]: Anthropic's authentication_error.
    const message =
      "Invalid or missing API token: send it as 'Authorization: Bearer <token>' or 'x-api-key: <token>'";
    return sendJson(res, 'lmstudio', 401, lmstudioError('authentication_error', message));
  }
  switch (`${method} ${path}`) {
    case 'GET /api/v1/models':
      return sendJson(res, 'lmstudio', 200, lmstudioV1ModelsBody(state));
    case 'GET /api/v0/models':
      return sendJson(res, 'lmstudio', 200, lmstudioV0ModelsBody(state));
    case 'GET /v1/models':
      return sendJson(res, 'lmstudio', 200, lmstudioOpenAiModelsBody(state));
    case 'POST /v1/messages':
      return handleMessages(state, res, raw, record, signal);
  }
  const id = /^\/api\/v0\/models\/(.+)$/.exec(path)?.[1];
  if (id !== undefined && method === 'GET') {
    const model = state.local.models.find(decodeURIComponent(id));
    if (model) return sendJson(res, 'lmstudio', 200, lmstudioV0ModelBody(state, model));
    // [inferred] the body of an unknown id.
    return sendJson(res, 'lmstudio', 404, { error: `Model "${decodeURIComponent(id)}" not found` });
  }
  // lmstudio-bug-tracker#618 (raw capture): 200, the method and the URL with its query; the log line
  // alone adds "Returning 200 anyway".
  sendJson(res, 'lmstudio', 200, { error: `Unexpected endpoint or method. (${method} ${url})` });
}
