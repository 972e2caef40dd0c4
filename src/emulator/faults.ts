/**
 * Faults on demand: a FIFO of faults, each applying to the next `count` (default 1) `/v1/messages`
 * requests. Set by `injectFaults()` or `POST /_emulator/faults {"faults": [...]}`, which replace any
 * faults still pending (so `[]` clears them). A `hold` keeps its requests unanswered until the test says
 * so (`releaseHolds()` or `POST /_emulator/release`): a hang that ends when the test decides, not a timer.
 */
import { z } from 'zod';

export type Fault =
  | { kind: 'status'; status: number; body?: unknown; count?: number }
  | { kind: 'context_overflow'; count?: number }
  | { kind: 'drop'; afterEvents: number; count?: number }
  | { kind: 'sse_error'; afterEvents: number; error?: unknown; count?: number }
  | { kind: 'delay'; ms: number; count?: number }
  | { kind: 'hold'; count?: number }
  | { kind: 'stall'; afterEvents: number; ms: number; count?: number }
  /** A broken backend or proxy: after K events, one whose JSON is cut short, then the end of the stream. */
  | { kind: 'malformed'; afterEvents: number; count?: number };

const count = z.number().int().positive().optional();
const events = z.number().int().nonnegative();
const ms = z.number().nonnegative();

export const FaultSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('status'),
    status: z.number().int().min(100).max(599),
    body: z.unknown().optional(),
    count,
  }),
  z.object({ kind: z.literal('context_overflow'), count }),
  z.object({ kind: z.literal('drop'), afterEvents: events, count }),
  z.object({
    kind: z.literal('sse_error'),
    afterEvents: events,
    error: z.unknown().optional(),
    count,
  }),
  z.object({ kind: z.literal('delay'), ms, count }),
  z.object({ kind: z.literal('hold'), count }),
  z.object({ kind: z.literal('stall'), afterEvents: events, ms, count }),
  z.object({ kind: z.literal('malformed'), afterEvents: events, count }),
]);

export const FaultRequestSchema = z.object({ faults: z.array(FaultSchema) });

export interface FaultQueue {
  /** Replaces the pending faults. */
  set(faults: readonly Fault[]): void;
  /** The fault for the next request, if any (consumes one use). */
  take(): Fault | undefined;
  pending(): number;
}

export function createFaultQueue(): FaultQueue {
  const queue: { fault: Fault; left: number }[] = [];
  return {
    set(faults) {
      queue.length = 0;
      for (const fault of faults) queue.push({ fault, left: fault.count ?? 1 });
    },
    take() {
      const head = queue[0];
      if (!head) return undefined;
      head.left -= 1;
      if (head.left <= 0) queue.shift();
      return head.fault;
    },
    pending: () => queue.reduce((sum, entry) => sum + entry.left, 0),
  };
}

/** Where `hold` faults wait: every held request goes on when released, or when its client leaves. */
export interface HoldGate {
  /** Resolves true when released, false when the signal aborted first. */
  wait(signal: AbortSignal): Promise<boolean>;
  /** Lets every held request go on; returns how many there were. */
  release(): number;
  held(): number;
}

export function createHoldGate(): HoldGate {
  const waiting = new Set<() => void>();
  return {
    wait(signal) {
      if (signal.aborted) return Promise.resolve(false);
      return new Promise((resolve) => {
        const go = (): void => {
          waiting.delete(go);
          signal.removeEventListener('abort', leave);
          resolve(true);
        };
        const leave = (): void => {
          waiting.delete(go);
          resolve(false);
        };
        waiting.add(go);
        signal.addEventListener('abort', leave, { once: true });
      });
    },
    release() {
      const released = [...waiting];
      for (const go of released) go();
      return released.length;
    },
    held: () => waiting.size,
  };
}
