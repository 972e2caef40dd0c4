import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { colorEnabled, createPaint, terminalColumns } from './terminal.js';

describe('colorEnabled', () => {
  it.each([
    ['a TTY with nothing set', {}, true, true],
    ['a pipe', {}, false, false],
    ['NO_COLOR=1 on a TTY', { NO_COLOR: '1' }, true, false],
    ['an empty NO_COLOR (no-color.org: ignored)', { NO_COLOR: '' }, true, true],
    ['TERM=dumb on a TTY', { TERM: 'dumb' }, true, false],
    ['FORCE_COLOR=1 in a pipe', { FORCE_COLOR: '1' }, false, true],
    ['FORCE_COLOR=0 on a TTY', { FORCE_COLOR: '0' }, true, false],
    ['FORCE_COLOR=false on a TTY', { FORCE_COLOR: 'false' }, true, false],
    [
      'FORCE_COLOR with NO_COLOR (FORCE_COLOR decides, as in Node)',
      { FORCE_COLOR: '1', NO_COLOR: '1' },
      false,
      true,
    ],
  ])('decides for %s', (_name, env, tty, expected) => {
    expect(colorEnabled(env, tty)).toBe(expected);
  });
});

describe('terminalColumns', () => {
  it('reads $COLUMNS for a stream that is not a TTY, and nothing without it', () => {
    const pipe = new PassThrough();
    expect(terminalColumns(pipe, { COLUMNS: '100' })).toBe(100);
    expect(terminalColumns(pipe, { COLUMNS: 'wide' })).toBeUndefined();
    expect(terminalColumns(pipe, {})).toBeUndefined();
  });

  it('prefers a TTY’s own columns over $COLUMNS', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true, columns: 80 });
    expect(terminalColumns(tty, { COLUMNS: '200' })).toBe(80);
  });
});

describe('createPaint', () => {
  it('colours status words by outcome', () => {
    const paint = createPaint(true);
    expect(paint.status('succeeded')).toBe('\u001b[32msucceeded\u001b[39m');
    expect(paint.status('failed', 'failed ')).toBe('\u001b[31mfailed \u001b[39m');
    expect(paint.warning('warning:')).toBe('\u001b[33mwarning:\u001b[39m');
  });

  it('returns text unchanged when colour is off', () => {
    const paint = createPaint(false);
    expect(paint.status('succeeded')).toBe('succeeded');
    expect(paint.dim('x')).toBe('x');
  });
});
