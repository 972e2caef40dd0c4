import { createHash, type Hash } from 'node:crypto';
import { contentText, isRecord } from './fold-system.js';
import type { AnthropicRequest } from './normalize.js';

/**
 * Does this prompt extend the previous prompt of the same conversation? That is what keeps llama.cpp's and vLLM's
 * KV/prefix cache warm. Compared as the backend renders it, not byte-wise: Claude Code moves `cache_control` to the
 * newest block each turn and sends a message as a text-block array once and as a plain string later (contract
 * §2.6), and neither changes the rendered prompt.
 */
export type PrefixVerdict =
  /** The first prompt of a conversation, or the first after a compaction (which legitimately starts over). */
  | { kind: 'new' }
  | { kind: 'extends' }
  /** Where the prompt first differs from the previous one: a message index, or the system prompt or tool list. */
  | { kind: 'changed'; at: number | 'system' | 'tools' }
  /** A compaction or title request: a side branch, not part of the conversation's chain. */
  | { kind: 'side'; reason: 'compaction' | 'title' };

export interface PromptFingerprint {
  system: string;
  tools: string;
  messages: string[];
}

const COMPACTION_MARKERS = [
  'CRITICAL: Respond with TEXT ONLY',
  '[earlier conversation truncated for compaction retry]',
];
const CONTINUATION_MARKER = 'This session is being continued from a previous conversation';
const SUBAGENT_MARKER = 'You are an agent for Claude Code';
const MAX_CONVERSATIONS = 256;

function hash(text: string): string {
  return createHash('sha1').update(text).digest('base64url');
}

const TEXT_KEYS = new Set(['type', 'text', 'cache_control']);

/** A text block with nothing but its text (and a cache marker): hashed as its text alone. */
function plainText(block: Record<string, unknown>): string | undefined {
  if (block.type !== 'text' || typeof block.text !== 'string') return undefined;
  for (const key of Object.keys(block)) if (!TEXT_KEYS.has(key)) return undefined;
  return block.text;
}

/**
 * Feeds content as the backend sees it into `digest`: without cache_control, a string ≡ one text block. Texts go
 * in as they are, never through JSON.stringify: a 1 MB tool result would cost milliseconds more to escape and copy.
 * Each piece is tagged and length-prefixed, so different contents cannot feed the same bytes.
 */
function digestContent(digest: Hash, content: unknown): void {
  if (typeof content === 'string') {
    digest.update(`a1:t${content.length}:`).update(content);
    return;
  }
  // Anything else renders as no blocks at all.
  if (!Array.isArray(content)) {
    digest.update('a0:');
    return;
  }
  const blocks: unknown[] = content;
  digest.update(`a${blocks.length}:`);
  for (const block of blocks) {
    if (!isRecord(block)) {
      const text = JSON.stringify(block) ?? 'undefined';
      digest.update(`j${text.length}:`).update(text);
      continue;
    }
    const text = plainText(block);
    if (text !== undefined) {
      digest.update(`t${text.length}:`).update(text);
      continue;
    }
    const { cache_control: _cache, ...rest } = block;
    if (rest.type === 'tool_result' && rest.content !== undefined) {
      const { content: inner, ...head } = rest;
      const json = JSON.stringify(head);
      digest.update(`r${json.length}:`).update(json);
      digestContent(digest, inner);
      continue;
    }
    const json = JSON.stringify(rest);
    digest.update(`j${json.length}:`).update(json);
  }
}

function contentHash(prefix: string, content: unknown): string {
  const digest = createHash('sha1').update(prefix);
  digestContent(digest, content);
  return digest.digest('base64url');
}

function canonicalTools(tools: unknown[] | undefined): string {
  if (!tools) return '';
  const text = JSON.stringify(tools);
  // Claude Code's tool list is byte-identical turn to turn; only a cache_control marker would need removing.
  if (!text.includes('"cache_control"')) return text;
  return JSON.stringify(
    tools.map((tool) => {
      if (!isRecord(tool)) return tool;
      const { cache_control: _cache, ...rest } = tool;
      return rest;
    }),
  );
}

/** `toolsHash`: the hash of the tool list when the caller already knows it (PrefixTracker's cache). */
export function fingerprintPrompt(
  request: AnthropicRequest,
  toolsHash?: string,
): PromptFingerprint {
  return {
    system: contentHash('system\u0000', request.system),
    tools: toolsHash ?? hash(canonicalTools(request.tools)),
    messages: request.messages.map((message) =>
      contentHash(`${message.role}\u0000`, message.content),
    ),
  };
}

export function comparePrompts(
  previous: PromptFingerprint,
  current: PromptFingerprint,
): PrefixVerdict {
  if (previous.system !== current.system) return { kind: 'changed', at: 'system' };
  if (previous.tools !== current.tools) return { kind: 'changed', at: 'tools' };
  for (let index = 0; index < previous.messages.length; index++) {
    if (previous.messages[index] !== current.messages[index]) return { kind: 'changed', at: index };
  }
  return { kind: 'extends' };
}

function lastText(request: AnthropicRequest, count: number): string {
  return request.messages
    .slice(-count)
    .map((message) => contentText(message.content))
    .join('\n');
}

/** Which chain a request belongs to within one Claude Code session (`x-claude-code-session-id`). */
export function classifyRequest(
  request: AnthropicRequest,
): { kind: 'side'; reason: 'compaction' | 'title' } | { kind: 'chain'; lane: string } {
  const tail = lastText(request, 2);
  if (COMPACTION_MARKERS.some((marker) => tail.includes(marker)))
    return { kind: 'side', reason: 'compaction' };
  const outputConfig = request.output_config;
  if (isRecord(outputConfig) && outputConfig.format !== undefined)
    return { kind: 'side', reason: 'title' };
  if (contentText(request.system).includes(SUBAGENT_MARKER)) {
    // Several subagents may run at once in one session; each has its own task as its first message.
    return { kind: 'chain', lane: `subagent:${hash(contentText(request.messages[0]?.content))}` };
  }
  return { kind: 'chain', lane: 'main' };
}

/**
 * Where the post-compaction summary (`This session is being continued…`) sits, or -1. Claude Code 2.1.332 puts
 * re-attached file reads before it, so it is not always message 0.
 */
function continuationIndex(request: AnthropicRequest): number {
  return request.messages
    .slice(0, 4)
    .findIndex((message) => contentText(message.content).includes(CONTINUATION_MARKER));
}

export interface PrefixTracker {
  /** Records this prompt as its conversation's latest and says how it relates to the previous one. */
  check(request: AnthropicRequest, session: string | undefined): PrefixVerdict;
}

export function createPrefixTracker(): PrefixTracker {
  const conversations = new Map<string, PromptFingerprint>();
  let lastTools: { tools: unknown[]; hash: string } | undefined;

  /**
   * The tool list's hash, kept for the list it was computed from: a route's ToolListCache hands every request that
   * sent the same list the same (frozen) array, so Claude Code's 31 KB list is serialised and hashed once.
   */
  function toolsHash(tools: unknown[] | undefined): string | undefined {
    if (tools === undefined || !Object.isFrozen(tools)) return undefined;
    if (lastTools?.tools !== tools) lastTools = { tools, hash: hash(canonicalTools(tools)) };
    return lastTools.hash;
  }

  return {
    check(request, session) {
      const kind = classifyRequest(request);
      if (kind.kind === 'side') return { kind: 'side', reason: kind.reason };
      const key = `${session ?? '-'}|${kind.lane}`;
      const current = fingerprintPrompt(request, toolsHash(request.tools));
      const previous = conversations.get(key);
      conversations.delete(key);
      conversations.set(key, current);
      if (conversations.size > MAX_CONVERSATIONS) {
        const oldest = conversations.keys().next().value;
        if (oldest !== undefined) conversations.delete(oldest);
      }
      if (!previous) return { kind: 'new' };
      const verdict = comparePrompts(previous, current);
      // A compaction replaces the history up to its summary: the first prompt of a new conversation.
      if (
        verdict.kind === 'changed' &&
        typeof verdict.at === 'number' &&
        verdict.at <= continuationIndex(request)
      ) {
        return { kind: 'new' };
      }
      return verdict;
    },
  };
}
