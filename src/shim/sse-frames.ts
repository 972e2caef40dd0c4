import { isRecord } from './fold-system.js';

/** Reading and writing single SSE events (`event: <name>\ndata: <json>\n\n`). */
export const SEPARATOR = Buffer.from('\n\n');
const EVENT_PREFIX = 'event:';

/** `message_start` etc.; ':' for a comment, '' for a data-only event. */
export function eventName(event: Buffer): string {
  if (event[0] === 0x3a) return ':';
  if (event.toString('latin1', 0, EVENT_PREFIX.length) !== EVENT_PREFIX) return '';
  let end = event.indexOf(0x0a);
  if (end === -1) end = event.length;
  return event.toString('latin1', EVENT_PREFIX.length, end).trim();
}

/** The event's data lines, joined. */
export function eventData(event: Buffer): string {
  const lines = event.toString('utf8').split('\n');
  const data: string[] = [];
  for (const line of lines) {
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return data.join('\n');
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
