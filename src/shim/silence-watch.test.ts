import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { watchSilence } from './silence-watch.js';

describe('watchSilence', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls after the silence, never sooner, and again after each further silence', () => {
    const calls: number[] = [];
    const watch = watchSilence(100, () => calls.push(Date.now()));
    const start = Date.now();
    vi.advanceTimersByTime(99);
    expect(calls).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(calls).toEqual([start + 100]);
    vi.advanceTimersByTime(100);
    expect(calls).toEqual([start + 100, start + 200]);
    watch.stop();
  });

  it('stays quiet while touched, and calls between one and one and a half silences after the last touch', () => {
    const calls: number[] = [];
    const watch = watchSilence(100, () => calls.push(Date.now()));
    for (let step = 0; step < 10; step++) {
      vi.advanceTimersByTime(30);
      watch.touch();
    }
    expect(calls).toEqual([]);
    const lastTouch = Date.now();
    vi.advanceTimersByTime(150);
    expect(calls).toHaveLength(1);
    const waited = (calls[0] ?? 0) - lastTouch;
    expect(waited).toBeGreaterThanOrEqual(100);
    expect(waited).toBeLessThanOrEqual(150);
    watch.stop();
  });

  it('calls nothing once stopped', () => {
    const onSilence = vi.fn();
    const watch = watchSilence(10, onSilence);
    watch.stop();
    vi.advanceTimersByTime(1000);
    expect(onSilence).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
