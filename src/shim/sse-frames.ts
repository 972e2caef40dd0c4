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
