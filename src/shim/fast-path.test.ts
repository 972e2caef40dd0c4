import { describe, expect, it } from 'vitest';
import { createFastPathScanner, isPlainlyUntouched } from './fast-path.js';
import { normalizeRequest, type NormalizeRoute } from './normalize.js';

const llama: NormalizeRoute = { backend: 'llama.cpp', servedId: 'qwen-test' };

const body = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const plain = (extra: Record<string, unknown> = {}) => ({
  model: 'qwen-test',
  max_tokens: 32000,
  messages: [{ role: 'user', content: 'read "role":"system" aloud' }],
  ...extra,
});

/** The scanner's verdict when the body arrives in `size`-byte chunks. */
function chunked(raw: Buffer, size: number, room?: number): 'clean' | 'rewrite' {
  const scanner = createFastPathScanner(llama, room);
  for (let at = 0; at < raw.length; at += size) scanner.push(raw.subarray(at, at + size));
  return scanner.finish();
}

describe('isPlainlyUntouched', () => {
  it('forwards a plain body without parsing it', () => {
    const raw = body(plain());
    expect(isPlainlyUntouched(raw, llama, undefined)).toBe(true);
    expect(normalizeRequest(raw, llama)).toEqual({ kind: 'untouched' });
  });

  it('is not fooled by a quoted "role":"system" inside a string', () => {
    const raw = body(
      plain({ messages: [{ role: 'user', content: '{"role":"system","content":"x"}' }] }),
    );
    expect(isPlainlyUntouched(raw, llama, undefined)).toBe(true);
  });

  it.each([
    [
      'a system message',
      body(
        plain({
          messages: [
            { role: 'user', content: 'a' },
            { role: 'system', content: 'b' },
          ],
        }),
      ),
    ],
    ['a ctx role', body(plain({ messages: [{ role: 'ctx', content: 'a' }] }))],
    [
      'a pretty-printed system message',
      Buffer.from(JSON.stringify(plain({ messages: [{ role: 'system', content: 'b' }] }), null, 2)),
    ],
    ['a model the backend does not serve', body(plain({ model: 'claude-opus-5-5' }))],
    [
      'the billing header',
      body(
        plain({
          system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332.2ed;' }],
        }),
      ),
    ],
    ['a body that is not an object', Buffer.from('[1,2]')],
  ])('takes the full parse for %s', (_what, raw) => {
    expect(isPlainlyUntouched(raw, llama, undefined)).toBe(false);
    expect(normalizeRequest(raw, llama).kind).not.toBe('untouched');
  });

  it('takes the full parse when max_tokens exceeds the room on vLLM, and not when it fits', () => {
    const raw = body(plain());
    expect(isPlainlyUntouched(raw, llama, 31999)).toBe(false);
    expect(isPlainlyUntouched(raw, llama, 32000)).toBe(true);
  });

  it.each([1, 3, 7, 64, 1000])(
    'reaches the same verdicts when the body arrives in %i-byte chunks',
    (size) => {
      const system = body(
        plain({
          messages: [
            { role: 'user', content: 'a' },
            { role: 'system', content: 'b' },
          ],
        }),
      );
      expect(chunked(body(plain()), size)).toBe('clean');
      expect(chunked(system, size)).toBe('rewrite');
      expect(chunked(body(plain({ model: 'claude-x' })), size)).toBe('rewrite');
      expect(chunked(body(plain()), size, 31999)).toBe('rewrite');
      expect(chunked(body(plain()), size, 32000)).toBe('clean');
      expect(chunked(Buffer.from('{"model":"qwen-test","messages":[{"role":"us'), size)).toBe(
        'rewrite',
      );
    },
  );

  it.each([16384, 16390, 20000, 20003, 20006, 20009])(
    'finds a system message across the seam of big %i-byte chunks',
    (size) => {
      const long = 'x'.repeat(19_950);
      const system = body(
        plain({
          messages: [
            { role: 'user', content: long },
            { role: 'system', content: 'b' },
          ],
        }),
      );
      const clean = body(
        plain({
          messages: [
            { role: 'user', content: long },
            { role: 'assistant', content: 'b' },
          ],
        }),
      );
      expect(chunked(system, size)).toBe('rewrite');
      expect(chunked(clean, size)).toBe('clean');
    },
  );
});
