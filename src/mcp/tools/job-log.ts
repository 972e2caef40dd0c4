import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { JOB_FILES } from '../../jobs/store.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { jobIdInput } from './job-id.js';

export function registerJobLogTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'job_log',
    {
      title: 'Job transcript',
      description:
        'The last lines of a job’s human-readable transcript: what the delegate said and thought (excerpts), every tool call and result, errors and retries, and the done line with its figures.',
      inputSchema: {
        job_id: jobIdInput,
        tail_lines: z
          .number()
          .int()
          .min(1)
          .max(2000)
          .optional()
          .describe('How many lines from the end (default 80)'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        const record = await deps.runner.get(args.job_id);
        const text = await deps.store.tail(record.id, JOB_FILES.transcript, args.tail_lines ?? 80);
        return jsonResult({
          id: record.id,
          // The Python original's names for the id and the folder holding the job's files.
          job_id: record.id,
          status: record.status,
          log_dir: deps.store.jobDir(record.id),
          transcript: text,
        });
      }),
  );
}
