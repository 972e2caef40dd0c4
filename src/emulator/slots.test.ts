import { describe, expect, it } from 'vitest';
import { computeSlotWindow, createSlotPool } from './slots.js';

describe('computeSlotWindow', () => {
  // The captured table in fixtures/llama.cpp/README.md (n_ctx arithmetic).
  it.each([
    [{ nCtx: 16384, parallel: 2 }, 2, false, 8192],
    [{ nCtx: 8192, parallel: 1 }, 1, false, 8192],
    [{ nCtx: 16384 }, 4, true, 16384],
    [{ nCtx: 16384, parallel: 2, kvUnified: true }, 2, true, 16384],
    [{ nCtx: 32768, parallel: 2 }, 2, false, 16384],
    [{ nCtx: 65536, parallel: 1 }, 1, false, 32768],
    [{ nCtx: 16384, parallel: 3 }, 3, false, 5632],
  ])('gives %j → %i slots, unified %s, %i tokens per slot', (flags, slots, unified, perSlot) => {
    const window = computeSlotWindow({ nCtxTrain: 32768, ...flags });
    expect([window.slots, window.unified, window.nCtxSlot]).toEqual([slots, unified, perSlot]);
  });
});

describe('createSlotPool', () => {
  const tokens = (text: string): string[] => text.split(' ');
  const signal = new AbortController().signal;
  const task = { maxTokens: 8, stream: false };

  it('reuses the longest common prefix but always re-evaluates the last token', async () => {
    const pool = createSlotPool(computeSlotWindow({ nCtx: 1024, nCtxTrain: 32768, parallel: 1 }));
    const first = await pool.acquire(tokens('a b c d'), task, signal);
    if (first.kind !== 'leased') throw new Error(first.kind);
    first.lease.release();
    const again = await pool.acquire(tokens('a b c d'), task, signal);
    const longer = again.kind === 'leased' ? again.lease.cachedTokens : -1;
    expect(longer).toBe(3);
  });

  it('queues a request while every slot is busy and counts it as deferred', async () => {
    const pool = createSlotPool(computeSlotWindow({ nCtx: 1024, nCtxTrain: 32768, parallel: 1 }));
    const first = await pool.acquire(tokens('x'), task, signal);
    const waiting = pool.acquire(tokens('y'), task, signal);
    expect([pool.busy(), pool.deferred()]).toEqual([1, 1]);
    if (first.kind === 'leased') first.lease.release();
    expect((await waiting).kind).toBe('leased');
    expect(pool.deferred()).toBe(0);
  });

  it('fails every running request when unified KV cells run out', async () => {
    const pool = createSlotPool(computeSlotWindow({ nCtx: 256, nCtxTrain: 32768 }));
    const big = Array.from({ length: 200 }, (_, index) => `t${index}`);
    const first = await pool.acquire(big, task, signal);
    let failed = false;
    if (first.kind === 'leased') first.lease.onExhausted(() => (failed = true));
    const second = await pool.acquire(
      big.map((t) => `${t}'`),
      task,
      signal,
    );
    expect([second.kind, failed]).toEqual(['exhausted', true]);
  });
});
