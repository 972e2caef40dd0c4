import { describe, expect, it } from 'vitest';
import { stageTwoLimit, versionAtLeast } from './ollama-truncation.js';

const limit = (tokens: number, version: string, contextShift = true, numCtx = 4096) =>
  stageTwoLimit(tokens, { numCtx, contextShift, version });

describe("Ollama's token truncation, stage 2 (ollama-lmstudio.md §2)", () => {
  it('v0.30.11+: over num_ctx − 1, keeps num_ctx − max(⌊(num_ctx − 4)/2⌋, 1) (4096 → 2050)', () => {
    expect(limit(4095, '0.32.15')).toBeUndefined();
    expect(limit(4096, '0.32.15')).toBe(2050);
    expect(limit(22714, '0.30.11')).toBe(2050);
    expect(limit(40000, '0.32.15', true, 32768)).toBe(16386);
  });

  it('v0.30.0–v0.30.10: over num_ctx − 1, cut to num_ctx − 1 (issue #16618: new=4095)', () => {
    expect(limit(22714, '0.30.10')).toBe(4095);
    expect(limit(4096, '0.30.0')).toBe(4095);
    expect(limit(4095, '0.30.0')).toBeUndefined();
  });

  it('≤ v0.29: over num_ctx, cut to exactly num_ctx', () => {
    expect(limit(4096, '0.29.6')).toBeUndefined();
    expect(limit(4097, '0.29.6')).toBe(4096);
  });

  it('context shift off: the 400 instead (the llama-server engine, v0.30+)', () => {
    expect(limit(4096, '0.32.15', false)).toBe('error');
    expect(limit(4095, '0.32.15', false)).toBeUndefined();
    expect(limit(5000, '0.29.6', false)).toBe(4096);
  });

  it('compares versions numerically, pre-release suffixes aside', () => {
    expect(versionAtLeast('0.30.11', '0.30.9')).toBe(true);
    expect(versionAtLeast('v0.30.11-rc0', '0.30.11')).toBe(true);
    expect(versionAtLeast('0.29.99', '0.30.0')).toBe(false);
  });
});
