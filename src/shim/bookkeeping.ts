/**
 * The log line's bookkeeping (a full parse of a fast-path body, the prompt fingerprint) waits until `delayMs` after
 * its answer is done: the client's next request, and every stream's bytes, go through first, and the bookkeeping
 * runs while the backend works on that request. One timer serves every waiting item, not one per request (a timer
 * and the promises around it cost a request tens of microseconds of unoptimised code), and items run in the order
 * they were deferred, so lines keep their order.
 */
export interface Bookkeeping<Item> {
  /** Runs `item` once it has waited `delayMs`. */
  defer(item: Item): void;
  /** Runs now every waiting item that `which` selects (all when omitted), in order. */
  flush(which?: (item: Item) => boolean): void;
}

export function createBookkeeping<Item>(
  delayMs: number,
  run: (item: Item) => void,
  now: () => number = () => performance.now(),
): Bookkeeping<Item> {
  const waiting: Array<{ item: Item; due: number }> = [];
  let timer: NodeJS.Timeout | undefined;

  function arm(): void {
    const first = waiting[0];
    if (timer || !first) return;
    timer = setTimeout(runDue, Math.max(0, first.due - now()));
  }

  function runDue(): void {
    timer = undefined;
    // Timers fire on whole milliseconds: an item due within the next half is due now.
    const horizon = now() + 0.5;
    let count = 0;
    while (count < waiting.length && (waiting[count]?.due ?? Infinity) <= horizon) count += 1;
    for (const { item } of waiting.splice(0, count)) run(item);
    arm();
  }

  return {
    defer(item) {
      waiting.push({ item, due: now() + delayMs });
      arm();
    },
    flush(which) {
      const chosen = which ? waiting.filter(({ item }) => which(item)) : waiting.slice();
      if (chosen.length === 0) return;
      const kept = which ? waiting.filter(({ item }) => !which(item)) : [];
      waiting.splice(0, waiting.length, ...kept);
      for (const { item } of chosen) run(item);
      if (waiting.length === 0 && timer) {
        clearTimeout(timer);
        timer = undefined;
      }
    },
  };
}
