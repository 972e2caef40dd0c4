import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { summarizeJob } from '../../jobs/record.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { jobIdInput } from './job-id.js';

export function registerJobStatusTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'job_status',
    {
      title: 'Job status',
      description:
        'The current state of a job without waiting: the summary plus token usage, backend figures (requests, cache hit rate, speeds), the record directory and, for a kept worktree, the git commands to see, merge or drop it.',
      inputSchema: { job_id: jobIdInput },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        const record = await deps.runner.get(args.job_id);
        return jsonResult({
          ...summarizeJob(record),
          created_at: record.created_at,
          started_at: record.started_at,
          finished_at: record.finished_at,
          session_id: record.session_id,
          context_tokens: record.context_tokens,
          terminal_reason: record.terminal_reason,
          usage: record.usage,
          backend: record.backend,
          record_dir: deps.store.jobDir(record.id),
          ...(record.worktree?.review ? { review: record.worktree.review } : {}),
        });
      }),
  );
}
