/**
 * llama-server's slots: the per-slot window arithmetic of b10108 (fixtures README table) and per-slot
 * KV-prefix accounting. Each slot remembers its last prompt's tokens; a new prompt goes to a free slot
 * with the longest common prefix (else waits: `requests_deferred`), and reuses that prefix
 * (at most prompt − 1 tokens, as llama.cpp always re-evaluates the last one, A71). With unified KV
 * the slots share `totalCells`: a prompt that does not fit beside the running ones fails them all
 * ("Context size has been exceeded.", C13/C14/C20/C21).
 */
import { commonPrefixLength } from './tokens.js';

export interface SlotWindow {
  slots: number;
  unified: boolean;
  /** Per-slot context: what /props, /slots and /v1/models report and prompts are checked against. */
  nCtxSlot: number;
  /** KV cells: shared when unified, else nCtxSlot × slots. */
  totalCells: number;
}

const pad256 = (value: number): number => Math.ceil(value / 256) * 256;

export function computeSlotWindow(options: {
  nCtx: number;
  nCtxTrain: number;
  parallel?: number | undefined;
  kvUnified?: boolean | undefined;
}): SlotWindow {
  const auto = options.parallel === undefined;
  const slots = Math.max(1, options.parallel ?? 4);
  const unified = options.kvUnified ?? auto;
  if (unified) {
    const cells = pad256(options.nCtx);
    return { slots, unified, nCtxSlot: Math.min(cells, options.nCtxTrain), totalCells: cells };
  }
  const perSlot = pad256(Math.floor(options.nCtx / slots));
  return {
    slots,
    unified,
    nCtxSlot: Math.min(perSlot, options.nCtxTrain),
    totalCells: perSlot * slots,
  };
}

export interface SlotTask {
  idTask: number;
  promptTokens: number;
  cachedTokens: number;
  maxTokens: number;
  stream: boolean;
  decoded: number;
}

export interface SlotState {
  id: number;
  processing: boolean;
  cache: readonly string[];
  task: SlotTask | undefined;
  onExhausted: (() => void) | undefined;
  /** When the slot last took a task: ties on prefix go to the least recently used slot. */
  lastUsed: number;
}

export interface Lease {
  slot: SlotState;
  cachedTokens: number;
  /** Called when unified KV runs out while this request holds the slot. */
  onExhausted(callback: () => void): void;
  setDecoded(tokens: number): void;
  release(): void;
}

export type Acquired =
  { kind: 'leased'; lease: Lease } | { kind: 'exhausted' } | { kind: 'aborted' };

export interface SlotPool {
  window: SlotWindow;
  slots: readonly SlotState[];
  acquire(
    tokens: readonly string[],
    task: { maxTokens: number; stream: boolean },
    signal: AbortSignal,
  ): Promise<Acquired>;
  busy(): number;
  deferred(): number;
}

export function createSlotPool(window: SlotWindow): SlotPool {
  const slots: SlotState[] = Array.from({ length: window.slots }, (_, id) => ({
    id,
    processing: false,
    cache: [],
    task: undefined,
    onExhausted: undefined,
    lastUsed: -1,
  }));
  const waiting: (() => void)[] = [];
  let nextTask = 0;

  // llama.cpp: the free slot sharing the longest prefix if it covers more than 10% of the prompt
  // (--slot-prompt-similarity 0.1), else the least recently used free slot.
  const pickSlot = (tokens: readonly string[]): SlotState | undefined => {
    const free = slots.filter((slot) => !slot.processing);
    let best: SlotState | undefined;
    let bestPrefix = 0;
    for (const slot of free) {
      const prefix = commonPrefixLength(slot.cache, tokens);
      if (prefix > bestPrefix) [best, bestPrefix] = [slot, prefix];
    }
    if (best && bestPrefix > tokens.length * 0.1) return best;
    return free.reduce<SlotState | undefined>(
      (lru, slot) => (!lru || slot.lastUsed < lru.lastUsed ? slot : lru),
      undefined,
    );
  };

  const cellsInUse = (): number =>
    slots.reduce(
      (sum, s) => sum + (s.processing && s.task ? s.task.promptTokens + s.task.decoded : 0),
      0,
    );

  const wake = (): void => waiting.shift()?.();

  const lease = (
    slot: SlotState,
    tokens: readonly string[],
    task: { maxTokens: number; stream: boolean },
  ): Lease => {
    const cachedTokens = Math.min(
      commonPrefixLength(slot.cache, tokens),
      Math.max(tokens.length - 1, 0),
    );
    slot.processing = true;
    slot.lastUsed = nextTask;
    slot.cache = tokens;
    slot.onExhausted = undefined;
    slot.task = {
      idTask: nextTask++,
      promptTokens: tokens.length,
      cachedTokens,
      decoded: 0,
      ...task,
    };
    let released = false;
    return {
      slot,
      cachedTokens,
      onExhausted: (callback) => (slot.onExhausted = callback),
      setDecoded: (decoded) => {
        if (slot.task && !released) slot.task.decoded = decoded;
      },
      release: () => {
        if (released) return;
        released = true;
        slot.processing = false;
        slot.onExhausted = undefined;
        wake();
      },
    };
  };

  const acquire: SlotPool['acquire'] = async (tokens, task, signal) => {
    for (;;) {
      if (signal.aborted) return { kind: 'aborted' };
      const slot = pickSlot(tokens);
      if (slot) {
        if (window.unified && cellsInUse() + tokens.length > window.totalCells) {
          for (const other of slots) other.onExhausted?.();
          return { kind: 'exhausted' };
        }
        return { kind: 'leased', lease: lease(slot, tokens, task) };
      }
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const index = waiting.indexOf(done);
          if (index >= 0) waiting.splice(index, 1);
          resolve();
        };
        waiting.push(done);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
  };

  return {
    window,
    slots,
    acquire,
    busy: () => slots.filter((slot) => slot.processing).length,
    deferred: () => waiting.length,
  };
}
