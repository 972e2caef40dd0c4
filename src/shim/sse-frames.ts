import { isRecord } from './fold-system.js';

/** Reading and writing single SSE events (`event: <name>\ndata: <json>\n\n`). */
export const SEPARATOR = Buffer.from('\n\n');
const EVENT_PREFIX = Buffer.from('event:');
const DATA_PREFIX = Buffer.from('data:');

/** `prefix` is at `at` in `bytes`. */
export function startsWithAt(bytes: Buffer, at: number, prefix: Buffer): boolean {
  if (at + prefix.length > bytes.length) return false;
  for (let index = 0; index < prefix.length; index++) {
    if (bytes[at + index] !== prefix[index]) return false;
  }
  return true;
}

/** `message_start` etc.; ':' for a comment, '' for a data-only event. */
export function eventName(event: Buffer): string {
  if (event[0] === 0x3a) return ':';
  if (!startsWithAt(event, 0, EVENT_PREFIX)) return '';
  let end = event.indexOf(0x0a);
  if (end === -1) end = event.length;
  return event.toString('latin1', EVENT_PREFIX.length, end).trim();
}

/**
 * The event's data lines, joined. Each line is decoded on its own, in place: a line ends at a newline byte, which
 * no UTF-8 sequence holds, so this is the text of the whole event split into lines.
 */
export function eventData(event: Buffer): string {
  let joined: string | undefined;
  for (let at = 0; at < event.length;) {
    let end = event.indexOf(0x0a, at);
    if (end === -1) end = event.length;
    if (startsWithAt(event, at, DATA_PREFIX)) {
      const from = at + DATA_PREFIX.length + (event[at + DATA_PREFIX.length] === 0x20 ? 1 : 0);
      const line = event.toString('utf8', from, end);
      joined = joined === undefined ? line : `${joined}\n${line}`;
    }
    at = end + 1;
  }
  return joined ?? '';
}

export function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function frame(name: string, data: unknown): Buffer {
  return Buffer.from(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

export const num = (value: unknown): number | undefined =>
  typeof value === 'number' ? value : undefined;

/** An event in one of llama-server's own forms, read without a parse (see knownEvent). */
export type KnownEvent =
  | { kind: 'message_start'; input: number; output: number; cached: number }
  | { kind: 'message_delta'; stopReason: string; output: number }
  | { kind: 'content_block_start' }
  | { kind: 'message_stop' };

/** A JSON string without escapes or control characters, and a JSON integer (15 digits at most: exact). */
const STRING = String.raw`"([^"\\\u0000-\u001f]*)"`;
const INTEGER = String.raw`(0|[1-9]\d{0,14})`;
/** The data of each known form, unanchored: knownEvent matches one event's data, UNTOUCHED_RUN a whole chunk. */
const KNOWN_DATA = {
  message_start: String.raw`\{"type":"message_start","message":\{"id":${STRING},"type":"message","role":"assistant","content":\[\],"model":${STRING},"stop_reason":null,"stop_sequence":null,"usage":\{"cache_read_input_tokens":${INTEGER},"input_tokens":${INTEGER},"output_tokens":${INTEGER}\}\}\}`,
  message_delta: String.raw`\{"type":"message_delta","delta":\{"stop_reason":${STRING},"stop_sequence":null\},"usage":\{"output_tokens":${INTEGER}\}\}`,
  content_block_start: String.raw`\{"type":"content_block_start","index":${INTEGER},"content_block":\{"type":"(text|thinking)","(text|thinking)":""\}\}`,
  message_stop: String.raw`\{"type":"message_stop"\}`,
};
const KNOWN_FORMS: Record<string, RegExp> = Object.fromEntries(
  Object.entries(KNOWN_DATA).map(([name, data]) => [name, new RegExp(`^${data}$`)]),
);

/** One whole event as llama-server frames it: `event: <name>\ndata: <data>\n\n`. */
const framed = (name: string, data: string): string =>
  String.raw`event: ${name}\ndata: ${data.replace(/\((?!\?)/g, '(?:')}\n\n`;
/** A delta or block stop whose data looks like JSON at both ends, as isPlainEvent in sse.ts accepts it. */
const PLAIN = String.raw`event: content_block_(?:delta|stop)\ndata: \{"type":"content_block_[^\n\r]*\}\n\n`;
const AFTER_START = [
  PLAIN,
  framed('content_block_start', KNOWN_DATA.content_block_start),
  framed('message_delta', KNOWN_DATA.message_delta),
  framed('message_stop', KNOWN_DATA.message_stop),
  String.raw`event: ping\ndata: [^\n\r]*\n\n`,
  String.raw`:[^\n\r]*\n\n`,
].join('|');

/**
 * A chunk of whole events, each in a form the side-reader passes on unchanged (no repair, no error, nothing held):
 * the first chunk of a stream opens with llama-server's message_start; a later one may hold pings and comments.
 * One native regular-expression match per chunk, so the relay can write it before reading it event by event.
 */
export const UNTOUCHED_RUN = {
  first: new RegExp(
    String.raw`^${framed('message_start', KNOWN_DATA.message_start)}(?:${AFTER_START})*$`,
  ),
  later: new RegExp(String.raw`^(?:${AFTER_START})+$`),
};

/**
 * The data of a message_start, message_delta, text or thinking content_block_start or message_stop exactly as
 * llama-server writes it (fixtures/llama.cpp A12), read by one anchored match instead of a parse: a match is valid
 * JSON whose every member is known, so what it says is what the parse would say. Undefined for any other form,
 * which the caller parses. On a small answer these four are the only events the side-reader looks into.
 */
export function knownEvent(name: string, data: string): KnownEvent | undefined {
  const match = KNOWN_FORMS[name]?.exec(data);
  if (!match) return undefined;
  if (name === 'message_start')
    return {
      kind: 'message_start',
      cached: Number(match[3]),
      input: Number(match[4]),
      output: Number(match[5]),
    };
  if (name === 'message_delta')
    return { kind: 'message_delta', stopReason: match[1] ?? '', output: Number(match[2]) };
  return name === 'content_block_start'
    ? { kind: 'content_block_start' }
    : { kind: 'message_stop' };
}
