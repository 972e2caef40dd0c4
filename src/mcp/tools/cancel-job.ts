import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { summarizeJob } from '../../jobs/record.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { jobIdInput } from './job-id.js';

export function registerCancelJobTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'cancel_job',
    {
      title: 'Cancel a job',
      description:
        'Stop a running job: its Claude Code session is aborted and its process ended; the record and a worktree with changes are kept. A finished job is answered as it is.',
      inputSchema: { job_id: jobIdInput },
      annotations: { destructiveHint: true },
    },
    (args) => answer(async () => jsonResult(summarizeJob(await deps.runner.cancel(args.job_id)))),
  );
}
