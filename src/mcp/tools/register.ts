import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { backendKindOf } from '../../kinds.js';
import { answer, errorResult, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';

const entryName = z
  .string()
  .min(1)
  .describe(
    'Name of the entry: letters, digits and . _ : / @ + -, starting with a letter or digit',
  );

export function registerRegisterEndpointTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'register_endpoint',
    {
      title: 'Register a local endpoint',
      description:
        'Add or replace a model server endpoint in models.local.yaml (never the user’s models.yaml). Use it when the user tells you where a llama-server, vLLM, Ollama or LM Studio runs. Same-named entries of models.yaml are replaced.',
      inputSchema: {
        name: entryName,
        base_url: z
          .string()
          .describe('Base URL of the server, e.g. http://127.0.0.1:8080 (no /v1)'),
        backend: z
          .string()
          .refine((value) => backendKindOf(value) !== undefined, {
            message: 'backend must be one of llama.cpp, vllm, ollama, lmstudio, other',
          })
          .optional()
          .describe('Server kind: llama.cpp, vllm, ollama, lmstudio or other ("other" detects it)'),
        host: z
          .string()
          .optional()
          .describe('Machine or person to ask when the server must be started'),
        notes: z.string().optional().describe('Free text for whoever starts it'),
        api_key_env: z
          .string()
          .optional()
          .describe('Name of the environment variable that holds the API key (never the key)'),
        max_concurrent: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe(
            'Parallel requests the server takes, when it cannot tell (Ollama: its OLLAMA_NUM_PARALLEL)',
          ),
      },
    },
    (input) =>
      answer(async () => {
        const result = await deps.registry.registerEndpoint(input);
        if (result.kind === 'invalid')
          return errorResult(
            result.message,
            'fix the fields named above and call again',
            'CONFIG_INVALID',
          );
        // Probed at once, as the Python original did: the answer says whether it is up and what it serves.
        const probe = await deps.registry.probeEndpoint(result.name);
        return jsonResult({
          ok: true,
          endpoint: result.name,
          config: result.file,
          ...result,
          probe: probe ?? null,
          next: probe?.up
            ? 'call run_agent or list_models: it is up'
            : 'it is not answering: ask the user to start the server, then call list_models',
        });
      }),
  );
}

export function registerRegisterModelTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'register_model',
    {
      title: 'Register a model in the menu',
      description:
        'Add or replace a model in the menu (models.local.yaml): its notes, host and how to bring it up, so that when it is not running the answer tells the user what to start.',
      inputSchema: {
        name: entryName,
        notes: z.string().optional().describe('What the model is good at, and how it must be run'),
        host: z.string().optional().describe('Machine or person that runs it'),
        served_name: z
          .string()
          .optional()
          .describe('Exact served id or glob when the name does not match it'),
        endpoint: z.string().optional().describe('Endpoint name that serves it'),
        context: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Context window override in tokens'),
        bring_up: z.string().optional().describe('Command or instruction that starts it'),
        tags: z
          .array(z.string().min(1))
          .optional()
          .describe('Labels shown in list_models, e.g. ["coding", "tools"]'),
      },
    },
    (input) =>
      answer(async () => {
        const result = await deps.registry.registerModel(input);
        if (result.kind === 'invalid')
          return errorResult(
            result.message,
            'fix the fields named above and call again',
            'CONFIG_INVALID',
          );
        return jsonResult({
          ok: true,
          model: result.name,
          config: result.file,
          ...result,
          next: 'call list_models to see whether it is running',
        });
      }),
  );
}
