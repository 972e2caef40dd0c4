import { describe, expect, it } from 'vitest';
import {
  answerCheck,
  createTruncationGuard,
  truncationSizes,
  type Conversation,
} from './truncation-guard.js';

const chain = (key: string): Conversation => ({ key, extendsOnly: false });

describe('truncationSizes (ollama-lmstudio.md §2 "Overflow")', () => {
  it('gives the sizes each Ollama release line cuts a 4096 window to', () => {
    // ≥ 0.30.11: 4096 - max((4096-4)/2, 1) = 2050 (measured by a third party), 2051 with a BOS token;
    // 0.30.0–0.30.10: num_ctx - 1; ≤ 0.29: num_ctx.
    expect(truncationSizes(4096)).toEqual([2050, 2051, 4095, 4096]);
  });
});

describe('createTruncationGuard: before sending', () => {
  it('refuses unsent only what is over the window even at a twentieth of a token a byte', () => {
    const guard = createTruncationGuard(4096);
    expect(guard.before(100_000)).toEqual({ kind: 'refuse', estimate: 25000, window: 4096 });
    // Claude Code's 42 kB first prompt may be under 4096 tokens as far as bytes can tell: sent, held, checked.
    expect(guard.before(42_000).kind).toBe('hold');
  });

  it('refuses from an anchor: the last honest count plus the least the added bytes cost', () => {
    const guard = createTruncationGuard(32768);
    guard.after(100_000, 30_000, chain('c'));
    expect(guard.before(160_000, chain('c')).kind).toBe('refuse');
    expect(guard.before(110_000, chain('c')).kind).toBe('hold');
  });

  it('holds the answer back while the prompt could overflow, and streams one that cannot', () => {
    const guard = createTruncationGuard(32768);
    expect(guard.before(100_000).kind).toBe('hold');
    // Even at a token a byte (the most a byte-level tokenizer makes) 20 kB fits 32768 tokens.
    expect(guard.before(20_000)).toEqual({ kind: 'pass', estimate: 5000 });
    const anchored = createTruncationGuard(32768);
    anchored.after(120_000, 20_000, chain('c'));
    expect(anchored.before(125_000, chain('c')).kind).toBe('pass');
    expect(anchored.before(135_000, chain('c')).kind).toBe('hold');
  });

  it('learns the rate from a conversation’s honest count, not from a title request’s', () => {
    const guard = createTruncationGuard(32768);
    expect(guard.estimate(40_000)).toBe(10000);
    guard.after(40_000, 4000);
    expect(guard.estimate(40_000)).toBe(10000);
    guard.after(40_000, 8000, chain('c'));
    expect(guard.estimate(40_000)).toBe(8000);
  });
});

describe('createTruncationGuard: reading the count', () => {
  it('calls the exact size of a cut a truncation when the prompt could have overflowed, and only then', () => {
    const guard = createTruncationGuard(32768);
    guard.after(40_000, 9000, chain('c'));
    // 30 kB of digits: the estimate says about 15.75k tokens, Ollama counted them all and cut to half the window.
    const half = truncationSizes(32768)[0] ?? 0;
    expect(guard.after(70_000, half, chain('c')).truncated).toBe(true);
    // 8 kB cannot overflow 32768 tokens: an honest prompt of that size is no cut.
    expect(createTruncationGuard(32768).after(8_000, half).truncated).toBe(false);
  });

  it('calls a count under the conversation’s last one a truncation: stage 1 dropped messages', () => {
    const guard = createTruncationGuard(32768);
    guard.after(100_000, 30_000, chain('c'));
    expect(guard.after(110_000, 29_000, chain('c')).truncated).toBe(true);
  });

  it('never calls an honest count a truncation, however the added bytes tokenise', () => {
    const guard = createTruncationGuard(32768);
    guard.after(41_922, 16_134, chain('c'));
    // 6.5 kB added that cost only 1.5k tokens (measured with the emulator: a tool result of plain text).
    expect(guard.after(48_426, 17_598, chain('c')).truncated).toBe(false);
    expect(guard.after(56_683, 25_647, chain('c')).truncated).toBe(false);
    expect(guard.after(20_000, 3000).truncated).toBe(false);
    // The same body resent, counted a few tokens lower (ids of the same length tokenise differently).
    guard.after(59_733, 32_532, chain('c'));
    expect(guard.after(59_733, 32_529, chain('c')).truncated).toBe(false);
  });

  it('refuses the same conversation’s resend once it was cut, and judges others on their own', () => {
    const guard = createTruncationGuard(32768);
    const verdict = guard.after(160_000, truncationSizes(32768)[0] ?? 0, chain('c'));
    expect(verdict.truncated).toBe(true);
    expect(verdict.estimate).toBeGreaterThan(32768);
    expect(guard.before(161_000, chain('c')).kind).toBe('refuse');
    expect(guard.before(100_000, chain('other')).kind).toBe('hold');
  });

  it('bounds a compaction request from its conversation, and lets it anchor nothing', () => {
    const guard = createTruncationGuard(32768);
    guard.after(60_000, 30_000, chain('s'));
    const compaction: Conversation = { key: 's', extendsOnly: true };
    expect(guard.before(66_000, compaction).kind).toBe('hold');
    // At least the 30k of its conversation: 25.6k is what stage 1 left of it.
    expect(guard.after(66_000, 25_600, compaction).truncated).toBe(true);
    expect(guard.after(66_000, 33_000, compaction).truncated).toBe(false);
    // Neither count moved the anchor: the conversation is still 30k at 60 kB.
    expect(guard.after(62_000, 29_000, chain('s')).truncated).toBe(true);
  });

  it('answers a truncated count with prompt is too long, in the words Claude Code compacts on', () => {
    const guard = createTruncationGuard(4096);
    const check = answerCheck(guard, 20_000, { kind: 'hold', estimate: 5000 });
    expect(check.hold).toBe(true);
    expect(check.verify(2050)).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: 'prompt is too long: 5000 tokens > 4096 maximum',
    });
    expect(answerCheck(guard, 8000, { kind: 'hold', estimate: 2000 }).verify(2000)).toBeUndefined();
  });
});
