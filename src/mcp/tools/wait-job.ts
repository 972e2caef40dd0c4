import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { JobRecord } from '../../jobs/job.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { jobIdInput } from './job-id.js';
import { MAX_WAIT_S, safeWaitS, waitedSummary } from './run-agent.js';

const HEARTBEAT_MS = 5000;

export function registerWaitJobTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'wait_job',
    {
      title: 'Wait for a job',
      description: `Wait for a job started by run_agent. Returns its summary as soon as the job ends, or after timeout_s (default and most ${MAX_WAIT_S} s: a larger value waits ${MAX_WAIT_S} s) with the job still "running" or "queued" and waited_s saying how long it waited: then call wait_job again with the same job_id. A finished summary has result_text, files_touched and, for worktree jobs, the worktree to review.`,
      inputSchema: {
        job_id: jobIdInput,
        timeout_s: z
          .number()
          .min(0)
          .optional()
          .describe(`Seconds to wait (default ${MAX_WAIT_S}; a larger value waits ${MAX_WAIT_S})`),
      },
      annotations: { readOnlyHint: true },
    },
    (args, extra) =>
      answer(async () => {
        const progressToken = extra._meta?.progressToken;
        let progress = 0;
        let lastText = '';
        const notify = (record: JobRecord, force: boolean): void => {
          if (progressToken === undefined) return;
          const text = `${record.status}: turn ${record.turns}, ${record.tool_calls} tool calls${record.last_activity ? `, ${record.last_activity.text}` : ''}`;
          if (!force && text === lastText) return;
          lastText = text;
          progress += 1;
          extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken, progress, message: text },
            })
            .catch(() => {});
        };
        let latest: JobRecord = await deps.runner.get(args.job_id);
        const heartbeat =
          progressToken === undefined
            ? undefined
            : setInterval(() => notify(latest, true), HEARTBEAT_MS);
        try {
          const waitS = safeWaitS(args.timeout_s, MAX_WAIT_S);
          const record = await deps.runner.wait(args.job_id, waitS * 1000, (update) => {
            latest = update;
            notify(update, false);
          });
          // The warnings came with run_agent's answer; repeating them on every wait costs the caller's context.
          const { warnings: _warnings, ...summary } = waitedSummary(record, waitS);
          return jsonResult(summary);
        } finally {
          clearInterval(heartbeat);
        }
      }),
  );
}
