import type { Diagnostics } from '../diagnostics.js';
import type { BackendKind } from '../kinds.js';
import type { BackendError } from './backend-errors.js';
import type { RequestLog, RequestLogLine } from './log.js';
import type { PrefixTracker } from './prefix-stability.js';
import type { ToolListCache } from './tool-list.js';
import type { TruncationGuard } from './truncation-guard.js';
import type { Upstream } from './upstream.js';

/** One job's (or one `localagents proxy`'s) backend, as the shim needs it. */
export interface RouteConfig {
  /** e.g. http://127.0.0.1:8080 (no trailing /v1) */
  backendUrl: string;
  backend: BackendKind;
  /** What the backend serves; model names it does not serve are mapped to this. */
  servedId: string;
  /** Every id the backend serves (names in this list are left alone). */
  servedIds?: string[];
  /** The job's window: for clamping and for translating 'Context size has been exceeded.' */
  contextTokens?: number;
  /** Sent as Authorization: Bearer; never logged. */
  apiKey?: string;
  /** Named in 401 translations. */
  apiKeyEnv?: string;
  /**
   * Where the user configures the key, for the 401 hint when no `apiKeyEnv` is set: a models.yaml endpoint's
   * `api_key_env` (default), or `localagents proxy --base-url`'s `--api-key-env` flag.
   */
  apiKeyFrom?: 'endpoint' | 'proxy-flag';
  endpointName?: string;
  /** requests.jsonl (+ requests_full.jsonl when dumpFullRequests) go here. */
  logDir?: string;
  dumpFullRequests?: boolean;
  /** Silence on an open stream after which the shim sends `event: ping` (default 15000); 0: no pings. */
  keepaliveMs?: number;
  /** Told how each backend request went: a job ends early on what retries cannot fix (run-job.ts). */
  watch?: (event: RouteEvent) => void;
}

/** What became of one request to the backend, as the shim saw it. */
export type RouteEvent =
  | { kind: 'answered' }
  /** The backend answered an error, as classified; `message` is what the client was told. */
  | { kind: 'error'; error: BackendError; message: string }
  /** No connection (refused, unreachable, timed out): `message` names the endpoint and its URL. */
  | { kind: 'unreachable'; message: string };

/**
 * What went through a route, counted as each request ends (the same lines requests.jsonl gets): the job's
 * figures are read from here, the file stays the record for people and tools.
 */
export interface RouteStats {
  requests: number;
  /** Answered with a status of 400 or more (after translation). */
  failedRequests: number;
  /** Prompt tokens the backend reported, cached ones included. */
  promptTokens: number;
  cachedTokens: number;
  /** Answers whose usage had a cache figure: none means the backend does not report its cache (Ollama). */
  cacheReports: number;
  outputTokens: number;
  /** Requests in which at least one system message was folded. */
  folds: number;
  /** How often each rewrite was applied (requests.jsonl `rewrites`). */
  rewrites: Record<string, number>;
  /** Non-compaction prompts that extended the previous prompt of their conversation, of those checked. */
  prefixStable: number;
  prefixChecked: number;
  /** Checked prompts that changed an earlier part of their conversation (a KV-cache break). */
  prefixBreaks: number;
  errorsTranslated: number;
}

/** The live state behind a ShimRoute. */
export interface RouteRuntime {
  config: RouteConfig;
  upstream: Upstream;
  log: RequestLog | undefined;
  tracker: PrefixTracker;
  /** The last tool list the route forwarded, parsed once for every request that sends it again. */
  toolLists: ToolListCache;
  /** A backend that cuts oversize prompts silently (Ollama): its prompts are sized and its counts checked. */
  guard: TruncationGuard | undefined;
  stats: RouteStats;
  /** Called once a request has gone to the backend: the shim's deferred work can run while the backend works. */
  whileBackendWorks: () => void;
  keepaliveMs: number;
  diagnostics: Diagnostics;
  /** Told about every backend error the route translated (ShimOptions.onBackendError). */
  onBackendError: (error: BackendError) => void;
  /** Exchanges whose client is still connected: each is abandoned (backend request, client response) on close. */
  open: Set<{ abandon(): void }>;
  inflight: Set<Promise<void>>;
  seq: number;
}

export const DEFAULT_KEEPALIVE_MS = 15_000;

export function emptyStats(): RouteStats {
  return {
    requests: 0,
    failedRequests: 0,
    promptTokens: 0,
    cachedTokens: 0,
    cacheReports: 0,
    outputTokens: 0,
    folds: 0,
    rewrites: {},
    prefixStable: 0,
    prefixChecked: 0,
    prefixBreaks: 0,
    errorsTranslated: 0,
  };
}

/** A copy that the caller may keep: later requests do not change it. */
export function copyStats(stats: RouteStats): RouteStats {
  return { ...stats, rewrites: { ...stats.rewrites } };
}

export function countInStats(stats: RouteStats, line: RequestLogLine): void {
  stats.requests++;
  if (line.status >= 400) stats.failedRequests++;
  if (line.usage) {
    const cached = line.usage.cache_read_input_tokens;
    stats.promptTokens += line.usage.input_tokens + (cached ?? 0);
    stats.cachedTokens += cached ?? 0;
    if (cached !== null) stats.cacheReports++;
    stats.outputTokens += line.usage.output_tokens;
  }
  if (line.rewrites.includes('fold_system')) stats.folds++;
  for (const rewrite of line.rewrites) stats.rewrites[rewrite] = (stats.rewrites[rewrite] ?? 0) + 1;
  if (line.prefix?.kind === 'extends' || line.prefix?.kind === 'changed') {
    stats.prefixChecked++;
    if (line.prefix.kind === 'extends') stats.prefixStable++;
    else stats.prefixBreaks++;
  }
  if (line.error) stats.errorsTranslated++;
}
