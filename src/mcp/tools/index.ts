import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpDeps } from '../server.js';
import { registerCancelJobTool } from './cancel-job.js';
import { registerJobDiffTool } from './job-diff.js';
import { registerJobLogTool } from './job-log.js';
import { registerJobStatusTool } from './job-status.js';
import { registerListJobsTool } from './list-jobs.js';
import { registerListModelsTool } from './list-models.js';
import { registerLocalCompleteTool } from './local-complete.js';
import { registerRegisterEndpointTool, registerRegisterModelTool } from './register.js';
import { registerRunAgentTool } from './run-agent.js';
import { registerWaitJobTool } from './wait-job.js';

export function registerTools(server: McpServer, deps: McpDeps): void {
  registerListModelsTool(server, deps);
  registerRegisterEndpointTool(server, deps);
  registerRegisterModelTool(server, deps);
  registerRunAgentTool(server, deps);
  registerWaitJobTool(server, deps);
  registerJobStatusTool(server, deps);
  registerJobLogTool(server, deps);
  registerListJobsTool(server, deps);
  registerCancelJobTool(server, deps);
  registerJobDiffTool(server, deps);
  registerLocalCompleteTool(server, deps);
}
