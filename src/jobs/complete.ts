import { request as httpRequest } from 'node:http';
import { z } from 'zod';
import { LocalAgentsError } from '../errors.js';
import type { JobShim, ReadyEndpoint } from './active-job.js';
import { routeConfigFor } from './ready-endpoint.js';

/**
 * local_complete: one prompt, one answer, through a short-lived shim route like a job's, so it gets the
 * same model mapping, error translation and request log (under `<state>/complete/`), and reaches the
 * backend over node:http (fetch refuses the Fetch spec's "bad ports", where a backend may listen).
 */
export interface CompleteRequest {
  prompt: string;
  system?: string | undefined;
  maxTokens: number;
  temperature?: number | undefined;
}

export interface Completion {
  model: string;
  endpoint: string;
  text: string;
  stop_reason: string | null;
  usage: { input_tokens?: number | undefined; output_tokens?: number | undefined } | null;
  duration_ms: number;
}

const MessageSchema = z.looseObject({
  stop_reason: z.string().nullable().optional(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  usage: z
    .looseObject({ input_tokens: z.number().optional(), output_tokens: z.number().optional() })
    .optional(),
});

const ErrorSchema = z.looseObject({
  error: z.looseObject({ type: z.string().optional(), message: z.string() }),
});

const COMPLETE_TIMEOUT_MS = 100_000;
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

function post(url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'anthropic-version': '2023-06-01',
        },
        signal: AbortSignal.timeout(COMPLETE_TIMEOUT_MS),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) response.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export async function completeOnce(
  shim: JobShim,
  ready: ReadyEndpoint,
  logDir: string,
  request: CompleteRequest,
): Promise<Completion> {
  const started = Date.now();
  const route = shim.addRoute(routeConfigFor(ready, { logDir }));
  const where = `${ready.endpoint.name} (${ready.endpoint.base_url})`;
  try {
    const answer = await post(
      `${route.baseUrl}/v1/messages`,
      JSON.stringify({
        model: ready.servedId,
        max_tokens: request.maxTokens,
        messages: [{ role: 'user', content: request.prompt }],
        ...(request.system === undefined ? {} : { system: request.system }),
        ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      }),
    ).catch((error: unknown) => {
      throw new LocalAgentsError('ENDPOINT_UNREACHABLE', `${where} did not answer in time`, {
        hint: 'check with list_models that the endpoint is up, or ask for fewer max_tokens',
        cause: error,
      });
    });
    const body = parse(answer.text);
    const message = MessageSchema.safeParse(body);
    if (answer.status === 200 && message.success) {
      return {
        model: ready.servedId,
        endpoint: ready.endpoint.name,
        text: message.data.content
          .filter((block) => block.type === 'text')
          .map((block) => block.text ?? '')
          .join(''),
        stop_reason: message.data.stop_reason ?? null,
        usage: message.data.usage ?? null,
        duration_ms: Date.now() - started,
      };
    }
    // The shim answers failures in Anthropic's form, already translated (overflow, loading, auth).
    const error = ErrorSchema.safeParse(body);
    const said = error.success ? error.data.error.message : answer.text.slice(0, 500);
    throw new LocalAgentsError(
      'ENDPOINT_UNREACHABLE',
      `${ready.endpoint.name} answered HTTP ${answer.status}: ${said}`,
      {
        hint: /prompt is too long/.test(said)
          ? 'shorten the prompt or pick a model with a larger window (list_models)'
          : 'try again, or check the endpoint with list_models',
      },
    );
  } finally {
    await route.close();
  }
}
