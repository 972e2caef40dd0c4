import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { MERGE_STRATEGIES } from '../../jobs/merge.js';
import { summarizeJob } from '../../jobs/record.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { jobIdInput } from './job-id.js';

/** The worktree's outcome after merge_job or discard_job, as the caller needs it: where the work went. */
function outcomeOf(record: Awaited<ReturnType<McpDeps['runner']['merge']>>) {
  return { ...summarizeJob(record), merged: record.worktree?.merged ?? null };
}

export function registerMergeJobTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'merge_job',
    {
      title: 'Merge a worktree job',
      description:
        'Take a finished worktree job\'s work: its uncommitted changes are committed on its branch (your git identity, trailers naming the job and model), merged into the branch the job started from ("merge": a merge commit; "squash": one commit; "cherry-pick": its commits replayed), then its worktree and branch are removed. Refused, with nothing changed, when that branch is not checked out, when the work conflicts with it, or when your uncommitted changes touch the same files.',
      inputSchema: {
        job_id: jobIdInput,
        strategy: z
          .enum(MERGE_STRATEGIES)
          .optional()
          .describe('merge (default), squash or cherry-pick'),
        message: z
          .string()
          .trim()
          .min(1)
          .optional()
          .describe('Commit message (default: "local-agent <job>: <the task\'s first line>")'),
      },
      annotations: { destructiveHint: true },
    },
    (args) =>
      answer(async () =>
        jsonResult(
          outcomeOf(await deps.runner.merge(args.job_id, args.strategy ?? 'merge', args.message)),
        ),
      ),
  );
}

export function registerDiscardJobTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'discard_job',
    {
      title: 'Discard a worktree job',
      description:
        "Throw away a finished worktree job's work: its worktree and branch are removed; its record stays.",
      inputSchema: { job_id: jobIdInput },
      annotations: { destructiveHint: true },
    },
    (args) => answer(async () => jsonResult(outcomeOf(await deps.runner.discard(args.job_id)))),
  );
}
