import type { Diagnostics } from '../diagnostics.js';
import { capacityOf, freeSlots, type Capacity } from '../registry/capacity.js';
import type { RegistrySnapshot } from '../registry/registry.js';
import {
  resolvePlacements,
  type NotReadyResolution,
  type ReadyResolution,
  type ResolveRequest,
} from '../registry/resolve.js';
import type { Lease, LeaseStore } from './leases.js';

/**
 * Jobs wait for a free slot (docs/scaling.md). A job is admitted on an endpoint that serves its model and has a
 * slot neither a lease nor someone else's request holds; otherwise it waits in a first-come queue per model (a
 * job naming an endpoint waits for that one only) and starts by itself on whichever endpoint frees first. Leases
 * are files shared by every localagents process (leases.ts), so several servers never over-book a box. Capacity
 * and load are read from a fresh probe each round: a slot freed by another process or another client is seen at
 * the next poll, one freed here at once.
 */
export interface Waiting {
  id: string;
  request: ResolveRequest;
  signal: AbortSignal;
  /** Told where the job stands whenever that changes: its place among its model's waiting jobs, and why. */
  onWait(position: number, reason: string): void;
}

export type Admission =
  | { kind: 'admitted'; resolution: ReadyResolution; lease: Lease }
  | { kind: 'cancelled' }
  /** Nothing has served the model for longer than the grace period: the job cannot start. */
  | { kind: 'not_ready'; resolution: NotReadyResolution };

export interface SchedulerDeps {
  snapshot(signal?: AbortSignal): Promise<RegistrySnapshot>;
  leases: LeaseStore;
  /** Requests this process's jobs have open on a backend now (the rest of its busy slots are others'). */
  inflight(baseUrl: string): number;
  /** How long a queued job waits for a model nothing serves before it is told so (defaults.backend_grace_s). */
  graceMs(): Promise<number>;
  /** How often the queue looks again while jobs wait (slots freed elsewhere show only in a probe). */
  pollMs?: number;
  diagnostics: Diagnostics;
}

export interface Scheduler {
  admit(waiting: Waiting): Promise<Admission>;
  /** A lease of this process was released: the queue looks again at once. */
  wake(): void;
  close(): void;
}

interface Entry {
  waiting: Waiting;
  settle(admission: Admission): void;
  /** When nothing was found serving its model (for the grace period); undefined while something does. */
  unservedSince: number | undefined;
  told: string;
}

const DEFAULT_POLL_MS = 1000;

/** Jobs of one model queue behind each other; other models' jobs do not wait for them. */
function queueKey(request: ResolveRequest): string {
  return `${request.model ?? ''}\n${request.endpoint ?? ''}`;
}

function describeBusy(option: ReadyResolution, capacity: Capacity, held: number): string {
  if ((capacity.waiting ?? 0) > 0)
    return `${option.endpoint.name} (${capacity.waiting ?? 0} requests waiting in its own queue)`;
  const slots = capacity.slots === Number.POSITIVE_INFINITY ? '∞' : String(capacity.slots);
  const busy = Math.max(held, capacity.busy ?? 0);
  return `${option.endpoint.name} (${Math.min(busy, capacity.slots)}/${slots} busy)`;
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const queue: Entry[] = [];
  const pollMs = deps.pollMs ?? DEFAULT_POLL_MS;
  let pumping = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const remove = (entry: Entry): void => {
    const index = queue.indexOf(entry);
    if (index >= 0) queue.splice(index, 1);
  };

  /** Puts one job on an endpoint with room (or ends its wait: settled), or says what it still waits for. */
  async function place(
    entry: Entry,
    snapshot: RegistrySnapshot,
    grace: number,
  ): Promise<{ settled: boolean; reason: string }> {
    const placements = resolvePlacements(
      snapshot.config,
      snapshot.endpoints,
      entry.waiting.request,
    );
    if (placements.kind !== 'ready') {
      entry.unservedSince ??= Date.now();
      if (Date.now() - entry.unservedSince >= grace) {
        remove(entry);
        entry.settle({ kind: 'not_ready', resolution: placements });
        return { settled: true, reason: '' };
      }
      return { settled: false, reason: `waiting for the model: ${placements.message}` };
    }
    entry.unservedSince = undefined;
    const maxConcurrent = (name: string): number | undefined =>
      snapshot.config.ok
        ? snapshot.config.config.endpoints.find((endpoint) => endpoint.name === name)
            ?.max_concurrent
        : undefined;
    const rated = await Promise.all(
      placements.options.map(async (option, order) => {
        const capacity = capacityOf(option.probe, maxConcurrent(option.endpoint.name));
        const held = await deps.leases.held(option.endpoint.base_url);
        const free = freeSlots(capacity, held, deps.inflight(option.endpoint.base_url));
        const preferred = option.menuEntry?.endpoint === option.endpoint.name ? 1 : 0;
        return { option, capacity, held, free, preferred, order };
      }),
    );
    // The menu's preferred endpoint first, then the most free slots, then config order.
    rated.sort((a, b) => b.preferred - a.preferred || b.free - a.free || a.order - b.order);
    for (const { option, capacity, free } of rated) {
      if (free <= 0) continue;
      const lease = await deps.leases.tryAcquire(
        option.endpoint.base_url,
        capacity.slots,
        entry.waiting.id,
      );
      if (!lease) continue;
      remove(entry);
      entry.settle({ kind: 'admitted', resolution: withShare(option, capacity), lease });
      return { settled: true, reason: '' };
    }
    const busy = rated.map(({ option, capacity, held }) => describeBusy(option, capacity, held));
    return { settled: false, reason: `waiting for a free slot on ${busy.join(', ')}` };
  }

  async function round(): Promise<void> {
    const live = queue.filter((entry) => !entry.waiting.signal.aborted);
    for (const entry of queue.filter((candidate) => candidate.waiting.signal.aborted)) {
      remove(entry);
      entry.settle({ kind: 'cancelled' });
    }
    if (live.length === 0) return;
    const snapshot = await deps.snapshot();
    const grace = await deps.graceMs();
    const blocked = new Map<string, string>();
    const positions = new Map<string, number>();
    for (const entry of live) {
      const key = queueKey(entry.waiting.request);
      let reason = blocked.get(key);
      if (reason === undefined) {
        const placed = await place(entry, snapshot, grace);
        if (placed.settled) continue;
        reason = placed.reason;
        blocked.set(key, reason);
      }
      const position = (positions.get(key) ?? 0) + 1;
      positions.set(key, position);
      const told = `${position}\n${reason}`;
      if (told !== entry.told) {
        entry.told = told;
        entry.waiting.onWait(position, reason);
      }
    }
  }

  async function pump(): Promise<void> {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    clearTimeout(timer);
    try {
      do {
        again = false;
        await round().catch((error: unknown) =>
          deps.diagnostics.warn(`scheduler: ${String(error)}`),
        );
      } while (again && !closed);
    } finally {
      pumping = false;
      if (queue.length > 0 && !closed) timer = setTimeout(() => void pump(), pollMs);
    }
  }

  return {
    admit(waiting) {
      if (waiting.signal.aborted) return Promise.resolve({ kind: 'cancelled' });
      return new Promise<Admission>((resolve) => {
        const entry: Entry = { waiting, settle: resolve, unservedSince: undefined, told: '' };
        queue.push(entry);
        // Cancelling a queued job is instant: it leaves the queue without waiting for the next round.
        waiting.signal.addEventListener(
          'abort',
          () => {
            if (!queue.includes(entry)) return;
            remove(entry);
            resolve({ kind: 'cancelled' });
            void pump();
          },
          { once: true },
        );
        void pump();
      });
    },
    wake: () => void pump(),
    close() {
      closed = true;
      clearTimeout(timer);
      for (const entry of queue.splice(0)) entry.settle({ kind: 'cancelled' });
    },
  };
}

/** On a shared (unified) KV cache, the job is told its share of the window, so it never evicts its neighbours. */
function withShare(option: ReadyResolution, capacity: Capacity): ReadyResolution {
  const share = capacity.windowPerJob;
  if (share === undefined || (option.contextTokens !== undefined && option.contextTokens <= share))
    return option;
  const shared: ReadyResolution = {
    ...option,
    contextTokens: share,
    warnings: [
      ...option.warnings,
      `${option.endpoint.name} shares one KV cache among its slots: this job gets ${share} tokens of it, so ${capacity.slots} jobs at once never evict each other's prompts (set max_concurrent to trade jobs for window)`,
    ],
  };
  if (option.apiKey !== undefined)
    Object.defineProperty(shared, 'apiKey', { value: option.apiKey, enumerable: false });
  return shared;
}
