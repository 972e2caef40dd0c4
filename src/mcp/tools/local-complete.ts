import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { LocalAgentsError } from '../../errors.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { notReadyResult } from './not-ready.js';

const completionResponse = z.looseObject({
  model: z.string().optional(),
  stop_reason: z.string().nullable().optional(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  usage: z
    .looseObject({ input_tokens: z.number().optional(), output_tokens: z.number().optional() })
    .optional(),
});

const COMPLETE_TIMEOUT_MS = 100_000;

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
          .describe('Most tokens to generate (default 2048)'),
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
        const defaults = await deps.registry.defaults();
        const model = args.model ?? defaults.model;
        const resolution = await deps.registry.resolve({
          ...(model === undefined ? {} : { model }),
          ...(args.endpoint === undefined ? {} : { endpoint: args.endpoint }),
        });
        if (resolution.kind !== 'ready') return notReadyResult(resolution);
        const started = Date.now();
        const response = await fetch(new URL('/v1/messages', resolution.endpoint.base_url), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'anthropic-version': '2023-06-01',
            ...(resolution.apiKey
              ? { 'x-api-key': resolution.apiKey, authorization: `Bearer ${resolution.apiKey}` }
              : {}),
          },
          body: JSON.stringify({
            model: resolution.servedId,
            max_tokens: args.max_tokens ?? 2048,
            messages: [{ role: 'user', content: args.prompt }],
            ...(args.system === undefined ? {} : { system: args.system }),
            ...(args.temperature === undefined ? {} : { temperature: args.temperature }),
          }),
          signal: AbortSignal.timeout(COMPLETE_TIMEOUT_MS),
        }).catch((error: unknown) => {
          throw new LocalAgentsError(
            'ENDPOINT_UNREACHABLE',
            `${resolution.endpoint.name} (${resolution.endpoint.base_url}) did not answer`,
            {
              hint: 'check with list_models that the endpoint is up',
              cause: error,
            },
          );
        });
        const body: unknown = await response.json().catch(() => undefined);
        const parsed = completionResponse.safeParse(body);
        if (!response.ok || !parsed.success) {
          throw new LocalAgentsError(
            'ENDPOINT_UNREACHABLE',
            `${resolution.endpoint.name} answered HTTP ${response.status}: ${JSON.stringify(body)?.slice(0, 500) ?? 'no JSON body'}`,
            {
              hint: 'the prompt may be too long for the model’s window, or the server is busy; try a shorter prompt or list_models',
            },
          );
        }
        const text = parsed.data.content
          .filter((block) => block.type === 'text')
          .map((block) => block.text ?? '')
          .join('');
        return jsonResult({
          status: 'completed',
          model: resolution.servedId,
          endpoint: resolution.endpoint.name,
          text,
          stop_reason: parsed.data.stop_reason ?? null,
          usage: parsed.data.usage ?? null,
          duration_ms: Date.now() - started,
        });
      }),
  );
}
