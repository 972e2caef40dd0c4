import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { notReadyResult } from './not-ready.js';

/** request_model, as the Python original had it: is this model up, where, served as what; else whom to ask. */
export function registerRequestModelTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'request_model',
    {
      title: 'Is a model running?',
      description:
        'Whether a model (menu name, served id or part of one) runs now: available, on which endpoint, served as what and with which window; if not, what to relay to the user to bring it up (host, notes, start command). Starts nothing.',
      inputSchema: {
        model: z
          .string()
          .trim()
          .min(1, 'model must name a model')
          .describe('Menu name or served id (from list_models), e.g. qwen3.8-27b'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        const resolution = await deps.registry.resolve({ model: args.model });
        if (resolution.kind !== 'ready') return notReadyResult(resolution);
        return jsonResult({
          available: true,
          model: args.model,
          endpoint: resolution.endpoint.name,
          served_model: resolution.servedId,
          ...(resolution.contextTokens === undefined ? {} : { context: resolution.contextTokens }),
          ...(resolution.endpoint.host === undefined ? {} : { host: resolution.endpoint.host }),
        });
      }),
  );
}
