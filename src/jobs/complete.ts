import { z } from 'zod';
import { LocalAgentsError } from '../errors.js';
import { httpExchange, parseJson } from '../registry/probe-http.js';
import { redactUrl } from '../redact.js';
import { routeConfigFor, type ReadyEndpoint } from './ready-endpoint.js';
import type { JobShim } from './run-job.js';

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

export async function completeOnce(
  shim: JobShim,
  ready: ReadyEndpoint,
  logDir: string,
  request: CompleteRequest,
): Promise<Completion> {
  const started = Date.now();
  const route = shim.addRoute(routeConfigFor(ready, { logDir }));
  const where = `${ready.endpoint.name} (${redactUrl(ready.endpoint.base_url)})`;
  try {
    const answer = await httpExchange({
      method: 'POST',
      url: `${route.baseUrl}/v1/messages`,
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: ready.servedId,
        max_tokens: request.maxTokens,
        messages: [{ role: 'user', content: request.prompt }],
        ...(request.system === undefined ? {} : { system: request.system }),
        ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      }),
      signal: AbortSignal.timeout(COMPLETE_TIMEOUT_MS),
      maxBodyBytes: MAX_ANSWER_BYTES,
    });
    if (!answer.ok) {
      throw new LocalAgentsError(
        'ENDPOINT_UNREACHABLE',
        `${where} did not answer${answer.failure === 'timeout' ? ` within ${COMPLETE_TIMEOUT_MS / 1000} s` : ` (${answer.code ?? answer.failure})`}`,
        { hint: 'check with list_models that the endpoint is up, or ask for fewer max_tokens' },
      );
    }
    const body = parseJson(answer.body);
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
    const said = error.success ? error.data.error.message : answer.body.slice(0, 500);
    throw new LocalAgentsError(
      'ENDPOINT_UNREACHABLE',
      `${ready.endpoint.name} answered HTTP ${answer.status}: ${said}`,
      { hint: completionHint(answer.status, said) },
    );
  } finally {
    await route.close();
  }
}

/** What to do about a failed completion, from the status and words the shim already translated. */
function completionHint(status: number, said: string): string {
  if (/prompt is too long/.test(said))
    return 'shorten the prompt or pick a model with a larger window (list_models)';
  if (status === 401 || status === 403)
    return 'the endpoint refused the key: see the message for the variable to set (api_key_env)';
  if (status === 529 || status === 503)
    return 'the server is loading a model or has no free slot: try again in a moment (list_models shows its state)';
  if (status === 502) return 'the server is not answering: start it, then try again';
  return 'try again, or check the endpoint with list_models';
}
