import { describe, expect, it } from 'vitest';
import { commonPrefixLength, countTokens, tokenize } from './tokens.js';

const userPrompt = (content: string, thinking = true): string =>
  `<|im_start|>user\n${content.trim()}<|im_end|>\n<|im_start|>assistant\n${
    thinking ? '<think>\n' : '<think>\n\n</think>\n\n'
  }`;

describe('tokenize', () => {
  it('gives the text back when the tokens are joined', () => {
    const text = 'Hello, world!\n\n  foo_bar(12345) {"a": [1, 2]}  \n<|im_end|>\nüber';
    expect(tokenize(text).join('')).toBe(text);
  });

  it.each([
    ['Say hello.', true, 14],
    ['hello '.repeat(8180), true, 8191],
    ['hello '.repeat(8180), false, 8193],
    ['hello '.repeat(8181), true, 8192],
  ])('counts the rendered prompt %#  like the captured vocab', (content, thinking, expected) => {
    expect(countTokens(userPrompt(content, thinking))).toBe(expected);
  });

  it('counts special tokens as one token each', () => {
    expect(tokenize('<|im_start|><think></think><tool_call>')).toHaveLength(4);
  });
});

describe('commonPrefixLength', () => {
  it('stops at the first differing token', () => {
    expect(commonPrefixLength(['a', 'b', 'c'], ['a', 'b', 'd', 'e'])).toBe(2);
  });
});
