/**
 * How many terminal columns text takes, and cutting it to fit: ANSI escapes take none, combining marks
 * and zero-width joiners none, East Asian Wide/Fullwidth characters and emoji two (UAX #11), everything
 * else one. Cuts fall between grapheme clusters, so an accent or a joined emoji is never split.
 */

// Made on first use: a Segmenter loads ICU's break data (tens of ms), which every command would otherwise pay at
// start, `serve` before its MCP handshake included; ASCII text never needs one.
let segmenter: Intl.Segmenter | undefined;
// CSI sequences (colours, erase, cursor moves) and OSC sequences ending in BEL or ST.
// eslint-disable-next-line no-control-regex -- escape sequences are control characters
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;
const ZERO_WIDTH = /^(?:\p{Mn}|\p{Me}|\p{Cf}|\p{Cc})+$/u;
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F/u;

// East Asian Wide (W) and Fullwidth (F) blocks, from EastAsianWidth.txt, merged into ranges.
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f],
  [0x231a, 0x231b],
  [0x2329, 0x232a],
  [0x2e80, 0x303e],
  [0x3041, 0x33ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xa000, 0xa4cf],
  [0xa960, 0xa97f],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe10, 0xfe19],
  [0xfe30, 0xfe6f],
  [0xff00, 0xff60],
  [0xffe0, 0xffe6],
  [0x16fe0, 0x18cff],
  [0x1b000, 0x1b2ff],
  [0x1f200, 0x1f2ff],
  [0x20000, 0x2fffd],
  [0x30000, 0x3fffd],
];

function isWide(codePoint: number): boolean {
  return WIDE.some(([low, high]) => codePoint >= low && codePoint <= high);
}

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

function graphemeWidth(grapheme: string): number {
  if (ZERO_WIDTH.test(grapheme)) return 0;
  if (EMOJI.test(grapheme)) return 2;
  return isWide(grapheme.codePointAt(0) ?? 0) ? 2 : 1;
}

function graphemes(text: string): string[] {
  segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' });
  return Array.from(segmenter.segment(text), (part) => part.segment);
}

/** Columns `text` takes on a terminal (escape sequences excluded). */
export function displayWidth(text: string): number {
  const plain = stripAnsi(text);
  // The common case, ASCII without control characters, needs no segmentation.
  if (/^[\x20-\x7e]*$/.test(plain)) return plain.length;
  return graphemes(plain).reduce((sum, grapheme) => sum + graphemeWidth(grapheme), 0);
}

/** How many of `parts` (graphemes), from the first, fit in `width` columns. */
function fitting(parts: readonly string[], width: number): number {
  let used = 0;
  let count = 0;
  for (const part of parts) {
    used += graphemeWidth(part);
    if (used > width) break;
    count += 1;
  }
  return count;
}

/** `text` cut to `width` columns, ending in `…` when something was cut. Escapes are dropped when it is cut. */
export function clipEnd(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (width <= 0) return '';
  const parts = graphemes(stripAnsi(text));
  return `${parts.slice(0, fitting(parts, width - 1)).join('')}…`;
}

/** `text` cut in the middle to `width` columns (`/home/…/hello.txt`): both ends of a path stay readable. */
export function elideMiddle(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (width <= 1) return clipEnd(text, width);
  const parts = graphemes(stripAnsi(text));
  const room = width - 1;
  const head = parts.slice(0, fitting(parts, Math.ceil(room / 2)));
  const reversed = [...parts].reverse();
  const tail = reversed.slice(0, fitting(reversed, room - displayWidth(head.join('')))).reverse();
  return `${head.join('')}…${tail.join('')}`;
}

/** `text` padded with spaces to `width` columns (by display width, not string length). */
export function padEnd(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}
