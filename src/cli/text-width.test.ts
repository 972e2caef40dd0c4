import { describe, expect, it } from 'vitest';
import { clipEnd, displayWidth, elideMiddle, padEnd, stripAnsi } from './text-width.js';

describe('displayWidth', () => {
  it.each([
    ['plain ASCII', 'hello.txt', 9],
    ['CJK ideographs, two columns each', '日本語', 6],
    ['Hangul syllables', '한국', 4],
    ['fullwidth forms', 'ＡＢ', 4],
    ['a combining accent on its letter', 'e\u0301', 1],
    ['an emoji', '🚀', 2],
    ['a ZWJ family emoji as one cluster', '👨‍👩‍👧', 2],
    ['colour escapes, which take no room', '\u001b[32msucceeded\u001b[39m', 9],
    ['an empty string', '', 0],
  ])('counts %s', (_name, text, width) => {
    expect(displayWidth(text)).toBe(width);
  });
});

describe('clipEnd', () => {
  it('returns text that fits unchanged', () => {
    expect(clipEnd('short', 10)).toBe('short');
  });

  it('cuts to the width with an ellipsis in the last column', () => {
    expect(clipEnd('abcdefghij', 6)).toBe('abcde…');
    expect(displayWidth(clipEnd('abcdefghij', 6))).toBe(6);
  });

  it('never splits a wide character: it leaves a column free instead', () => {
    const cut = clipEnd('日本語テキスト', 6);
    expect(cut).toBe('日本…');
    expect(displayWidth(cut)).toBeLessThanOrEqual(6);
  });

  it('keeps a combining mark with its letter', () => {
    expect(clipEnd('e\u0301e\u0301e\u0301e\u0301', 3)).toBe('e\u0301e\u0301…');
  });

  it('drops escapes from a cut text so no colour is left open', () => {
    expect(clipEnd('\u001b[31mfailed badly\u001b[39m', 7)).toBe('failed…');
  });
});

describe('elideMiddle', () => {
  it('keeps both ends of a path', () => {
    const path =
      '/home/user/.local/state/localagents/worktrees/repo/20261201-101010-abcd/hello.txt';
    const cut = elideMiddle(path, 30);
    expect(cut).toBe('/home/user/.loc…abcd/hello.txt');
    expect(displayWidth(cut)).toBeLessThanOrEqual(30);
    expect(cut.endsWith('hello.txt')).toBe(true);
  });

  it('fits wide characters at both ends', () => {
    const cut = elideMiddle('日本語のファイル名.txt', 12);
    expect(displayWidth(cut)).toBeLessThanOrEqual(12);
    expect(cut).toMatch(/^日本.*….*\.txt$/);
  });

  it('returns text that fits unchanged', () => {
    expect(elideMiddle('a/b.txt', 7)).toBe('a/b.txt');
  });
});

describe('padEnd and stripAnsi', () => {
  it('pads by display width', () => {
    expect(padEnd('日本', 6)).toBe('日本  ');
    expect(padEnd('ab', 1)).toBe('ab');
  });

  it('removes CSI and OSC sequences', () => {
    expect(stripAnsi('\u001b[2mdim\u001b[22m \u001b]8;;http://x\u0007link\u001b]8;;\u0007')).toBe(
      'dim link',
    );
  });
});
