import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { JobStore } from '../jobs/store.js';
import type { Runner } from '../jobs/runner.js';
import type { Registry, Resolution } from '../registry/registry.js';
import { answerBadArguments } from './tool-arguments.js';
import { registerTools } from './tools/index.js';

export interface McpDeps {
  registry: Registry;
  runner: Runner<Resolution>;
  store: JobStore;
  /** Where run_agent runs when the call gives no cwd: the server's working directory. */
  cwd: string;
}

export const SERVER_INSTRUCTIONS = `localagents runs routine coding tasks on a model served on the user's own hardware (llama.cpp or vLLM): each job is a full headless Claude Code session with its own tools, driven by the local model.

Workflow:
1. list_models: see which local models are running and their context windows.
2. run_agent with a self-contained brief (files, goal, how to verify). Prefer isolation "worktree" in a git repository: the job works on its own branch and the user's tree is untouched.
3. wait_job (returns within 110 s; call it again while the job runs), or job_status / job_log to follow it.
4. Review the result yourself: files_touched, or job_diff for a worktree job, then run the tests. Merge or drop a kept worktree with the commands in its record.

Local models are less reliable than you: treat every result as a draft to verify, never as done. A job flagged possible_no_op probably did nothing. If no running model fits, or run_agent answers that the model is not running, ask the user to start it (the answer quotes the notes and the host) instead of retrying. Use local_complete for one-shot text (summaries, naming, boilerplate) without tools.`;

/** A new MCP server with every tool registered; no transport (serve.ts and the tests connect one). */
export function createMcpServer(deps: McpDeps): McpServer {
  const server = new McpServer(
    { name: 'localagents', version: '0.1.0' },
    { instructions: SERVER_INSTRUCTIONS, capabilities: { tools: {}, logging: {} } },
  );
  answerBadArguments(server, registerTools(server, deps));
  return server;
}
