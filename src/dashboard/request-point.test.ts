import { describe, expect, it } from 'vitest';
import { requestPoint } from './request-point.js';

const line = (fields: Record<string, unknown>): string =>
  JSON.stringify({
    kind: 'request',
    ts: '2026-12-01T10:00:00.000Z',
    seq: 2,
    method: 'POST',
    path: '/v1/messages?beta=true',
    status: 200,
    ttfb_ms: 10,
    ms: 20,
    usage: { input_tokens: 106, output_tokens: 35, cache_read_input_tokens: 8220 },
    rewrites: ['fold_system'],
    error: null,
    prefix: { kind: 'extends' },
    aborted: false,
    ...fields,
  });

describe('requestPoint', () => {
  it('reads a request line: the whole prompt is the new tokens plus the cached ones', () => {
    expect(requestPoint(line({}))).toEqual({
      seq: 2,
      at: Date.parse('2026-12-01T10:00:00.000Z'),
      path: '/v1/messages?beta=true',
      status: 200,
      ttfb_ms: 10,
      ms: 20,
      prompt_tokens: 8326,
      cached_tokens: 8220,
      output_tokens: 35,
      rewrites: ['fold_system'],
      error: null,
      prefix: 'extends',
      aborted: false,
    });
  });

  it('keeps "not reported" apart from zero: Ollama reports no cache figures', () => {
    const point = requestPoint(
      line({ usage: { input_tokens: 900, output_tokens: 5, cache_read_input_tokens: null } }),
    );
    expect(point?.prompt_tokens).toBe(900);
    expect(point?.cached_tokens).toBeNull();
  });

  it('says why a request failed: the translated error, else its status', () => {
    const translated = requestPoint(
      line({
        status: 400,
        usage: null,
        error: {
          original: 'n_ctx',
          translated: 'prompt is too long: 40000 tokens > 32768 maximum',
        },
      }),
    );
    expect(translated?.error).toBe('prompt is too long: 40000 tokens > 32768 maximum');
    expect(translated?.prompt_tokens).toBeNull();
    expect(requestPoint(line({ status: 502, usage: null }))?.error).toBe('HTTP 502');
  });

  it('reads lines of other versions loosely and skips what is not a request', () => {
    const old = requestPoint(
      JSON.stringify({
        kind: 'request',
        ts: 'x',
        seq: 1,
        status: 200,
        ms: 5,
        prefix: { kind: 'odd' },
      }),
    );
    expect(old).toMatchObject({
      seq: 1,
      at: 0,
      ttfb_ms: null,
      rewrites: [],
      prefix: null,
      path: '',
    });
    expect(requestPoint('{"kind":"note"}')).toBeUndefined();
    expect(requestPoint('not json')).toBeUndefined();
  });
});
