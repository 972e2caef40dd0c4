/** The emulator's resolved configuration and mutable state, shared by both personalities' routes. */
import type { FaultQueue, HoldGate } from './faults.js';
import type { LlamaIdentity } from './llamacpp-bodies.js';
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
  promptTokens?: number;
  cachedTokens?: number;
  stream?: boolean;
}

export interface EmulatorState {
  backend: Dialect;
  /** llama: per-slot window; vLLM: max_model_len. */
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
}
