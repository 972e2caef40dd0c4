import type { BackendError } from './backend-errors.js';
import type { Exchange } from './exchange.js';
import { isRecord } from './fold-system.js';
import { estimatePromptTokens, type AnthropicRequest } from './normalize.js';
import { forwardHeaders, readBody, requestUpstream } from './upstream.js';

export type RetryDecision =
  { kind: 'retry'; maxTokens: number } | { kind: 'give_up'; error: BackendError };

/**
 * vLLM said prompt + max_tokens > max_model_len (backends.md §1.6). With the prompt size known, retry once with
 * max_tokens = window − prompt; if the prompt alone fills the window, it is an overflow (Claude Code compacts).
 * Newer vLLM reports only a lower bound ("at least L−M+1"), so then the backend's count_tokens is asked.
 */
export async function retryDecision(
  exchange: Exchange,
  error: Extract<BackendError, { kind: 'max_tokens_too_large' }>,
  request: AnthropicRequest,
  body: Buffer,
): Promise<RetryDecision> {
  let prompt =
    error.lowerBound || error.promptTokens === undefined
      ? await countTokens(exchange, body)
      : error.promptTokens;
  let lowerBound = false;
  if (prompt === undefined) {
    prompt = Math.max(error.promptTokens ?? 0, estimatePromptTokens(body.length));
    lowerBound = error.lowerBound;
  }
  const room = error.contextTokens - prompt;
  if (room >= 1 && (request.max_tokens === undefined || request.max_tokens > room)) {
    return { kind: 'retry', maxTokens: room };
  }
  return {
    kind: 'give_up',
    error: {
      kind: 'context_overflow',
      promptTokens: Math.max(prompt, error.contextTokens),
      contextTokens: error.contextTokens,
      lowerBound,
      message: error.message,
    },
  };
}

async function countTokens(exchange: Exchange, body: Buffer): Promise<number | undefined> {
  const { route, req } = exchange;
  try {
    const response = await requestUpstream(route.upstream, {
      method: 'POST',
      path: '/v1/messages/count_tokens',
      headers: forwardHeaders(req.headers, route.upstream, body.length),
      body,
      cancellation: exchange.cancellation,
    });
    const text = (await readBody(response, 1024 * 1024)).toString('utf8');
    if ((response.statusCode ?? 500) >= 400) return undefined;
    const json: unknown = JSON.parse(text);
    return isRecord(json) && typeof json.input_tokens === 'number' ? json.input_tokens : undefined;
  } catch {
    return undefined;
  }
}
