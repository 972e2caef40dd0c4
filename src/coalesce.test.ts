import { describe, expect, it } from 'vitest';
import { coalesce } from './coalesce.js';

describe('coalesce', () => {
  it('never overlaps runs, and a trigger during a run gives exactly one more run', async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    let release: (() => void) | undefined;
    const gate = () => new Promise<void>((resolve) => (release = resolve));
    const task = coalesce(async () => {
      running++;
      most = Math.max(most, running);
      runs++;
      await gate();
      running--;
    });
    task.trigger();
    task.trigger();
    task.trigger();
    expect(runs).toBe(1);
    release?.();
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toBe(2);
    release?.();
    await task.settled();
    expect(runs).toBe(2);
    expect(most).toBe(1);
  });

  it('goes on after a failed run', async () => {
    let runs = 0;
    const task = coalesce(() => {
      runs++;
      return Promise.reject(new Error('disk gone'));
    });
    task.trigger();
    await task.settled();
    task.trigger();
    await task.settled();
    expect(runs).toBe(2);
  });
});
