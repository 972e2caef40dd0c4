/**
 * Ollama's HTTP surface (ollama-lmstudio.md §1–§5; server/routes.go GenerateRoutes): `GET /`, version,
 * tags, ps, show, /v1/models and /v1/messages; gin's plain-text 404 and 405 for the rest (no
 * count_tokens, no /metrics, no /health); the Host check of a loopback listener; no API key. A request
 * for an installed model that is not loaded loads it; the prompt is truncated silently when it is too
 * long (ollama-truncation.ts), and the model, having lost its instructions, answers TRUNCATED_PROMPT_REPLY.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { runCompletion } from './completion.js';
import { ollamaError } from './errors.js';
import { goDecode, goKind } from './go-json.js';
import { sendGinJson, sendJson, sendText } from './http.js';
import {
  ollamaOpenAiModelBody,
  ollamaOpenAiModelsBody,
  ollamaPsBody,
  ollamaShowBody,
  ollamaTagsBody,
} from './ollama-bodies.js';
import { ollamaDisplayName } from './ollama-names.js';
import { estimateInputTokens, parseOllamaRequest } from './ollama-prompt.js';
import { ollamaPrompt } from './ollama-truncation.js';
import { TRUNCATED_PROMPT_REPLY } from './script.js';
import type { EmulatorState, RecordedRequest } from './state.js';

/** The routes this emulator answers, with their methods (for gin's 405). */
const METHODS: Readonly<Record<string, readonly string[]>> = {
  '/': ['GET', 'HEAD'],
  '/api/version': ['GET', 'HEAD'],
  '/api/status': ['GET'],
  '/api/tags': ['GET', 'HEAD'],
  '/api/ps': ['GET'],
  '/api/show': ['POST'],
  '/v1/models': ['GET'],
  '/v1/messages': ['POST'],
};

function isLoopback(address: string | undefined): boolean {
  return address !== undefined && /^(127\.|::1$|::ffff:127\.)/.test(address);
}

/**
 * allowedHostsMiddleware: on a loopback listener, a Host that is not a loopback, private or
 * unspecified address, empty, `localhost`, a `.localhost`/`.local`/`.internal` name or this
 * machine's name gets a bare 403.
 */
function hostAllowed(req: IncomingMessage): boolean {
  if (!isLoopback(req.socket.localAddress)) return true;
  const header = req.headers.host ?? '';
  const host =
    (header.startsWith('[')
      ? header.slice(1, header.indexOf(']'))
      : header.split(':')[0]
    )?.toLowerCase() ?? '';
  if (/^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|0\.0\.0\.0$)/.test(host)) return true;
  if (host === '::1' || host === '::' || /^f[cd][0-9a-f]{0,2}:/.test(host)) return true;
  if (host === '' || host === 'localhost' || host === hostname().toLowerCase()) return true;
  return ['.localhost', '.local', '.internal'].some((suffix) => host.endsWith(suffix));
}

function handleShow(state: EmulatorState, res: ServerResponse, raw: string): void {
  const decoded = goDecode(raw);
  if (decoded.kind === 'error') {
    const error = decoded.message === 'EOF' ? 'missing request body' : decoded.message;
    return sendGinJson(res, 400, { error });
  }
  const body = decoded.value;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    const error = `json: cannot unmarshal ${goKind(body)} into Go value of type api.ShowRequest`;
    return sendGinJson(res, 400, { error });
  }
  const field = (key: string): string => {
    const value = (body as Record<string, unknown>)[key];
    return typeof value === 'string' ? value : '';
  };
  const name = field('model') || field('name');
  if (name === '') return sendGinJson(res, 400, { error: 'model is required' });
  const model = state.local.models.find(name);
  // Here the name is normalised (`x` → `x:latest`), unlike on /v1/messages.
  if (!model) {
    return sendGinJson(res, 404, { error: `model '${ollamaDisplayName(name)}' not found` });
  }
  sendGinJson(res, 200, ollamaShowBody(model, state.local));
}

async function handleMessages(
  state: EmulatorState,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const fault = state.faults.take();
  const parsed = parseOllamaRequest(raw);
  // The middleware's own 400s go out through gin's c.JSON.
  if (parsed.kind === 'error') return sendGinJson(res, 400, ollamaError(400, parsed.message));
  const { request } = parsed;
  record.stream = request.stream;
  if (request.stream) {
    // Set before ChatHandler runs, so its JSON errors carry them too. A client that asked for
    // `Connection: close` gets it anyway: net/http closes after the reply.
    res.setHeader('Cache-Control', 'no-cache');
    if (res.shouldKeepAlive) res.setHeader('Connection', 'keep-alive');
  }
  const model = state.local.models.find(request.model);
  if (!model) {
    return sendJson(res, 'ollama', 404, ollamaError(404, `model '${request.model}' not found`));
  }
  if (state.loading && !(await state.local.loadGate.wait(signal))) return;
  if (!(await state.local.models.ensureLoaded(model, signal))) return;
  const window = model.contextLength ?? state.window;
  const prompt = ollamaPrompt(request.messages, request.body, {
    numCtx: window,
    contextShift: state.local.contextShift,
    version: state.local.ollamaVersion,
    strictTemplate: state.strictTemplate,
  });
  if (prompt.kind === 'error') {
    if (prompt.fullTokens !== undefined) record.promptTokens = prompt.fullTokens;
    return sendJson(res, 'ollama', prompt.status, ollamaError(prompt.status, prompt.message));
  }
  record.promptTokens = prompt.fullTokens;
  if (prompt.truncated) record.truncatedTo = prompt.tokens.length;
  await runCompletion(
    state,
    res,
    {
      body: request.body,
      tokens: prompt.tokens,
      stream: request.stream,
      maxTokens: request.maxTokens,
      model: request.model,
      record,
      window,
      estimatedInputTokens: estimateInputTokens(request.body),
      ...(prompt.truncated ? { reply: { kind: 'truncated', ...TRUNCATED_PROMPT_REPLY } } : {}),
    },
    fault,
    signal,
  );
  state.local.models.touch(model);
}

function handleModel(state: EmulatorState, res: ServerResponse, id: string): void {
  const model = state.local.models.find(id);
  if (model) return sendJson(res, 'ollama', 200, ollamaOpenAiModelBody(model, id));
  // ShowHandler's 404 through the OpenAI writer.
  const error = {
    message: `model '${ollamaDisplayName(id)}' not found`,
    type: 'not_found_error',
    param: null,
    code: null,
  };
  sendJson(res, 'ollama', 404, { error });
}

export async function handleOllamaRequest(
  state: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  raw: string,
  record: RecordedRequest,
  signal: AbortSignal,
): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://emulator').pathname;
  const method = req.method ?? 'GET';
  if (!hostAllowed(req)) return sendText(res, 'ollama', 403, '');
  const plain = { 'Content-Type': 'text/plain; charset=utf-8' };
  switch (`${method} ${path}`) {
    case 'GET /':
    case 'HEAD /':
      return sendText(res, 'ollama', 200, 'Ollama is running', plain);
    case 'GET /api/version':
    case 'HEAD /api/version':
      return sendGinJson(res, 200, { version: state.local.ollamaVersion });
    case 'GET /api/status':
      return sendGinJson(res, 200, { cloud: { disabled: false, source: 'default' } });
    case 'GET /api/tags':
    case 'HEAD /api/tags':
      return sendGinJson(res, 200, ollamaTagsBody(state.local));
    case 'GET /api/ps':
      return sendGinJson(res, 200, ollamaPsBody(state.local));
    case 'POST /api/show':
      return handleShow(state, res, raw);
    case 'GET /v1/models':
      return sendJson(res, 'ollama', 200, ollamaOpenAiModelsBody(state.local));
    case 'POST /v1/messages':
      return handleMessages(state, res, raw, record, signal);
  }
  const model = /^\/v1\/models\/(.+)$/.exec(path)?.[1];
  if (model !== undefined && method === 'GET') {
    return handleModel(state, res, decodeURIComponent(model));
  }
  const known = METHODS[path] ?? (model !== undefined ? ['GET'] : undefined);
  // gin with HandleMethodNotAllowed: a known path with another method is a 405.
  if (known)
    return sendText(res, 'ollama', 405, '405 method not allowed', { 'Content-Type': 'text/plain' });
  sendText(res, 'ollama', 404, '404 page not found', { 'Content-Type': 'text/plain' });
}
