/**
 * Rows as aligned columns, two spaces apart: every column but the last padded to its widest cell, so the
 * free-text last column never drags trailing spaces. The one table layout of the CLI (jobs, models, help).
 */
export function alignColumns(rows: readonly (readonly string[])[], indent = ''): string[] {
  const widths = rows.reduce<number[]>(
    (acc, row) => row.map((cell, index) => Math.max(acc[index] ?? 0, cell.length)),
    [],
  );
  return rows.map((row) =>
    `${indent}${row.map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0))).join('  ')}`.trimEnd(),
  );
}
