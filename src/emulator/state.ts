/** The emulator's resolved configuration and mutable state, shared by every personality's routes. */
import type { FaultQueue, HoldGate } from './faults.js';
import type { LlamaIdentity } from './llamacpp-bodies.js';
import type { LocalModels } from './local-models.js';
import type { Dialect } from './message-format.js';
import type { ServerStats } from './metrics.js';
import type { ScriptTurn } from './script.js';
import type { SlotPool } from './slots.js';

export interface Latency {
  prefillMsPerToken: number;
  decodeTokensPerSecond: number;
  ttfbMs: number;
}

export interface RecordedRequest {
  id: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  rawBody: string;
  status: number;
  receivedAt: number;
  /** When its answer ended or its client left (Date.now()); undefined while it is open. */
  finishedAt?: number;
  /** The rendered prompt's tokens, before any truncation. */
  promptTokens?: number;
  /** Ollama: the tokens kept after its silent truncation (only when it truncated). */
  truncatedTo?: number;
  cachedTokens?: number;
  stream?: boolean;
}

/** What only Ollama and LM Studio have: models on disk that load on demand, and their knobs. */
export interface LocalBackend {
  models: LocalModels;
  /** The trained length: Ollama `<arch>.context_length`, LM Studio `max_context_length`. */
  nCtxTrain: number;
  /** Ollama: the Modelfile `PARAMETER num_ctx` shown by /api/show. */
  numCtxParameter: number | undefined;
  /** Ollama: false is the deepseek2 family (an oversize prompt gets a 400 instead of truncation). */
  contextShift: boolean;
  ollamaVersion: string;
  /** LM Studio: the 0.3.x overflow wording. */
  lmstudioOldWording: boolean;
  /** Where /v1/messages requests wait while setLoading(true) holds the models in the loading state. */
  loadGate: HoldGate;
}

export interface EmulatorState {
  backend: Dialect;
  /** llama: per-slot window; vLLM: max_model_len; Ollama / LM Studio: the window of a model loaded at start. */
  window: number;
  metrics: boolean;
  /** llama: /slots answers (false = `--no-slots`: 501, and /props says endpoint_slots false). */
  slotsEndpoint: boolean;
  apiKey: string | undefined;
  strictTemplate: boolean;
  identity: LlamaIdentity;
  servedNames: string[];
  loras: { name: string; base?: string }[];
  /** vLLM: started with --enable-auto-tool-choice (else tool requests get 400). */
  toolChoice: boolean;
  vllmContextWording: 'at-least' | 'too-large';
  /** vLLM: the status of that answer on /v1/messages (500 internal_error in newer releases). */
  vllmContextStatus: 400 | 500;
  latency: Latency;
  script: readonly ScriptTurn[];
  plainReply: ScriptTurn | undefined;
  pool: SlotPool;
  faults: FaultQueue;
  holds: HoldGate;
  stats: ServerStats;
  loading: boolean;
  local: LocalBackend;
}
