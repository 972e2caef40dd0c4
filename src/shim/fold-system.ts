/**
 * Folding `role: system` entries of `messages` into the adjacent user turn (issue 4, rewrite 1).
 *
 * Qwen-family templates reject a system message anywhere but first (fixtures A22/A23, claude-code-direct.txt), and
 * hoisting it into the top-level `system` changes the start of the prompt every turn, which throws the server's KV
 * cache away. Folding in place keeps every prompt an append-only extension of the previous one: Claude Code's
 * `messages[1]` system entry lands in `messages[0]` on every turn, byte-identical.
 */

export interface Message {
  role: string;
  content: unknown;
  [key: string]: unknown;
}

export interface TextBlock {
  type: 'text';
  text: string;
}

/** Roles Claude Code ≥ 2.1.154 may send that no backend template knows (vLLM maps them to user; backends.md §1.9). */
const USER_ALIASES = new Set(['ctx', 'msg']);

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of a message's content: a string, or its text blocks joined by newlines. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const block of content) {
    if (isRecord(block) && typeof block.text === 'string') texts.push(block.text);
  }
  return texts.join('\n');
}

function asBlocks(content: unknown): unknown[] {
  if (Array.isArray(content)) return content;
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return [];
}

function systemBlock(message: Message): TextBlock {
  return { type: 'text', text: `<system>\n${contentText(message.content)}\n</system>` };
}

function isToolResult(block: unknown): boolean {
  return isRecord(block) && block.type === 'tool_result';
}

/** Appends after everything, so tool_result blocks stay first and pair with the assistant's tool_use. */
function appendBlocks(message: Message, blocks: TextBlock[]): Message {
  return { ...message, content: [...asBlocks(message.content), ...blocks] };
}

/** Inserts after the leading tool_result blocks: never between a tool_use and its tool_result. */
function prependBlocks(message: Message, blocks: TextBlock[]): Message {
  const existing = asBlocks(message.content);
  let at = 0;
  while (at < existing.length && isToolResult(existing[at])) at++;
  return { ...message, content: [...existing.slice(0, at), ...blocks, ...existing.slice(at)] };
}

export interface FoldResult {
  messages: Message[];
  folded: number;
  rolesMapped: number;
}

export function needsFold(messages: readonly Message[]): boolean {
  return messages.some((message) => message.role === 'system' || USER_ALIASES.has(message.role));
}

/**
 * System entries go into the preceding message when it is a user turn, else into the next user turn (after its
 * tool_results); with no user turn beside them (between two assistant turns, or at the end after one) they become
 * a user turn of their own, which keeps the roles alternating.
 */
export function foldSystemMessages(messages: readonly Message[]): FoldResult {
  const out: Message[] = [];
  let pending: TextBlock[] = [];
  let folded = 0;
  let rolesMapped = 0;
  for (const original of messages) {
    let message = original;
    if (USER_ALIASES.has(message.role)) {
      message = { ...message, role: 'user' };
      rolesMapped++;
    }
    if (message.role === 'system') {
      folded++;
      const previous = out[out.length - 1];
      if (previous?.role === 'user' && pending.length === 0) {
        out[out.length - 1] = appendBlocks(previous, [systemBlock(message)]);
      } else {
        pending.push(systemBlock(message));
      }
      continue;
    }
    if (pending.length > 0) {
      if (message.role === 'user') message = prependBlocks(message, pending);
      else out.push({ role: 'user', content: pending });
      pending = [];
    }
    out.push(message);
  }
  if (pending.length > 0) out.push({ role: 'user', content: pending });
  return { messages: out, folded, rolesMapped };
}
