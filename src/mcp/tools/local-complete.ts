import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { notReadyResult } from './not-ready.js';

export function registerLocalCompleteTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'local_complete',
    {
      title: 'One-shot local completion',
      description:
        'Send one prompt to a local model and get its text back: no tools, no files, no session. For summaries, drafts, naming, classification and boilerplate where a cheap answer is enough. Same model resolution as run_agent.',
      inputSchema: {
        prompt: z
          .string()
          .min(1, 'prompt must not be empty')
          .describe('The whole request; the model sees nothing else'),
        model: z
          .string()
          .optional()
          .describe('Served model id or menu name (default as in run_agent)'),
        endpoint: z
          .string()
          .optional()
          .describe('Endpoint name, when the same model runs on several'),
        system: z.string().optional().describe('System prompt'),
        max_tokens: z
          .number()
          .int()
          .min(1)
          .max(32_768)
          .optional()
          .describe('Most tokens to generate (default 4096, as in the Python original)'),
        temperature: z
          .number()
          .min(0)
          .max(2)
          .optional()
          .describe('Sampling temperature (default: the server’s)'),
      },
    },
    (args) =>
      answer(async () => {
        const outcome = await deps.runner.complete({
          prompt: args.prompt,
          model: args.model,
          endpoint: args.endpoint,
          system: args.system,
          maxTokens: args.max_tokens ?? 4096,
          temperature: args.temperature,
        });
        if (outcome.kind === 'not_ready') return notReadyResult(outcome.resolution);
        return jsonResult({ status: 'completed', ...outcome.completion });
      }),
  );
}
