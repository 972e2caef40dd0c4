import { z } from 'zod';

/** Job ids as tool input: the shape is checked here, and again (validateJobId) before any path is built. */
export const jobIdInput = z
  .string()
  .regex(
    /^[0-9a-z][0-9a-z-]{0,63}$/,
    'job_id must be a job id such as 20261129-111400-k3f9 (see list_jobs)',
  )
  .describe('Job id from run_agent or list_jobs, e.g. 20261129-111400-k3f9');
