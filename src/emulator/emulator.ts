/**
 * The backend emulator: a real `node:http` server that behaves like llama-server b10108, vLLM, Ollama
 * or LM Studio (fixtures/llama.cpp, reference/backends.md, reference/ollama-lmstudio.md), with a
 * scripted model, KV/slot accounting, latency knobs and faults on demand. Used in-process by tests
 * (`startEmulator`) and by `localagents emulate`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { LocalAgentsError } from '../errors.js';
import { createFaultQueue, createHoldGate, FaultRequestSchema, type Fault } from './faults.js';
import { readBody, sendJson } from './http.js';
import { llamaIdentity } from './llamacpp-bodies.js';
import { handleLlamaRequest } from './llamacpp-routes.js';
import { lmstudioNamesMatch } from './lmstudio-bodies.js';
import { handleLmstudioRequest } from './lmstudio-routes.js';
import { createLocalModels } from './local-models.js';
import type { Dialect } from './message-format.js';
import { createStats, type SpeculativeConfig } from './metrics.js';
import { ollamaNamesMatch } from './ollama-names.js';
import { handleOllamaRequest } from './ollama-routes.js';
import { createRequestLog, parseJsonOrUndefined } from './request-log.js';
import { DEFAULT_SCRIPT, type ScriptTurn } from './script.js';
import { computeSlotWindow, createSlotPool, type SlotWindow } from './slots.js';
import type { EmulatorState, LocalBackend, RecordedRequest } from './state.js';
import { handleVllmRequest } from './vllm-routes.js';

export interface EmulatorOptions {
  /** The server played: 'llama.cpp' (default), 'vllm', 'ollama' or 'lmstudio'. */
  backend?: Dialect;
  host?: string;
  port?: number;
  /**
   * llama: total -c (default 32768); vllm: max_model_len (default 32768); ollama: the num_ctx of a
   * loaded model, /api/ps `context_length` (default numCtxParameter, else 32768); lmstudio: a loaded
   * model's `config.context_length` / v0 `loaded_context_length` (default 32768). Ollama and LM Studio
   * cap it at nCtxTrain.
   */
  nCtx?: number;
  /**
   * llama: caps the per-slot window (default 32768); ollama: `<arch>.context_length` in /api/show and
   * `details.context_length` in /api/tags; lmstudio: `max_context_length` (both default 262144).
   */
  nCtxTrain?: number;
  /**
   * llama --parallel (undefined = auto: 4 slots, unified KV); vllm: ignored; ollama: OLLAMA_NUM_PARALLEL
   * (default 1); lmstudio: `config.parallel` (default 4). Further requests wait, with no error.
   */
  parallel?: number;
  kvUnified?: boolean;
  /** llama: /metrics answers 501 unless true; vllm: always on; ollama, lmstudio: no /metrics. */
  metrics?: boolean;
  /** llama: false is llama-server's `--no-slots` (/slots answers 501); default true; others: ignored. */
  slots?: boolean;
  /**
   * llama and vllm: required on guarded routes; lmstudio: "Require Authentication" (every route,
   * `x-api-key` or `Authorization: Bearer`); ollama: ignored, as Ollama ignores keys.
   */
  apiKey?: string;
  /**
   * Default true for llama.cpp, false otherwise. ollama: true is the older qwen3.8 renderer (a
   * mid-conversation system message gets 500 `system message must be at the beginning`). LM Studio
   * always rejects such a message (400 discriminator error), whatever this says.
   */
  strictTemplate?: boolean;
  /**
   * llama: --alias (id = smallest); vllm: served names (default ['qwen3-coder']); ollama: the installed
   * (pulled) names, newest first (default ['qwen3-coder:30b']); lmstudio: the downloaded model keys
   * (default ['qwen/qwen3-coder-30b']).
   */
  servedNames?: string[];
  /**
   * ollama, lmstudio: which of servedNames are loaded at start (default all). The others are absent
   * from /api/ps (Ollama), or `loaded_instances: []` / `state: "not-loaded"` (LM Studio).
   */
  loadedNames?: string[];
  loras?: { name: string; base?: string }[];
  /**
   * vllm: `--enable-auto-tool-choice` (with a tool parser). Default false, like vLLM: every request
   * with `tools` (all of Claude Code's) gets the 400 "auto" tool choice error.
   */
  toolChoice?: boolean;
  /** vllm: wording of the prompt + max_tokens > max_model_len 400 (default 'at-least'). */
  vllmContextWording?: 'at-least' | 'too-large';
  /** vllm: 500 answers it as newer vLLM's Anthropic router does, `internal_error` (default 400). */
  vllmContextStatus?: 400 | 500;
  /** vllm: started with --speculative-config; /metrics then has the spec_decode counters. */
  speculative?: SpeculativeConfig;
  /** ollama: the Modelfile's `PARAMETER num_ctx`, a `num_ctx` line in /api/show `parameters`. */
  numCtxParameter?: number;
  /**
   * ollama: context shift (default true). false is the deepseek2 family: a prompt over num_ctx − 1
   * tokens gets 400 `the prompt is longer than the context length …` instead of being truncated.
   */
  contextShift?: boolean;
  /** ollama: /api/version (default '0.32.15'); the truncation rule follows it (reference §2). */
  ollamaVersion?: string;
  /** lmstudio: the 0.3.x overflow wording (`Trying to keep the first N tokens …`). */
  lmstudioOldWording?: boolean;
  /**
   * ollama, lmstudio: how long a just-in-time load takes (default 0): a /v1/messages request for an
   * installed model that is not loaded blocks that long, then the model is loaded with `jitContext`.
   */
  jitLoadMs?: number;
  /** ollama, lmstudio: the window a JIT-loaded model gets (default: nCtx for Ollama, 4096 for LM Studio). */
  jitContext?: number;
  script?: ScriptTurn[];
  /** The reply to requests without tools (default: a short text). */
  plainReply?: ScriptTurn;
  /**
   * Start in the loading state for N ms (llama 503; vllm refuses connections; ollama and lmstudio:
   * the loaded models are loading, /v1/messages waits).
   */
  loadingMs?: number;
  latency?: { prefillMsPerToken?: number; decodeTokensPerSecond?: number; ttfbMs?: number };
}

export interface Emulator {
  url: string;
  requests: RecordedRequest[];
  waitForRequest(
    predicate: (r: RecordedRequest) => boolean,
    timeoutMs?: number,
  ): Promise<RecordedRequest>;
  /** Replaces the pending faults (same as POST /_emulator/faults); they apply to the next /v1/messages requests in order. */
  injectFaults(faults: Fault[]): void;
  /** Lets every request a `hold` fault keeps go on (same as POST /_emulator/release); returns how many. */
  releaseHolds(): number;
  /** How many requests a `hold` fault keeps right now. */
  heldRequests(): number;
  /**
   * llama.cpp: 503 "Loading model" everywhere; vLLM: connections refused; Ollama and LM Studio: the
   * loaded models are (re)loading, /v1/messages requests wait until setLoading(false).
   */
  setLoading(loading: boolean): void;
  close(): Promise<void>;
}

const DEFAULT_SERVED: Readonly<Record<Dialect, readonly string[]>> = {
  'llama.cpp': [],
  vllm: ['qwen3-coder'],
  ollama: ['qwen3-coder:30b'],
  lmstudio: ['qwen/qwen3-coder-30b'],
};

function slotWindow(
  backend: Dialect,
  options: EmulatorOptions,
  nCtx: number,
  nCtxTrain: number,
): SlotWindow {
  switch (backend) {
    case 'llama.cpp':
      return computeSlotWindow({
        nCtx,
        nCtxTrain,
        parallel: options.parallel,
        kvUnified: options.kvUnified,
      });
    case 'vllm':
      return { slots: 256, unified: false, nCtxSlot: nCtx, totalCells: nCtx * 256 };
    case 'ollama':
    case 'lmstudio': {
      // llama-server runs with -c num_ctx × parallel: each slot has the whole window.
      const slots = Math.max(1, options.parallel ?? (backend === 'ollama' ? 1 : 4));
      const window = Math.min(nCtx, nCtxTrain);
      return { slots, unified: false, nCtxSlot: window, totalCells: window * slots };
    }
  }
}

function resolveLocal(
  backend: Dialect,
  options: EmulatorOptions,
  servedNames: string[],
  window: number,
  nCtxTrain: number,
): LocalBackend {
  const isLocal = backend === 'ollama' || backend === 'lmstudio';
  const jitContext = options.jitContext ?? (backend === 'lmstudio' ? 4096 : window);
  return {
    models: createLocalModels({
      names: isLocal ? servedNames : [],
      loaded: isLocal ? (options.loadedNames ?? servedNames) : [],
      window,
      jitWindow: Math.min(jitContext, nCtxTrain),
      jitLoadMs: options.jitLoadMs ?? 0,
      matches: backend === 'ollama' ? ollamaNamesMatch : lmstudioNamesMatch,
      autoEvict: backend === 'lmstudio',
    }),
    nCtxTrain,
    numCtxParameter: options.numCtxParameter,
    contextShift: options.contextShift ?? true,
    ollamaVersion: options.ollamaVersion ?? '0.32.15',
    lmstudioOldWording: options.lmstudioOldWording ?? false,
    loadGate: createHoldGate(),
  };
}

function resolveState(options: EmulatorOptions): EmulatorState {
  const backend = options.backend ?? 'llama.cpp';
  const isLocal = backend === 'ollama' || backend === 'lmstudio';
  const fromModelfile = backend === 'ollama' ? options.numCtxParameter : undefined;
  const nCtx = options.nCtx ?? fromModelfile ?? 32768;
  const nCtxTrain = options.nCtxTrain ?? (isLocal ? 262144 : 32768);
  const window = slotWindow(backend, options, nCtx, nCtxTrain);
  const servedNames =
    backend === 'llama.cpp' ? [] : (options.servedNames ?? [...DEFAULT_SERVED[backend]]);
  const apiKey = backend === 'ollama' ? undefined : options.apiKey;
  return {
    backend,
    window: window.nCtxSlot,
    metrics: backend === 'vllm' || (backend === 'llama.cpp' && options.metrics === true),
    slotsEndpoint: options.slots ?? true,
    apiKey,
    strictTemplate: options.strictTemplate ?? backend === 'llama.cpp',
    identity: llamaIdentity(backend === 'llama.cpp' ? options.servedNames : undefined, nCtxTrain),
    servedNames,
    loras: options.loras ?? [],
    toolChoice: options.toolChoice ?? false,
    vllmContextWording: options.vllmContextWording ?? 'at-least',
    vllmContextStatus: options.vllmContextStatus ?? 400,
    latency: {
      prefillMsPerToken: options.latency?.prefillMsPerToken ?? 0,
      decodeTokensPerSecond: options.latency?.decodeTokensPerSecond ?? 0,
      ttfbMs: options.latency?.ttfbMs ?? 0,
    },
    script: options.script ?? DEFAULT_SCRIPT,
    plainReply: options.plainReply,
    pool: createSlotPool(window),
    faults: createFaultQueue(),
    holds: createHoldGate(),
    stats: createStats(backend === 'vllm' ? options.speculative : undefined),
    loading: (options.loadingMs ?? 0) > 0,
    local: resolveLocal(backend, options, servedNames, window.nCtxSlot, nCtxTrain),
  };
}

const ROUTES: Readonly<Record<Dialect, typeof handleLlamaRequest>> = {
  'llama.cpp': handleLlamaRequest,
  vllm: handleVllmRequest,
  ollama: handleOllamaRequest,
  lmstudio: handleLmstudioRequest,
};

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const state = resolveState(options);
  const host = options.host ?? '127.0.0.1';
  const log = createRequestLog();
  const sockets = new Set<Socket>();
  let closed = false;
  let loadingTimer: NodeJS.Timeout | undefined;

  const handleAdmin = (path: string, raw: string, res: ServerResponse): void => {
    if (path === '/_emulator/faults') {
      const parsed = FaultRequestSchema.safeParse(parseJsonOrUndefined(raw));
      if (!parsed.success) return sendJson(res, 'vllm', 400, { error: parsed.error.message });
      state.faults.set(parsed.data.faults);
      return sendJson(res, 'vllm', 200, { queued: state.faults.pending() });
    }
    if (path === '/_emulator/release') {
      return sendJson(res, 'vllm', 200, { released: state.holds.release() });
    }
    if (path === '/_emulator/loading') {
      const loading = parseJsonOrUndefined(raw);
      setLoading(
        typeof loading === 'object' &&
          loading !== null &&
          'loading' in loading &&
          loading.loading === true,
      );
      return sendJson(res, 'vllm', 200, { loading: state.loading });
    }
    sendJson(res, 'vllm', 404, { error: 'unknown emulator admin route' });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://emulator').pathname;
    if (path.startsWith('/_emulator/')) return handleAdmin(path, raw, res);
    const record = log.record(req, raw);
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
      record.status = res.statusCode;
      record.finishedAt = Date.now();
      log.changed();
    });
    await ROUTES[state.backend](state, req, res, raw, record, controller.signal);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent)
        sendJson(res, state.backend, 500, { error: { code: 500, message, type: 'server_error' } });
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const onError = (error: Error): void =>
        reject(
          new LocalAgentsError(
            'LISTEN_FAILED',
            `emulator cannot listen on ${host}:${port}: ${error.message}`,
            { cause: error },
          ),
        );
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        const address = server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });

  const port = await listen(options.port ?? 0);
  // vLLM binds but does not listen until the model is loaded: connections are refused meanwhile.
  const refuseWhileLoading = (): void => {
    if (state.backend === 'vllm' && server.listening) server.close();
  };
  const setLoading = (loading: boolean): void => {
    if (closed) return;
    clearTimeout(loadingTimer);
    state.loading = loading;
    if (loading) refuseWhileLoading();
    else if (state.backend === 'vllm' && !server.listening)
      void listen(port).catch(() => undefined);
    // Ollama and LM Studio: the requests that waited for the load go on.
    if (!loading) state.local.loadGate.release();
  };
  if (state.loading) {
    refuseWhileLoading();
    loadingTimer = setTimeout(() => setLoading(false), options.loadingMs);
  }

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    requests: log.requests,
    waitForRequest: (predicate, timeoutMs) => log.waitFor(predicate, timeoutMs),
    injectFaults: (faults) => state.faults.set(faults),
    releaseHolds: () => state.holds.release(),
    heldRequests: () => state.holds.held(),
    setLoading,
    close: async () => {
      if (closed) return;
      closed = true;
      clearTimeout(loadingTimer);
      for (const socket of sockets) socket.destroy();
      if (!server.listening) return;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
