import { describe, expect, it } from 'vitest';
import { createJobId, isJobId, validateJobId } from './ids.js';

describe('createJobId', () => {
  it('makes ids that sort by creation time and are valid job ids', () => {
    const early = createJobId(new Date('2026-11-29T09:05:03Z'));
    const late = createJobId(new Date('2026-11-29T10:00:00Z'));
    expect(early).toMatch(/^20261129-090503-[0-9a-z]{4}$/);
    expect(early < late).toBe(true);
    expect(isJobId(early)).toBe(true);
  });
});

describe('validateJobId', () => {
  it.each(['../etc', 'a/b', '', 'UPPER', '-x', 'x-', 'a b', '..'])('rejects %j', (value) => {
    expect(() => validateJobId(value)).toThrow(/is not a job id/);
  });

  it('returns a valid id unchanged', () => {
    expect(validateJobId('20261129-090503-ab12')).toBe('20261129-090503-ab12');
  });
});
