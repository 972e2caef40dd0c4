import { clipEnd, displayWidth, elideMiddle, padEnd } from './text-width.js';

/** A column that may be cut when a table is wider than the screen, to no fewer than `min` columns. */
export interface Shrinkable {
  column: number;
  min: number;
  /** `end` (default) keeps the start of the text; `middle` keeps both ends (ids, paths, model names). */
  cut?: 'end' | 'middle';
}

export interface FitOptions {
  /** Total width to fit, indent included; undefined fits nothing (every cell whole). */
  width?: number | undefined;
  /** The columns that give way, in order: the free text first. */
  shrink?: readonly Shrinkable[];
  indent?: string;
  /** Applied to each cell after it was cut and padded (colour); must not change its display width. */
  paint?: (cell: string, row: number, column: number) => string;
}

function columnWidths(rows: readonly (readonly string[])[]): number[] {
  return rows.reduce<number[]>(
    (acc, row) => row.map((cell, index) => Math.max(acc[index] ?? 0, displayWidth(cell))),
    [],
  );
}

/** Narrows the shrinkable columns, in order, until the table fits `width` or each is at its minimum. */
function fitWidths(widths: number[], indent: number, options: FitOptions): number[] {
  const fitted = [...widths];
  if (options.width === undefined) return fitted;
  const total = (): number =>
    indent + fitted.reduce((sum, w) => sum + w, 0) + 2 * (fitted.length - 1);
  for (const { column, min } of options.shrink ?? []) {
    const current = fitted[column];
    if (current === undefined) continue;
    const excess = total() - options.width;
    if (excess <= 0) break;
    fitted[column] = Math.max(Math.min(min, current), current - excess);
  }
  return fitted;
}

/**
 * Rows as aligned columns, two spaces apart: every column but the last padded to its widest cell, so the
 * free-text last column never drags trailing spaces. With a width, the shrinkable columns are cut (in
 * their order) until every line fits; a line that still does not is cut at its end. Widths are display
 * widths (wide characters count two). The one table layout of the CLI (jobs, models, agents, help).
 */
export function fitColumns(
  rows: readonly (readonly string[])[],
  options: FitOptions = {},
): string[] {
  const indent = options.indent ?? '';
  const widths = fitWidths(columnWidths(rows), displayWidth(indent), options);
  const cutBy = new Map((options.shrink ?? []).map((spec) => [spec.column, spec.cut ?? 'end']));
  return rows.map((row, rowIndex) => {
    const cells = row.map((cell, index) => {
      const width = widths[index] ?? 0;
      const cut =
        displayWidth(cell) <= width
          ? cell
          : cutBy.get(index) === 'middle'
            ? elideMiddle(cell, width)
            : clipEnd(cell, width);
      return index === row.length - 1 ? cut : padEnd(cut, width);
    });
    const plain = `${indent}${cells.join('  ')}`.trimEnd();
    if (options.width !== undefined && displayWidth(plain) > options.width)
      return clipEnd(plain, options.width);
    const paint = options.paint;
    if (!paint) return plain;
    // Paint the cell's text only, never its padding; trailing spaces of the last cell are already gone.
    const painted = cells.map((cell, index) => {
      const text = cell.trimEnd();
      return paint(text, rowIndex, index) + cell.slice(text.length);
    });
    return `${indent}${painted.join('  ')}`.trimEnd();
  });
}

/** fitColumns without a width: every cell whole. */
export function alignColumns(rows: readonly (readonly string[])[], indent = ''): string[] {
  return fitColumns(rows, { indent });
}
