import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpDeps } from '../server.js';
import { registerCancelJobTool } from './cancel-job.js';
import { registerJobDiffTool } from './job-diff.js';
import { registerJobLogTool } from './job-log.js';
import { registerJobStatusTool } from './job-status.js';
import { registerListJobsTool } from './list-jobs.js';
import { registerListModelsTool } from './list-models.js';
import { registerLocalCompleteTool } from './local-complete.js';
import { registerDiscardJobTool, registerMergeJobTool } from './merge-job.js';
import { registerRegisterEndpointTool, registerRegisterModelTool } from './register.js';
import { registerRequestModelTool } from './request-model.js';
import { registerRunAgentTool } from './run-agent.js';
import { registerWaitJobTool } from './wait-job.js';

/** Registers every tool; returns them by name (answerBadArguments dispatches to them). */
export function registerTools(server: McpServer, deps: McpDeps): Map<string, RegisteredTool> {
  return new Map([
    ['list_models', registerListModelsTool(server, deps)],
    ['request_model', registerRequestModelTool(server, deps)],
    ['register_endpoint', registerRegisterEndpointTool(server, deps)],
    ['register_model', registerRegisterModelTool(server, deps)],
    ['run_agent', registerRunAgentTool(server, deps)],
    ['wait_job', registerWaitJobTool(server, deps)],
    ['job_status', registerJobStatusTool(server, deps)],
    ['job_log', registerJobLogTool(server, deps)],
    ['list_jobs', registerListJobsTool(server, deps)],
    ['cancel_job', registerCancelJobTool(server, deps)],
    ['job_diff', registerJobDiffTool(server, deps)],
    ['merge_job', registerMergeJobTool(server, deps)],
    ['discard_job', registerDiscardJobTool(server, deps)],
    ['local_complete', registerLocalCompleteTool(server, deps)],
  ]);
}
