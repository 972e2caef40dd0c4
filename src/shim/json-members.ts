/**
 * Where each top-level member's value lies in the bytes of a JSON object, found without parsing it. A rewrite that
 * touches `messages` then parses and re-serialises that member alone and splices it back: Claude Code's 31 KB tool
 * list and the rest of the body go out as the very bytes it sent (measured: normalising the 42 KB first turn took
 * 386 µs with a full parse and re-serialisation).
 */

/** A member's value: bytes [start, end) of the body. */
export interface MemberSpan {
  start: number;
  end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function skipSpace(raw: Buffer, at: number): number {
  while (isSpace(raw[at])) at++;
  return at;
}

/** `at` is on an opening quote; the position after its closing quote, or -1 when the string never ends. */
function skipString(raw: Buffer, at: number): number {
  let end = raw.indexOf(QUOTE, at + 1);
  while (end !== -1) {
    let backslashes = 0;
    while (raw[end - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end + 1;
    end = raw.indexOf(QUOTE, end + 1);
  }
  return -1;
}

/** The position after the value starting at `at`, or -1 when it is cut short. Does not validate the value. */
function skipValue(raw: Buffer, at: number): number {
  const first = raw[at];
  if (first === QUOTE) return skipString(raw, at);
  if (first !== 0x7b && first !== 0x5b) {
    // A number, true, false or null: runs to the next delimiter.
    let end = at;
    while (end < raw.length) {
      const byte = raw[end];
      if (byte === 0x2c || byte === 0x7d || byte === 0x5d || isSpace(byte)) break;
      end++;
    }
    return end > at ? end : -1;
  }
  let depth = 0;
  for (let index = at; index < raw.length; index++) {
    const byte = raw[index];
    if (byte === QUOTE) {
      const end = skipString(raw, index);
      if (end === -1) return -1;
      index = end - 1;
    } else if (byte === 0x7b || byte === 0x5b) depth++;
    else if (byte === 0x7d || byte === 0x5d) {
      depth--;
      if (depth === 0) return index + 1;
    }
  }
  return -1;
}

/**
 * The top-level members of a body that is one JSON object, by key; undefined when it is not one, is cut short, or
 * repeats a key (parsers disagree on which copy wins). Values are only delimited: the caller parses what it uses.
 */
export function topLevelMembers(raw: Buffer): Map<string, MemberSpan> | undefined {
  const members = new Map<string, MemberSpan>();
  let at = skipSpace(raw, 0);
  if (raw[at] !== 0x7b) return undefined;
  at = skipSpace(raw, at + 1);
  if (raw[at] === 0x7d) return skipSpace(raw, at + 1) === raw.length ? members : undefined;
  for (;;) {
    if (raw[at] !== QUOTE) return undefined;
    const keyEnd = skipString(raw, at);
    if (keyEnd === -1) return undefined;
    let key: unknown;
    try {
      key = JSON.parse(raw.toString('utf8', at, keyEnd));
    } catch {
      return undefined;
    }
    if (typeof key !== 'string' || members.has(key)) return undefined;
    at = skipSpace(raw, keyEnd);
    if (raw[at] !== 0x3a) return undefined;
    const start = skipSpace(raw, at + 1);
    const end = skipValue(raw, start);
    if (end === -1) return undefined;
    members.set(key, { start, end });
    at = skipSpace(raw, end);
    if (raw[at] === 0x2c) {
      at = skipSpace(raw, at + 1);
      continue;
    }
    if (raw[at] !== 0x7d) return undefined;
    return skipSpace(raw, at + 1) === raw.length ? members : undefined;
  }
}

/** The body with each given member's value replaced by new JSON text; the bytes in between are kept as they are. */
export function spliceMembers(
  raw: Buffer,
  replacements: ReadonlyArray<{ span: MemberSpan; json: string }>,
): Buffer {
  const ordered = [...replacements].sort((a, b) => a.span.start - b.span.start);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const { span, json } of ordered) {
    pieces.push(raw.subarray(from, span.start), Buffer.from(json));
    from = span.end;
  }
  pieces.push(raw.subarray(from));
  return Buffer.concat(pieces);
}
