import type { NormalizeRoute } from './normalize.js';

/**
 * Decides from the raw bytes, without parsing, that a body needs no rewrite, so it can be forwarded as it arrives
 * (JSON.parse alone of 1 MB costs 10+ ms on a busy 2-core box, twice the TTFB budget). Fed chunk by chunk, so the
 * relay can stream a body to the backend while it is still arriving. Every check errs towards "rewrite": a false
 * alarm only costs the full parse. Quotes inside JSON strings are escaped (`\"role\"`), so the literal `"role"`
 * only ever matches a real key.
 */
export interface FastPathScanner {
  /** 'rewrite' as soon as the bytes so far show the body may need one. */
  push(chunk: Buffer): 'clean' | 'rewrite';
  /** After the last chunk: 'clean' when the whole body certainly needs no rewrite. */
  finish(): 'clean' | 'rewrite';
}

const ROLE_KEY = Buffer.from('"role"');
const MAX_TOKENS_KEY = Buffer.from('"max_tokens"');
const BILLING = Buffer.from('x-anthropic-billing-header');
const MODEL_PREFIX = '{"model":"';
/** Chunks at least this big are scanned in place. */
const BIG_CHUNK = 16 * 1024;
/** How much of the start is kept to read `model` from. */
const HEAD_BYTES = 512;
/** Bytes kept from one window to the next so a key split across chunks is still seen. */
const OVERLAP = 64;
const EMPTY = Buffer.alloc(0);

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** The position after `"key"` `:` and any whitespace; -1 if malformed, `length` if the window ends first. */
function valueStart(window: Buffer, afterKey: number): number {
  let at = afterKey;
  while (isSpace(window[at])) at++;
  if (at >= window.length) return window.length;
  if (window[at] !== 0x3a) return -1;
  at++;
  while (isSpace(window[at])) at++;
  return at;
}

type Check = { kind: 'clean' } | { kind: 'rewrite' } | { kind: 'incomplete'; from: number };

/** Every role value is user or assistant (`ctx`, `msg` and `system` need rewriting). */
function checkRoles(window: Buffer): Check {
  for (let at = window.indexOf(ROLE_KEY); at !== -1; at = window.indexOf(ROLE_KEY, at + 1)) {
    const start = valueStart(window, at + ROLE_KEY.length);
    if (start === -1) return { kind: 'rewrite' };
    if (start >= window.length) return { kind: 'incomplete', from: at };
    if (window[start] !== 0x22) return { kind: 'rewrite' };
    const end = window.indexOf(0x22, start + 1);
    if (end === -1) return { kind: 'incomplete', from: at };
    const role = window.toString('latin1', start + 1, end);
    if (role !== 'user' && role !== 'assistant') return { kind: 'rewrite' };
  }
  return { kind: 'clean' };
}

/** Every `"max_tokens": N` (the real one is among them) already fits `room`. */
function checkMaxTokens(window: Buffer, room: number): Check {
  for (
    let at = window.indexOf(MAX_TOKENS_KEY);
    at !== -1;
    at = window.indexOf(MAX_TOKENS_KEY, at + 1)
  ) {
    const start = valueStart(window, at + MAX_TOKENS_KEY.length);
    if (start === -1) return { kind: 'rewrite' };
    let end = start;
    while (end < window.length && (window[end] ?? 0) >= 0x30 && (window[end] ?? 0) <= 0x39) end++;
    if (end >= window.length) return { kind: 'incomplete', from: at };
    if (end === start || Number(window.toString('latin1', start, end)) > room)
      return { kind: 'rewrite' };
  }
  return { kind: 'clean' };
}

/** Claude Code writes `model` first; any other layout takes the full parse. */
function checkModel(head: Buffer, route: NormalizeRoute): Check {
  const prefix = head.toString('latin1', 0, MODEL_PREFIX.length);
  if (!MODEL_PREFIX.startsWith(prefix)) return { kind: 'rewrite' };
  const end = prefix === MODEL_PREFIX ? head.indexOf(0x22, MODEL_PREFIX.length) : -1;
  if (end === -1) return { kind: 'incomplete', from: 0 };
  const model = head.toString('utf8', MODEL_PREFIX.length, end);
  const served = model === route.servedId || (route.servedIds?.includes(model) ?? false);
  return served ? { kind: 'clean' } : { kind: 'rewrite' };
}

/** `room` is the output room on backends that need max_tokens clamped (undefined: no clamp). */
export function createFastPathScanner(
  route: NormalizeRoute,
  room: number | undefined,
): FastPathScanner {
  let verdict: 'clean' | 'rewrite' = 'clean';
  let head: Buffer | undefined = EMPTY;
  let carry: Buffer = EMPTY;
  let last: Buffer = EMPTY;

  function checksOf(window: Buffer): Array<Check | undefined> {
    return [checkRoles(window), room === undefined ? undefined : checkMaxTokens(window, room)];
  }

  function scan(chunk: Buffer): void {
    if (head) {
      // The model is in the first bytes; copying more than that of a 1 MB chunk would cost milliseconds, and the
      // first chunk (usually the whole body) is read in place.
      const more = chunk.subarray(0, HEAD_BYTES - head.length);
      head = head.length === 0 ? more : Buffer.concat([head, more]);
      const model = checkModel(head, route);
      if (model.kind === 'rewrite' || (model.kind === 'incomplete' && head.length >= HEAD_BYTES))
        verdict = 'rewrite';
      if (model.kind !== 'incomplete') head = undefined;
    }
    let window = chunk;
    if (carry.length > 0 && chunk.length < BIG_CHUNK) {
      window = Buffer.concat([carry, chunk]);
    } else if (carry.length > 0) {
      // A big chunk is checked in place and only the seam (the kept tail of the previous chunk + the start of
      // this one) on a small copy: copying every chunk would cost a millisecond per MB. A value running past
      // the seam needs absurd whitespace: the full parse can have that one.
      const seam = Buffer.concat([carry, chunk.subarray(0, OVERLAP)]);
      if (
        seam.includes(BILLING) ||
        checksOf(seam).some((check) => check && check.kind !== 'clean')
      ) {
        verdict = 'rewrite';
      }
    }
    if (window.includes(BILLING)) verdict = 'rewrite';
    let keepFrom = Math.max(0, window.length - OVERLAP);
    for (const check of checksOf(window)) {
      if (check?.kind === 'rewrite') verdict = 'rewrite';
      if (check?.kind === 'incomplete') keepFrom = Math.min(keepFrom, check.from);
    }
    // A view, not a copy: the receiver keeps every chunk of the body until it is done anyway.
    carry = window.subarray(keepFrom);
    last = chunk.length > 0 ? chunk : last;
  }

  return {
    push(chunk) {
      if (verdict === 'clean') scan(chunk);
      return verdict;
    },
    finish() {
      if (verdict === 'rewrite' || head !== undefined) return 'rewrite';
      // A key whose value never completed: malformed, for the full parse to refuse.
      if (checkRoles(carry).kind !== 'clean') return 'rewrite';
      if (room !== undefined && checkMaxTokens(carry, room).kind !== 'clean') return 'rewrite';
      // A body that is not a JSON object is for the full parse to refuse.
      let end = last.length - 1;
      while (end >= 0 && isSpace(last[end])) end--;
      return last[end] === 0x7d ? 'clean' : 'rewrite';
    },
  };
}

export function isPlainlyUntouched(
  raw: Buffer,
  route: NormalizeRoute,
  room: number | undefined,
): boolean {
  const scanner = createFastPathScanner(route, room);
  return scanner.push(raw) === 'clean' && scanner.finish() === 'clean';
}
