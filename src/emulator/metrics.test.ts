import { describe, expect, it } from 'vitest';
import { formatCppDouble } from './metrics.js';

describe('formatCppDouble', () => {
  it.each([
    [0, '0'],
    [9906, '9906'],
    [1.033, '1.033'],
    [9589.5512, '9589.55'],
    [1234567, '1.23457e+06'],
    [0.0000012, '1.2e-06'],
  ])('prints %d as %s like std::cout', (value, text) => {
    expect(formatCppDouble(value)).toBe(text);
  });
});
