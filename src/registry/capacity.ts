import { SUGGESTED_CONTEXT_TOKENS } from './config-defaults.js';
import type { EndpointProbe } from './probe.js';

/**
 * How many jobs an endpoint takes at once, from what its probe says (docs/scaling.md): llama.cpp's slots, LM
 * Studio's parallel predictions, models.yaml's `max_concurrent` where the server tells nothing (Ollama) or as the
 * user's cap below what it tells. vLLM batches whatever it is sent and says how many requests wait: jobs are
 * admitted while none do. Pure.
 */
export interface Capacity {
  /** Jobs at once; Infinity: as many as the server admits while nothing waits (vLLM, an undetected server). */
  slots: number;
  /** Requests the server is working on now, anyone's; undefined when it does not say. */
  busy: number | undefined;
  /** Requests waiting in the server's own queue (vLLM): no job is admitted while any wait. */
  waiting: number | undefined;
  /**
   * A llama.cpp KV cache proven unified is shared by every slot: n jobs told the whole window would evict each
   * other's prompts, so each is given this share of it.
   */
  windowPerJob?: number;
  /** Where `slots` came from, for the reason a queued job gives. */
  source: 'slots' | 'backend' | 'max_concurrent' | 'default' | 'unbounded';
}

export function capacityOf(probe: EndpointProbe, maxConcurrent: number | undefined): Capacity {
  const cap = maxConcurrent ?? Number.POSITIVE_INFINITY;
  if (probe.slots) {
    const busy = probe.slots.source === 'props' ? undefined : probe.slots.busy;
    const capacity: Capacity = {
      slots: Math.min(probe.slots.total, cap),
      busy,
      waiting: undefined,
      source:
        maxConcurrent !== undefined && maxConcurrent < probe.slots.total
          ? 'max_concurrent'
          : 'slots',
    };
    if (probe.kvUnified) {
      // Each unified slot may use the whole cache: its window is the cache. Shares of at least the suggested
      // window, as many as the slots allow (or exactly max_concurrent when the user says so).
      const cache = Math.max(0, ...Object.values(probe.context));
      const jobs = Math.max(
        1,
        Math.min(capacity.slots, maxConcurrent ?? Math.floor(cache / SUGGESTED_CONTEXT_TOKENS)),
      );
      capacity.slots = jobs;
      if (cache > 0) capacity.windowPerJob = Math.floor(cache / jobs);
    }
    return capacity;
  }
  if (probe.capacity)
    return {
      slots: probe.capacity.total,
      busy: undefined,
      waiting: undefined,
      source:
        probe.capacity.source === 'config'
          ? 'max_concurrent'
          : probe.capacity.source === 'backend'
            ? 'backend'
            : 'default',
    };
  return {
    slots: cap,
    busy: probe.vllm?.running,
    waiting: probe.vllm?.waiting,
    source: maxConcurrent === undefined ? 'unbounded' : 'max_concurrent',
  };
}

/**
 * Free slots now: neither a lease (a job of any localagents process, from its start to its end) nor a request
 * of someone else's holds them. `ownInflight` is what this process's jobs have open on the endpoint: the rest of
 * what the server reports busy is other clients' (another process's in-flight request counts twice, briefly: it
 * errs towards waiting). Infinity when the server sets no bound and nothing waits in its queue.
 */
export function freeSlots(capacity: Capacity, leases: number, ownInflight: number): number {
  if ((capacity.waiting ?? 0) > 0) return 0;
  const others = Math.max(0, (capacity.busy ?? 0) - ownInflight);
  if (capacity.slots === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  return Math.max(0, capacity.slots - leases - others);
}
