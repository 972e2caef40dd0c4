import { z } from 'zod';
import type { BackendKind } from '../kinds.js';
import { isPlainlyUntouched } from './fast-path.js';
import { foldSystemMessages, isRecord, needsFold } from './fold-system.js';
import { spliceMembers, topLevelMembers, type MemberSpan } from './json-members.js';

/** Names of the request rewrites, as they appear in `requests.jsonl` `rewrites`. */
export type RewriteName =
  'fold_system' | 'role_map' | 'billing_nonce' | 'model_map' | 'clamp_max_tokens';

/** The part of a route that decides how a request body is rewritten. */
export interface NormalizeRoute {
  backend: BackendKind;
  servedId: string;
  servedIds?: string[] | undefined;
  contextTokens?: number | undefined;
}

const MessageSchema = z.looseObject({ role: z.string(), content: z.unknown() });
const MessagesSchema = z.array(MessageSchema);

/** Only the fields the shim reads or rewrites; everything else rides along untouched (loose objects). */
const RequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: MessagesSchema,
  system: z.unknown().optional(),
  tools: z.array(z.unknown()).optional(),
  max_tokens: z.number().optional(),
  stream: z.boolean().optional(),
});

export type AnthropicRequest = z.infer<typeof RequestSchema>;
type Message = z.infer<typeof MessageSchema>;

/** The members RequestSchema reads, in its order: its output lists them first. */
const REQUEST_KEYS = new Set(['model', 'messages', 'system', 'tools', 'max_tokens', 'stream']);
const MESSAGE_KEYS = new Set(['role', 'content']);

/**
 * What `from` holds besides `known`, copied as zod copies a loose object's other members: all but `__proto__`,
 * whose assignment would set the copy's prototype.
 */
function copyRest(
  from: Record<string, unknown>,
  to: Record<string, unknown>,
  known: Set<string>,
): void {
  for (const key of Object.keys(from)) {
    if (!known.has(key) && key !== '__proto__') to[key] = from[key];
  }
}

/**
 * MessagesSchema's parse done by hand, undefined where it may fail: each message a copy with role and content
 * first, as zod builds it. On every request's path, where zod's generic walk cost more than the JSON parse of a
 * small body (a property test holds the two to the same output).
 */
function plainMessages(value: unknown): Message[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const messages: Message[] = [];
  for (const item of value as unknown[]) {
    if (!isRecord(item) || typeof item.role !== 'string' || item.content === undefined)
      return undefined;
    const message: Message = { role: item.role, content: item.content };
    copyRest(item, message, MESSAGE_KEYS);
    messages.push(message);
  }
  return messages;
}

/** RequestSchema's parse done by hand, as plainMessages; undefined where zod must judge (and word the error). */
function plainRequest(json: unknown): AnthropicRequest | undefined {
  if (!isRecord(json)) return undefined;
  const { model, system, tools, max_tokens: maxTokens, stream } = json;
  if (model !== undefined && typeof model !== 'string') return undefined;
  if (tools !== undefined && !Array.isArray(tools)) return undefined;
  if (maxTokens !== undefined && (typeof maxTokens !== 'number' || !Number.isFinite(maxTokens)))
    return undefined;
  if (stream !== undefined && typeof stream !== 'boolean') return undefined;
  const messages = plainMessages(json.messages);
  if (!messages) return undefined;
  // Assigned in the schema's order: a request re-serialised (a retry) keeps zod's member order.
  const request: Record<string, unknown> = {};
  if (model !== undefined) request.model = model;
  request.messages = messages;
  if (system !== undefined) request.system = system;
  if (tools !== undefined) request.tools = [...(tools as unknown[])];
  if (maxTokens !== undefined) request.max_tokens = maxTokens;
  if (stream !== undefined) request.stream = stream;
  copyRest(json, request, REQUEST_KEYS);
  return request as AnthropicRequest;
}

export type NormalizeResult =
  /** Forward the raw bytes. `request` is there when the body had to be parsed to know. */
  | { kind: 'untouched'; request?: AnthropicRequest }
  | {
      kind: 'rewritten';
      body: Buffer;
      rewrites: RewriteName[];
      /** The forwarded request, when the whole body was parsed to rewrite it (not when only members were). */
      request?: AnthropicRequest;
      /** What the client sent, for the request log. */
      original: { model: string | undefined; messages: number };
    }
  | { kind: 'invalid'; message: string };

const BILLING_PREFIX = 'x-anthropic-billing-header:';

/**
 * A rough token count from the body size: about four bytes per token for Claude Code's JSON-heavy prompts, which
 * overestimates a little (the 41,985-B first request renders to ~9.4k tokens, fixtures/llama.cpp/README.md).
 * Erring high keeps vLLM's `prompt + max_tokens <= max_model_len` check satisfied.
 */
export function estimatePromptTokens(bodyBytes: number): number {
  return Math.ceil(bodyBytes / 4);
}

/** Parse once at the edge; a body that is not a messages request is answered 400 by the shim, not forwarded. */
export function parseRequest(
  raw: Buffer,
): { ok: true; request: AnthropicRequest } | { ok: false; message: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    return {
      ok: false,
      message: `request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  const plain = plainRequest(json);
  if (plain) return { ok: true, request: plain };
  const parsed = RequestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'body';
    return { ok: false, message: `${where}: ${issue?.message ?? 'invalid request'}` };
  }
  return { ok: true, request: parsed.data };
}

function hasBillingBlock(system: unknown): boolean {
  if (typeof system === 'string') return system.startsWith(BILLING_PREFIX);
  return Array.isArray(system) && system.some((block) => isBillingBlock(block));
}

function isBillingBlock(block: unknown): boolean {
  return isRecord(block) && typeof block.text === 'string' && block.text.startsWith(BILLING_PREFIX);
}

/**
 * Drops the billing block: its hash differs between sessions and after compaction, so leaving it re-processes the
 * whole system prompt and tool schemas the previous job left in the KV cache (contract §0.8). Jobs also set
 * CLAUDE_CODE_ATTRIBUTION_HEADER=0, which removes the same block, so both kinds of session share one prefix.
 */
function withoutBilling(system: unknown): unknown {
  if (typeof system === 'string') {
    const newline = system.indexOf('\n');
    return newline === -1 ? '' : system.slice(newline + 1);
  }
  return Array.isArray(system) ? system.filter((block) => !isBillingBlock(block)) : system;
}

/** The model the backend should see: left alone if it serves it, else the route's served id. */
function mappedModel(model: string | undefined, route: NormalizeRoute): string | undefined {
  if (model === route.servedId || (model !== undefined && route.servedIds?.includes(model)))
    return undefined;
  return route.servedId;
}

/**
 * vLLM rejects prompt + max_tokens > max_model_len with a 400 (backends.md §1.6) and Claude Code asks for 32000,
 * then 128000; llama.cpp just stops at the slot limit, so it is left alone there (clamping on an estimate could
 * only end its replies early).
 */
export function outputRoom(bodyBytes: number, route: NormalizeRoute): number | undefined {
  if (route.backend === 'llama.cpp' || route.contextTokens === undefined) return undefined;
  return route.contextTokens - estimatePromptTokens(bodyBytes);
}

function clampedMaxTokens(
  maxTokens: number | undefined,
  room: number | undefined,
): number | undefined {
  if (room === undefined || maxTokens === undefined) return undefined;
  if (room < 1 || maxTokens <= room) return undefined;
  return room;
}

/** The members a rewrite reads, as the client sent them. */
type RewriteInput = Pick<AnthropicRequest, 'messages' | 'system' | 'model' | 'max_tokens'>;

type Changes = Partial<Pick<AnthropicRequest, 'messages' | 'system' | 'model' | 'max_tokens'>>;

/** Which rewrites apply, and the new value of each member they change. */
function planRewrites(
  input: RewriteInput,
  route: NormalizeRoute,
  room: number | undefined,
): { rewrites: RewriteName[]; changes: Changes } {
  const rewrites: RewriteName[] = [];
  const changes: Changes = {};
  if (needsFold(input.messages)) {
    const result = foldSystemMessages(input.messages);
    changes.messages = result.messages;
    if (result.folded > 0) rewrites.push('fold_system');
    if (result.rolesMapped > 0) rewrites.push('role_map');
  }
  if (hasBillingBlock(input.system)) {
    changes.system = withoutBilling(input.system);
    rewrites.push('billing_nonce');
  }
  const model = mappedModel(input.model, route);
  if (model !== undefined) {
    changes.model = model;
    rewrites.push('model_map');
  }
  const maxTokens = clampedMaxTokens(input.max_tokens, room);
  if (maxTokens !== undefined) {
    changes.max_tokens = maxTokens;
    rewrites.push('clamp_max_tokens');
  }
  return { rewrites, changes };
}

/**
 * The rewrite done on the members it changes alone: each is parsed, rewritten and spliced back, and everything else
 * (Claude Code's tool list above all) goes out as sent. Checks what the full parse would check of the members it
 * does not read, so it accepts no body the full parse refuses. Undefined when it cannot tell: a body that is not
 * one plain object, a malformed member, or a rewrite that adds a member; the caller then parses the whole body.
 */
function rewriteMembers(
  raw: Buffer,
  route: NormalizeRoute,
  room: number | undefined,
): NormalizeResult | undefined {
  const members = topLevelMembers(raw);
  if (!members) return undefined;
  const value = (span: MemberSpan): unknown =>
    JSON.parse(raw.toString('utf8', span.start, span.end));
  const messagesSpan = members.get('messages');
  const tools = members.get('tools');
  const stream = members.get('stream');
  if (!messagesSpan || (tools && raw[tools.start] !== 0x5b)) return undefined;
  if (stream && !['true', 'false'].includes(raw.toString('latin1', stream.start, stream.end)))
    return undefined;
  let input: RewriteInput;
  try {
    const messagesValue = value(messagesSpan);
    const messages = plainMessages(messagesValue) ?? MessagesSchema.safeParse(messagesValue).data;
    const systemSpan = members.get('system');
    const modelSpan = members.get('model');
    const maxTokensSpan = members.get('max_tokens');
    const model = modelSpan && value(modelSpan);
    const maxTokens = maxTokensSpan && value(maxTokensSpan);
    if (!messages || (model !== undefined && typeof model !== 'string')) return undefined;
    if (maxTokens !== undefined && typeof maxTokens !== 'number') return undefined;
    input = {
      messages,
      system: systemSpan && value(systemSpan),
      model,
      max_tokens: maxTokens,
    };
  } catch {
    return undefined;
  }
  const { rewrites, changes } = planRewrites(input, route, room);
  if (rewrites.length === 0) return { kind: 'untouched' };
  const replacements: Array<{ span: MemberSpan; json: string }> = [];
  for (const [key, changed] of Object.entries(changes)) {
    const span = members.get(key);
    if (!span) return undefined;
    replacements.push({ span, json: JSON.stringify(changed) });
  }
  return {
    kind: 'rewritten',
    body: spliceMembers(raw, replacements),
    rewrites,
    original: { model: input.model, messages: input.messages.length },
  };
}

/**
 * Pure: the body to forward. When no rewrite applies (the common case for jobs) the raw bytes are forwarded and,
 * where the bytes alone show it (fast-path.ts), the body is not even parsed: `untouched` then carries no request.
 * A rewrite parses and re-serialises only the members it changes where it can (rewriteMembers).
 */
export function normalizeRequest(
  raw: Buffer,
  route: NormalizeRoute,
  options: { scanned?: boolean } = {},
): NormalizeResult {
  const room = outputRoom(raw.length, route);
  // `scanned`: the caller's fast-path scanner already saw these bytes and found something that may need a rewrite.
  if (options.scanned !== true && isPlainlyUntouched(raw, route, room))
    return { kind: 'untouched' };
  const spliced = rewriteMembers(raw, route, room);
  if (spliced) return spliced;
  const parsed = parseRequest(raw);
  if (!parsed.ok) return { kind: 'invalid', message: parsed.message };
  const request = parsed.request;
  const { rewrites, changes } = planRewrites(request, route, room);
  if (rewrites.length === 0) return { kind: 'untouched', request };
  const next: AnthropicRequest = { ...request, ...changes };
  return {
    kind: 'rewritten',
    body: Buffer.from(JSON.stringify(next)),
    rewrites,
    request: next,
    original: { model: request.model, messages: request.messages.length },
  };
}
