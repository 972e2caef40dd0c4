import { describe, expect, it } from 'vitest';
import { redactUrl } from './redact.js';

describe('redactUrl', () => {
  it.each([
    ['http://user:s3cret@10.0.0.2:8000', 'http://***@10.0.0.2:8000'],
    ['https://token@gpu.lan/v1', 'https://***@gpu.lan/v1'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['http://127.0.0.1:8080/', 'http://127.0.0.1:8080/'],
    ['not a url://a:b@c', 'not a url://a:b@c'],
    ['http://a:b@[bad', 'http://***@[bad'],
  ])('shows %s as %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });
});
