import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { JobStore } from '../jobs/store.js';
import type { Runner } from '../jobs/runner.js';
import type { Registry } from '../registry/registry.js';
import { packageVersion } from '../version.js';
import { answerBadArguments } from './tool-arguments.js';
import { registerTools } from './tools/index.js';

export interface McpDeps {
  registry: Registry;
  runner: Runner;
  store: JobStore;
  /** Where run_agent runs when the call gives no cwd: the server's working directory. */
  cwd: string;
  /** Resolves once the parts above may be used; tools/call waits for it (see lateDeps). */
  ready?: Promise<unknown>;
}

type AppParts = Pick<McpDeps, 'registry' | 'runner' | 'store'>;

/**
 * Deps whose parts are still loading. `serve` answers the MCP handshake and tools/list (which need only
 * the tool schemas) while the registry, runner and job store load: Claude Code sends its first model
 * request after about a second whether or not a stdio server has answered, and a server that misses it
 * is invisible for that turn. tools/call waits for `ready` before a handler reads a part.
 */
export function lateDeps(parts: Promise<AppParts>, cwd: string): McpDeps {
  let loaded: AppParts | undefined;
  const ready = parts.then((value) => {
    loaded = value;
  });
  // A failed start is answered by each tools/call (which awaits ready), never an unhandled rejection.
  ready.catch(() => {});
  const part = <K extends keyof AppParts>(key: K): AppParts[K] => {
    if (!loaded) throw new Error(`localagents is still starting: ${key} is not loaded yet`);
    return loaded[key];
  };
  return {
    cwd,
    ready,
    get registry() {
      return part('registry');
    },
    get runner() {
      return part('runner');
    },
    get store() {
      return part('store');
    },
  };
}

/**
 * Claude Code shows these above its deferred-tool list, where the model sees our tools by name only
 * (`mcp__<name the user registered>__run_agent`), so they must stand on their own. Tools are named by
 * their bare names, which are the suffix of the full ones, so a model finds them under either.
 */
export const SERVER_INSTRUCTIONS = `localagents hands routine coding work to a model on the user's own hardware (llama.cpp, vLLM, Ollama or LM Studio). Each job is a full headless Claude Code session in a directory you name, with file and shell tools, driven by the local model: slower and less reliable than you, but free and private.

Delegate: well-specified, checkable work — edits across files, writing tests, boilerplate, mechanical refactors, running and fixing a build. Keep for yourself: design decisions, subtle debugging, anything needing this conversation's context, and changes you could not review.

The tools may be deferred (listed by name only). Load them before the first call with ToolSearch, query "select:" plus the full names as listed, e.g. select:mcp__local__run_agent,mcp__local__wait_job (use the server name from your list, not necessarily "local").

Workflow:
1. run_agent: a self-contained brief (goal, files, constraints, the command that verifies it: pass it as verify too, and the job checks its own work) and cwd = the absolute path of the project you are working in. In a git repository pass isolation "worktree" (recommended; the default "none" edits cwd directly): the job works on branch local-agent/<job> in its own worktree and your tree stays untouched. list_models shows which models run and their windows.
2. wait_job with the job id: it returns within 110 s; while the status is "running" or "queued" (waiting for a free slot: its queue says where), call it again.
3. Review before you accept: job_diff (worktree jobs) or files_touched, run the tests yourself; then merge_job takes a kept worktree's work into your branch, discard_job throws it away. failed_verification: the verify command failed; its output is in the answer. job_log shows what the job did.

Treat every result as a draft. possible_no_op: true means it probably did nothing. If run_agent answers that a model is not running, ask the user to start it (the answer says which, where, and the notes) instead of retrying. local_complete: one-shot text (summaries, names, boilerplate) without tools.`;

/** A new MCP server with every tool registered; no transport (serve.ts and the tests connect one). */
export function createMcpServer(deps: McpDeps): McpServer {
  const server = new McpServer(
    { name: 'localagents', version: packageVersion() },
    { instructions: SERVER_INSTRUCTIONS, capabilities: { tools: {}, logging: {} } },
  );
  answerBadArguments(server, registerTools(server, deps), deps.ready);
  return server;
}
