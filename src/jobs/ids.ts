import { randomBytes } from 'node:crypto';
import { LocalAgentsError } from '../errors.js';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
/** Lower-case letters, digits and inner dashes: safe as a directory name and in `local-agent/<id>`. */
export const JOB_ID_PATTERN = /^[0-9a-z](?:[0-9a-z-]{0,62}[0-9a-z])?$/;

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

/**
 * `YYYYMMDD-HHMMSS-xxxx` in UTC: sorts by creation time as a plain string, reads as a date, and the four
 * random base-36 characters keep two jobs started in the same second apart.
 */
export function createJobId(now: Date = new Date()): string {
  const date = `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}`;
  const time = `${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}`;
  const suffix = [...randomBytes(4)].map((byte) => ALPHABET[byte % 36] ?? '0').join('');
  return `${date}-${time}-${suffix}`;
}

export function isJobId(value: string): boolean {
  return JOB_ID_PATTERN.test(value);
}

/** Every id that comes from outside (tool argument, CLI argument) passes here before it touches a path. */
export function validateJobId(value: string, argument = 'job_id'): string {
  if (!isJobId(value)) {
    throw new LocalAgentsError('BAD_ARGUMENT', `${argument} "${value}" is not a job id`, {
      hint: 'job ids look like 20261129-111400-k3f9; list them with list_jobs or `localagents jobs`',
    });
  }
  return value;
}
