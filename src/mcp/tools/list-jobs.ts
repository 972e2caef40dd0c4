import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';

export function registerListJobsTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'list_jobs',
    {
      title: 'List jobs',
      description:
        'Jobs in the state directory, newest first, finished ones included (include_finished: false for running ones only). Jobs survive server restarts; a job whose server died shows as interrupted.',
      inputSchema: {
        include_finished: z
          .boolean()
          .optional()
          .describe('List finished jobs too (default true, as in the Python original)'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(500)
          .optional()
          .describe('At most this many jobs (default 50)'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        const listing = await deps.runner.list(args.include_finished ?? true);
        const records = listing.records.reverse();
        const jobs = records.slice(0, args.limit ?? 50).map((record) => ({
          id: record.id,
          status: record.status,
          task: record.task.length > 120 ? `${record.task.slice(0, 120)}…` : record.task,
          model: record.served_model ?? record.requested_model,
          created_at: record.created_at,
          isolation: record.isolation,
          files_touched: record.files_touched.length,
          possible_no_op: record.possible_no_op,
          // Where a waiting job stands, and why (scheduler.ts).
          ...(record.status === 'queued' && record.queue
            ? { queue: { position: record.queue.position, reason: record.queue.reason } }
            : {}),
        }));
        return jsonResult({
          jobs,
          total: records.length,
          // Listed, never hiding the others: which job, which file, what to do.
          ...(listing.damaged.length > 0 ? { damaged: listing.damaged } : {}),
        });
      }),
  );
}
