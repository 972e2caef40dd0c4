/**
 * Turns a scripted reply into generated blocks under the limits a real server applies: output stops
 * at `max_tokens` or when the slot's window is full (`stop_reason: "max_tokens"`, not an error); a
 * tool call cut short is dropped, like a half-written call the parser cannot read.
 */
import { randomInt } from 'node:crypto';
import type { ScriptedReply } from './script.js';
import { tokenize } from './tokens.js';

export type GeneratedBlock =
  | { kind: 'thinking'; tokens: string[] }
  | { kind: 'text'; tokens: string[] }
  | { kind: 'tool_use'; id: string; name: string; input: Record<string, unknown>; tokens: number };

export interface Generation {
  blocks: GeneratedBlock[];
  outputTokens: number;
  stopReason: 'end_turn' | 'max_tokens' | 'tool_use';
}

export interface GenerateLimits {
  /** Tokens the reply may use: min(max_tokens, window − prompt). */
  maxOutputTokens: number;
  /** With thinking off (chat_template_kwargs) the model writes no thinking block. */
  thinking: boolean;
  /** A new tool_use id (llama.cpp: 32 alphanumerics; vLLM: `chatcmpl-tool-` + uuid hex). */
  toolId?: () => string;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 random alphanumerics, the shape of llama.cpp's `random_string()`. */
export function randomId(length = 32): string {
  let id = '';
  for (let index = 0; index < length; index += 1)
    id += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return id;
}

function toolCallTokens(name: string, input: Record<string, unknown>): number {
  let text = `<tool_call>\n<function=${name}>\n`;
  for (const [key, value] of Object.entries(input)) {
    text += `<parameter=${key}>\n${typeof value === 'string' ? value : JSON.stringify(value)}\n</parameter>\n`;
  }
  return tokenize(`${text}</function>\n</tool_call>`).length;
}

export function generate(reply: ScriptedReply, limits: GenerateLimits): Generation {
  let budget = Math.max(0, limits.maxOutputTokens);
  let truncated = false;
  const blocks: GeneratedBlock[] = [];
  const take = (kind: 'thinking' | 'text', text: string | undefined): void => {
    if (!text || truncated) return;
    const tokens = tokenize(text);
    const kept = tokens.slice(0, budget);
    budget -= kept.length;
    if (kept.length < tokens.length) truncated = true;
    if (kept.length > 0) blocks.push({ kind, tokens: kept });
  };
  if (limits.thinking) take('thinking', reply.thinking);
  take('text', reply.text);
  let calls = 0;
  for (const call of reply.toolCalls ?? []) {
    if (truncated) break;
    const cost = toolCallTokens(call.name, call.input);
    if (cost > budget) {
      truncated = true;
      break;
    }
    budget -= cost;
    calls += 1;
    const id = limits.toolId?.() ?? randomId();
    blocks.push({ kind: 'tool_use', id, name: call.name, input: call.input, tokens: cost });
  }
  const outputTokens = Math.max(0, limits.maxOutputTokens) - budget;
  const stopReason = truncated ? 'max_tokens' : calls > 0 ? 'tool_use' : 'end_turn';
  return { blocks, outputTokens, stopReason };
}
