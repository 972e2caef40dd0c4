import { describe, expect, it } from 'vitest';
import { isJobId } from '../../jobs/ids.js';
import { jobIdInput } from './job-id.js';

describe('jobIdInput', () => {
  it.each(['20261129-090503-ab12', 'x', 'a-b', '-x', 'x-', 'UPPER', 'a/b', '', 'a'.repeat(65)])(
    'accepts %j exactly when the runner would (one pattern)',
    (value) => {
      expect(jobIdInput.safeParse(value).success).toBe(isJobId(value));
    },
  );

  it('rejects a trailing dash, which no job id has', () => {
    expect(jobIdInput.safeParse('20261129-090503-').success).toBe(false);
  });
});
