import { describe, expect, it } from 'vitest';
import { alignColumns, fitColumns } from './columns.js';
import { displayWidth } from './text-width.js';

const rows = [
  ['ID', 'MODEL', 'TASK'],
  ['j1', 'qwen3.8-27b-instruct-q4', 'Add a --verbose flag to the CLI and test it thoroughly'],
  ['j2', 'glm', 'short'],
];

describe('fitColumns', () => {
  it('cuts the free-text column first, down to its minimum, then the next', () => {
    const lines = fitColumns(rows, {
      width: 40,
      shrink: [
        { column: 2, min: 10 },
        { column: 1, min: 8, cut: 'middle' },
      ],
    });
    expect(lines).toMatchInlineSnapshot(`
      [
        "ID  MODEL                    TASK",
        "j1  qwen3.8-27b-instruct-q4  Add a --ve…",
        "j2  glm                      short",
      ]
    `);
    for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(40);
  });

  it('elides a model name in the middle once the task is at its minimum', () => {
    const lines = fitColumns(rows, {
      width: 30,
      shrink: [
        { column: 2, min: 10 },
        { column: 1, min: 8, cut: 'middle' },
      ],
    });
    expect(lines[1]).toBe('j1  qwen3.8…uct-q4  Add a --v…');
    for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(30);
  });

  it('cuts a line at its end when the minimums still do not fit', () => {
    const lines = fitColumns(rows, { width: 12, shrink: [{ column: 2, min: 10 }] });
    for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(12);
    expect(lines[1]).toBe('j1  qwen3.8…');
  });

  it('aligns by display width when cells hold wide characters', () => {
    expect(
      alignColumns([
        ['名前', 'x'],
        ['ab', 'y'],
      ]),
    ).toEqual(['名前  x', 'ab    y']);
  });

  it('paints cell text after padding, so colour does not shift the columns', () => {
    const lines = fitColumns(
      [
        ['A', 'B'],
        ['ok', 'z'],
      ],
      { paint: (cell, row, column) => (row === 1 && column === 0 ? `<${cell}>` : cell) },
    );
    expect(lines).toEqual(['A   B', '<ok>  z']);
  });
});
