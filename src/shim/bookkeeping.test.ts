import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBookkeeping } from './bookkeeping.js';

describe('createBookkeeping', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A queue on the fake clock, and what it has run so far. */
  function queue(delayMs: number): {
    ran: string[];
    bookkeeping: ReturnType<typeof createBookkeeping<string>>;
  } {
    const ran: string[] = [];
    const bookkeeping = createBookkeeping<string>(
      delayMs,
      (item) => ran.push(item),
      () => Date.now(),
    );
    return { ran, bookkeeping };
  }

  it('runs each item once it has waited the delay, in the order deferred, on one timer', () => {
    const { ran, bookkeeping } = queue(2);
    bookkeeping.defer('a');
    vi.advanceTimersByTime(1);
    bookkeeping.defer('b');
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['a', 'b']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs the chosen items at once on flush and keeps the others waiting', () => {
    const { ran, bookkeeping } = queue(50);
    for (const item of ['x1', 'y1', 'x2']) bookkeeping.defer(item);
    bookkeeping.flush((item) => item.startsWith('x'));
    expect(ran).toEqual(['x1', 'x2']);
    vi.advanceTimersByTime(50);
    expect(ran).toEqual(['x1', 'x2', 'y1']);
  });

  it('leaves no timer behind once everything is flushed', () => {
    const { ran, bookkeeping } = queue(50);
    bookkeeping.defer('a');
    bookkeeping.flush();
    expect(ran).toEqual(['a']);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100);
    expect(ran).toEqual(['a']);
  });
});
