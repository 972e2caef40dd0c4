/**
 * The backend emulator: a real `node:http` server that behaves like llama-server b10108 or vLLM
 * (fixtures/llama.cpp, reference/backends.md), with a scripted model, KV/slot accounting, latency
 * knobs and faults on demand. Used in-process by tests (`startEmulator`) and by `localagents emulate`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { LocalAgentsError } from '../errors.js';
import { createFaultQueue, createHoldGate, FaultRequestSchema, type Fault } from './faults.js';
import { readBody, sendJson } from './http.js';
import { llamaIdentity } from './llamacpp-bodies.js';
import { handleLlamaRequest } from './llamacpp-routes.js';
import type { Dialect } from './message-format.js';
import { createStats, type SpeculativeConfig } from './metrics.js';
import { createRequestLog, parseJsonOrUndefined } from './request-log.js';
import { DEFAULT_SCRIPT, type ScriptTurn } from './script.js';
import { computeSlotWindow, createSlotPool } from './slots.js';
import type { EmulatorState, RecordedRequest } from './state.js';
import { handleVllmRequest } from './vllm-routes.js';

export interface EmulatorOptions {
  backend?: Dialect;
  host?: string;
  port?: number;
  /** llama: total -c (default 32768); vllm: max_model_len (default 32768). */
  nCtx?: number;
  /** Caps the per-slot window like llama.cpp (default 32768). */
  nCtxTrain?: number;
  /** llama --parallel; undefined = auto (4 slots, unified KV); vllm: ignored. */
  parallel?: number;
  kvUnified?: boolean;
  /** llama: /metrics answers 501 unless true; vllm: always on. */
  metrics?: boolean;
  /** llama: false is llama-server's `--no-slots` (/slots answers 501); default true; vllm: ignored. */
  slots?: boolean;
  apiKey?: string;
  /** Default true for llama.cpp, false for vllm. */
  strictTemplate?: boolean;
  /** llama: --alias (id = smallest); vllm: served names (default ['qwen3-coder']). */
  servedNames?: string[];
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
  script?: ScriptTurn[];
  /** The reply to requests without tools (default: a short text). */
  plainReply?: ScriptTurn;
  /** Start in the loading state for N ms (llama 503; vllm refuses connections). */
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
  setLoading(loading: boolean): void;
  close(): Promise<void>;
}

function resolveState(options: EmulatorOptions): EmulatorState {
  const backend = options.backend ?? 'llama.cpp';
  const nCtx = options.nCtx ?? 32768;
  const nCtxTrain = options.nCtxTrain ?? 32768;
  const window =
    backend === 'llama.cpp'
      ? computeSlotWindow({
          nCtx,
          nCtxTrain,
          parallel: options.parallel,
          kvUnified: options.kvUnified,
        })
      : { slots: 256, unified: false, nCtxSlot: nCtx, totalCells: nCtx * 256 };
  const servedNames = backend === 'vllm' ? (options.servedNames ?? ['qwen3-coder']) : [];
  return {
    backend,
    window: window.nCtxSlot,
    metrics: backend === 'vllm' || options.metrics === true,
    slotsEndpoint: options.slots ?? true,
    apiKey: options.apiKey,
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
  };
}

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
      log.changed();
    });
    const route = state.backend === 'llama.cpp' ? handleLlamaRequest : handleVllmRequest;
    await route(state, req, res, raw, record, controller.signal);
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
