import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellQuote } from '../src/shell-quote.js';

describe('shellQuote', () => {
  it.each([
    ['/home/u/repo', '/home/u/repo'],
    ['http://127.0.0.1:8080/j/abc', 'http://127.0.0.1:8080/j/abc'],
    ['local-agent 20261129', "'local-agent 20261129'"],
    ["it's", "'it'\\''s'"],
    ['', "''"],
  ])('%j → %s', (value, quoted) => {
    expect(shellQuote(value)).toBe(quoted);
  });

  it.each(['a b', "it's", '$HOME `x` "y" \\z', '*?[]!;&|<>(){}#~', ''])(
    'gives bash back exactly %j',
    (value) => {
      expect(
        execFileSync('bash', ['-c', `printf %s ${shellQuote(value)}`], { encoding: 'utf8' }),
      ).toBe(value);
    },
  );
});
