import { formatConfigIssue } from '../registry/config-messages.js';
import type { EndpointProbe } from '../registry/probe.js';
import type { Registry } from '../registry/registry.js';
import { redactUrl } from '../redact.js';

/** One endpoint at one probe, as the page shows it (listed field by field: the API key never leaves). */
export interface EndpointView {
  name: string;
  base_url: string;
  backend: string;
  up: boolean;
  status: string;
  error: string | null;
  models: string[];
  /** Per served id, the per-request window. */
  context: Record<string, number>;
  slots: { total: number; busy: number; free: number } | null;
  /** vLLM: the KV cache in use, 0..1, and requests running and waiting. */
  kv_usage: number | null;
  running: number | null;
  waiting: number | null;
}

export interface EndpointsSample {
  /** Milliseconds since the epoch. */
  at: number;
  endpoints: EndpointView[];
  /** models.yaml's errors (nothing is probed then) and warnings, each with its fix. */
  config_problems: string[];
}

export interface EndpointsFeed {
  /** The samples kept, oldest first (the page's busy/free-over-time charts start from these). */
  history(): EndpointsSample[];
  subscribe(listener: (sample: EndpointsSample) => void): () => void;
  close(): void;
}

/** Kept samples: at the default interval, the last ten minutes. */
const HISTORY = 300;

export function endpointView(probe: EndpointProbe): EndpointView {
  return {
    name: probe.name,
    base_url: redactUrl(probe.base_url),
    backend: probe.backend,
    up: probe.up,
    status: probe.status,
    error: probe.error ?? null,
    models: probe.models,
    context: probe.context,
    slots: probe.slots
      ? { total: probe.slots.total, busy: probe.slots.busy, free: probe.slots.free }
      : probe.capacity
        ? { total: probe.capacity.total, busy: 0, free: probe.capacity.total }
        : null,
    kv_usage: probe.vllm?.kvCacheUsage ?? null,
    running: probe.vllm?.running ?? null,
    waiting: probe.vllm?.waiting ?? null,
  };
}

/**
 * The registry probed every `intervalMs` while anyone watches (and not at all otherwise): each endpoint's
 * state, served ids, windows, slots and KV use over time. A probe never overlaps the previous one.
 */
export function createEndpointsFeed(registry: Registry, intervalMs: number): EndpointsFeed {
  const samples: EndpointsSample[] = [];
  const listeners = new Set<(sample: EndpointsSample) => void>();
  let timer: NodeJS.Timeout | undefined;
  let probing: AbortController | undefined;
  let closed = false;

  const probe = async (): Promise<void> => {
    timer = undefined;
    if (closed || listeners.size === 0) return;
    probing = new AbortController();
    const snapshot = await registry.snapshot(probing.signal).catch(() => undefined);
    probing = undefined;
    if (closed) return;
    if (snapshot) {
      const { config } = snapshot;
      const sample: EndpointsSample = {
        at: Date.now(),
        endpoints: snapshot.endpoints.map(endpointView),
        config_problems: [...(config.ok ? [] : config.issues), ...config.warnings].map(
          formatConfigIssue,
        ),
      };
      samples.push(sample);
      if (samples.length > HISTORY) samples.shift();
      for (const listener of listeners) listener(sample);
    }
    schedule(intervalMs);
  };

  const schedule = (delay: number): void => {
    if (timer || probing || closed || listeners.size === 0) return;
    timer = setTimeout(() => void probe(), delay);
  };

  return {
    history: () => [...samples],
    subscribe(listener) {
      listeners.add(listener);
      schedule(0);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer) {
          clearTimeout(timer);
          timer = undefined;
        }
      };
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      probing?.abort();
      listeners.clear();
    },
  };
}
