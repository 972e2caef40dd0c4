import { describe, expect, it } from 'vitest';
import { capacityOf, freeSlots } from './capacity.js';
import type { EndpointProbe } from './probe.js';

function probe(extra: Partial<EndpointProbe>): EndpointProbe {
  return {
    name: 'desk',
    base_url: 'http://127.0.0.1:1',
    backend: 'llama.cpp',
    up: true,
    status: 'ok',
    models: ['m'],
    context: { m: 32768 },
    metrics: true,
    latency_ms: 1,
    ...extra,
  };
}

describe('capacityOf', () => {
  it('takes llama.cpp’s slots, capped by max_concurrent', () => {
    const slots = { total: 4, busy: 1, free: 3, source: 'slots' as const };
    expect(capacityOf(probe({ slots }), undefined)).toEqual({
      slots: 4,
      busy: 1,
      waiting: undefined,
      source: 'slots',
    });
    expect(capacityOf(probe({ slots }), 2)).toMatchObject({ slots: 2, source: 'max_concurrent' });
    // /props alone: the total is known, who is busy is not.
    expect(
      capacityOf(probe({ slots: { ...slots, source: 'props' } }), undefined).busy,
    ).toBeUndefined();
  });

  it('shares a unified KV cache: jobs of at least 65536 tokens each, or as many as max_concurrent says', () => {
    const unified = probe({
      slots: { total: 4, busy: 0, free: 4, source: 'slots' },
      context: { m: 262144 },
      kvUnified: true,
    });
    expect(capacityOf(unified, undefined)).toMatchObject({ slots: 4, windowPerJob: 65536 });
    const small = { ...unified, context: { m: 131072 } };
    expect(capacityOf(small, undefined)).toMatchObject({ slots: 2, windowPerJob: 65536 });
    expect(capacityOf(small, 1)).toMatchObject({ slots: 1, windowPerJob: 131072 });
  });

  it('admits on vLLM while nothing waits, and on Ollama as many as max_concurrent (default 1)', () => {
    const vllm = probe({ backend: 'vllm', vllm: { running: 3, waiting: 0 } });
    expect(capacityOf(vllm, undefined)).toMatchObject({
      slots: Number.POSITIVE_INFINITY,
      source: 'unbounded',
    });
    expect(freeSlots(capacityOf(vllm, undefined), 5, 0)).toBe(Number.POSITIVE_INFINITY);
    const waiting = probe({ backend: 'vllm', vllm: { running: 8, waiting: 2 } });
    expect(freeSlots(capacityOf(waiting, undefined), 0, 0)).toBe(0);
    const ollama = probe({ backend: 'ollama', capacity: { total: 1, source: 'default' } });
    expect(capacityOf(ollama, undefined)).toMatchObject({ slots: 1, source: 'default' });
  });
});

describe('freeSlots', () => {
  const capacity = { slots: 2, busy: 1, waiting: undefined, source: 'slots' as const };
  it('counts a slot busy with someone else’s request as taken, and our own requests once', () => {
    // One lease of ours, idle between turns; someone else's request on the other slot.
    expect(freeSlots(capacity, 1, 0)).toBe(0);
    // The busy slot is our own job's request.
    expect(freeSlots(capacity, 1, 1)).toBe(1);
    expect(freeSlots({ ...capacity, busy: 0 }, 0, 0)).toBe(2);
  });
});
