import { describe, expect, it } from 'vitest';
import { createCancellation } from './upstream.js';

describe('createCancellation', () => {
  it('runs each subscribed stop once, and a late subscriber at once', () => {
    const cancellation = createCancellation();
    const cancel = (): void => cancellation.cancel();
    const calls: string[] = [];
    cancellation.onCancel(() => calls.push('first'));
    const unsubscribe = cancellation.onCancel(() => calls.push('unsubscribed'));
    unsubscribe();
    expect(cancellation.cancelled).toBe(false);
    cancel();
    cancel();
    expect(cancellation.cancelled).toBe(true);
    cancellation.onCancel(() => calls.push('late'));
    expect(calls).toEqual(['first', 'late']);
  });
});
