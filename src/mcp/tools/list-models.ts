import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CLAUDE_CODE_FIXED_PROMPT_TOKENS,
  COMFORTABLE_CONTEXT_TOKENS,
  MIN_JOB_CONTEXT_TOKENS,
} from '../../registry/config-defaults.js';
import { formatConfigIssue } from '../../registry/config-messages.js';
import { raiseWindowHint } from '../../registry/resolve.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';

export function registerListModelsTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'list_models',
    {
      title: 'List local models',
      description:
        'Probe every configured local endpoint (llama.cpp, vLLM, Ollama, LM Studio) now and list what is served: endpoint status, loaded model ids, context window per model, busy slots, models installed but not loaded (with the window they will load with, when known), and the menu of known models with whether each is available. Call this before run_agent to pick a model. Models with a window under 128k tokens get a warning: Claude Code needs a lot of context.',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      answer(async () => {
        const [snapshot, agents, jobs] = await Promise.all([
          deps.registry.snapshot(),
          // A broken agent file is said, not fatal: the models are what this tool is for.
          deps.runner.agents(deps.cwd).catch((error: unknown) => String(error)),
          deps.runner.list(true),
        ]);
        const warnings: string[] = [];
        // An endpoint whose last job ended on a backend error: doctor says what about the server is wrong.
        for (const endpoint of snapshot.endpoints) {
          const last = jobs.records.filter((record) => record.endpoint === endpoint.name).at(-1);
          const kind = last?.error?.kind;
          if (kind === 'backend_config' || kind === 'backend_down' || kind === 'api_error')
            warnings.push(
              `the last job on ${endpoint.name} (${last?.id ?? '?'}) failed on a backend error (${kind}): check the server with localagents doctor --endpoint ${endpoint.name}`,
            );
        }
        for (const endpoint of snapshot.endpoints) {
          for (const [model, window] of Object.entries(endpoint.context)) {
            if (window < COMFORTABLE_CONTEXT_TOKENS) {
              warnings.push(
                window < MIN_JOB_CONTEXT_TOKENS
                  ? `${model} on ${endpoint.name} has a ${window}-token window, too small for a job (at least ${MIN_JOB_CONTEXT_TOKENS}): ${raiseWindowHint(endpoint.backend, model, endpoint.slots?.total ?? 1)}`
                  : `${model} on ${endpoint.name} has a ${window}-token window: Claude Code's own prompt is about ${CLAUDE_CODE_FIXED_PROMPT_TOKENS} tokens and it compacts early; expect weaker results on long tasks`,
              );
            }
          }
        }
        const config = snapshot.config;
        const running = snapshot.endpoints.filter((endpoint) => endpoint.up);
        return jsonResult({
          config: config.ok
            ? {
                ok: true,
                // The files read, lowest layer first: the user's, the project's, the sidecar.
                files: config.config.files,
                warnings: config.warnings.map(formatConfigIssue),
              }
            : { ok: false, files: config.files, issues: config.issues.map(formatConfigIssue) },
          // The Python original's fields: where run_agent works without a cwd, and the model it picks unnamed.
          server_cwd: deps.cwd,
          default_model: config.ok ? (config.config.defaults.model ?? null) : null,
          endpoints: snapshot.endpoints,
          models: snapshot.models,
          // The user's Claude Code subagents (.claude/agents/) that run_agent agent: NAME can run here.
          agents,
          warnings,
          next:
            running.length > 0
              ? 'call run_agent with model set to a served id or menu name (or leave it out for the default)'
              : 'no endpoint is up: ask the user to start a model server (see the menu notes and hosts above), then call list_models again',
        });
      }),
  );
}
