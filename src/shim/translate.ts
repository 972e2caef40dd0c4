import type { BackendError } from './backend-errors.js';
import { anthropicErrorJson, toClientError, type ClientError } from './errors.js';
import { sendJson, type Exchange } from './exchange.js';
import { estimatePromptTokens, type AnthropicRequest } from './normalize.js';
import { classifyRequest } from './prefix-stability.js';

/** A conversation turn Claude Code could compact: it has an earlier assistant turn and is no side request. */
function isCompactable(request: AnthropicRequest | undefined): boolean {
  if (!request) return false;
  return (
    request.messages.some((message) => message.role === 'assistant') &&
    classifyRequest(request).kind === 'chain'
  );
}

/** This request's prompt in tokens: the guard's learned rate where there is one, else the generic estimate. */
function estimateOf(exchange: Exchange): number {
  const bytes = exchange.line.bytes_upstream || exchange.line.bytes_in;
  return exchange.route.guard?.estimate(bytes) ?? estimatePromptTokens(bytes);
}

/** Answers the client with the Anthropic form of a backend error, and keeps the original text in the log. */
export function translateAndSend(exchange: Exchange, error: BackendError, original: string): void {
  const { config } = exchange.route;
  exchange.route.onBackendError(error);
  const client = toClientError(error, {
    contextTokens: config.contextTokens,
    estimatedPromptTokens: estimateOf(exchange),
    endpointName: config.endpointName,
    servedIds: config.servedIds,
    apiKeyEnv: config.apiKeyEnv,
    apiKeyFrom: config.apiKeyFrom,
    // Parsed only for the one error whose answer depends on the conversation.
    compactable: error.kind === 'kv_exhausted' ? isCompactable(exchange.request()) : undefined,
  });
  const lowerBound =
    (error.kind === 'context_overflow' || error.kind === 'max_tokens_too_large') &&
    error.lowerBound;
  config.watch?.({ kind: 'error', error, message: client.message });
  sendClientError(exchange, client, original, lowerBound);
}

export function sendClientError(
  exchange: Exchange,
  client: ClientError,
  original: string,
  lowerBound = false,
): void {
  exchange.line.error = {
    original,
    translated: client.message,
    ...(lowerBound ? { lower_bound: true } : {}),
  };
  exchange.route.diagnostics.debug('shim: backend error translated', {
    status: client.status,
    type: client.type,
    original: original.slice(0, 300),
  });
  sendJson(exchange, client.status, anthropicErrorJson(client.type, client.message));
}
