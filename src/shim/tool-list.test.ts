import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseRequest } from './normalize.js';
import { createToolListCache } from './tool-list.js';

const fixture = JSON.parse(
  readFileSync(
    new URL('../../test/fixtures/claude-code/first-turn-request.json', import.meta.url),
    'utf8',
  ),
) as { body: Record<string, unknown> };
const body = (fields: Record<string, unknown> = {}): Buffer =>
  Buffer.from(JSON.stringify({ ...fixture.body, ...fields }));

describe('createToolListCache', () => {
  it('parses a body sending the last tool list again to what parseRequest gives, the list the same array', () => {
    const cache = createToolListCache();
    const first = cache.parse(body());
    const again = cache.parse(body({ max_tokens: 5 }));
    expect(first.ok && again.ok).toBe(true);
    if (!first.ok || !again.ok) return;
    expect(again).toEqual(parseRequest(body({ max_tokens: 5 })));
    const whole = parseRequest(body({ max_tokens: 5 }));
    expect(whole.ok && JSON.stringify(whole.request)).toBe(JSON.stringify(again.request));
    expect(again.request.tools).toBe(first.request.tools);
    expect(Object.isFrozen(again.request.tools)).toBe(true);
  });

  it('parses a changed tool list anew', () => {
    const cache = createToolListCache();
    const tools = fixture.body.tools as unknown[];
    cache.parse(body());
    const fewer = cache.parse(body({ tools: tools.slice(1) }));
    expect(fewer.ok && fewer.request.tools?.length).toBe(tools.length - 1);
  });

  it.each([
    ['a body cut short', body().subarray(0, 30_000)],
    ['a body whose messages are wrong', body({ messages: [{ role: 'user' }] })],
    ['repeated tools keys', Buffer.from('{"messages":[],"tools":[1],"tools":[2]}')],
    ['no object', Buffer.from('[1]')],
  ])('answers %s exactly as parseRequest does, after the list was seen', (_what, raw) => {
    const cache = createToolListCache();
    cache.parse(body());
    cache.parse(Buffer.from('{"messages":[],"tools":[1]}'));
    cache.parse(Buffer.from('{"messages":[],"tools":[2]}'));
    expect(cache.parse(raw)).toEqual(parseRequest(raw));
  });
});
