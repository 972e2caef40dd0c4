import { z } from 'zod';
import { JOB_ID_PATTERN } from '../../jobs/ids.js';

/** Job ids as tool input: the shape (the one pattern, jobs/ids.ts) is checked here, and again before any path is built. */
export const jobIdInput = z
  .string()
  .regex(JOB_ID_PATTERN, 'job_id must be a job id such as 20261129-111400-k3f9 (see list_jobs)')
  .describe('Job id from run_agent or list_jobs, e.g. 20261129-111400-k3f9');
