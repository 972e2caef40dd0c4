import { describe, expect, it } from 'vitest';
import { diffPage, MAX_PAGE_CHARS } from './job-diff.js';

describe('diffPage', () => {
  const lines = ['a', 'b', 'c', 'd', 'e'];

  it.each([
    [0, 2, 'a\nb', 2],
    [2, 2, 'c\nd', 4],
    [4, 2, 'e', 5],
    [5, 2, '', 5],
  ])('pages from line %i, %i lines at a time', (offset, maxLines, text, end) => {
    expect(diffPage(lines, offset, maxLines)).toEqual({ text, end });
  });

  it('ends a page before it grows past the character bound', () => {
    const wide = Array.from({ length: 10 }, (_, i) => `${i}`.repeat(MAX_PAGE_CHARS / 4));
    const page = diffPage(wide, 0, 400);
    expect(page.end).toBe(3);
    expect(page.text.length).toBeLessThanOrEqual(MAX_PAGE_CHARS);
  });

  it('cuts a single line longer than the bound and moves past it', () => {
    const page = diffPage(['x'.repeat(MAX_PAGE_CHARS * 2), 'next'], 0, 400);
    expect(page.end).toBe(1);
    expect(page.text).toMatch(/ … \[line cut: 120000 characters\]$/);
  });
});
