/**
 * Ollama's prompt for one request and its silent truncation (ollama-lmstudio.md §2 "Overflow").
 * Stage 1 (server/prompt.go chatPrompt, every version): while the rendered prompt has more than num_ctx
 * tokens, drop whole messages from the front, keeping the dropped system messages and always the last
 * message, re-rendering and re-counting each time. Stage 2 (the runner), on what is left:
 * - v0.30.11+: over num_ctx − 1 tokens, keep the first num_keep (4) and the last
 *   `num_ctx − max(⌊(num_ctx − num_keep)/2⌋, 1) − num_keep` (num_ctx 4096 → 2050 kept); with context
 *   shift off (deepseek2) the 400 instead;
 * - v0.30.0–v0.30.10: over num_ctx − 1, cut to num_ctx − 1 the same way (or the 400 with shift off);
 * - ≤ v0.29 (Go runners): over num_ctx, cut to exactly num_ctx.
 * Qwen adds no BOS, so num_keep stays 4.
 */
import { OLLAMA_MID_SYSTEM, OLLAMA_PROMPT_TOO_LONG } from './errors.js';
import { renderChatMessages, type ChatMessage } from './render.js';
import { tokenize } from './tokens.js';

const NUM_KEEP = 4;

export interface OllamaPromptOptions {
  numCtx: number;
  contextShift: boolean;
  version: string;
  strictTemplate: boolean;
}

export type OllamaPrompt =
  | {
      kind: 'ok';
      /** What the model is given. */
      tokens: string[];
      /** The full prompt's count, before either stage. */
      fullTokens: number;
      truncated: boolean;
    }
  | { kind: 'error'; status: number; message: string; fullTokens?: number };

/** `a >= b` for dotted versions (`0.30.11`, `0.31.0-rc1`: pre-release suffixes ignored). */
export function versionAtLeast(version: string, minimum: string): boolean {
  const parts = (text: string): number[] =>
    text
      .replace(/^v/, '')
      .split(/[-+]/)[0]
      ?.split('.')
      .map((part) => Number.parseInt(part, 10) || 0) ?? [];
  const [a, b] = [parts(version), parts(minimum)];
  for (let index = 0; index < Math.max(a.length, b.length); index += 1) {
    const diff = (a[index] ?? 0) - (b[index] ?? 0);
    if (diff !== 0) return diff > 0;
  }
  return true;
}

/** The runner's cut (stage 2): how many tokens survive, or 'error' for the context-shift-off 400. */
export function stageTwoLimit(
  tokens: number,
  options: Pick<OllamaPromptOptions, 'numCtx' | 'contextShift' | 'version'>,
): number | 'error' | undefined {
  const { numCtx } = options;
  if (numCtx <= 1) return undefined;
  if (!versionAtLeast(options.version, '0.30.0')) return tokens > numCtx ? numCtx : undefined;
  if (tokens <= numCtx - 1) return undefined;
  if (!options.contextShift) return 'error';
  if (!versionAtLeast(options.version, '0.30.11')) return numCtx - 1;
  const keep = Math.max(0, Math.min(NUM_KEEP, numCtx - 1));
  return numCtx - Math.max(Math.floor((numCtx - keep) / 2), 1);
}

function render(
  messages: readonly ChatMessage[],
  body: Record<string, unknown>,
  strictTemplate: boolean,
): string[] | undefined {
  const rendered = renderChatMessages(messages, body, { strictTemplate, strictRoles: false });
  return rendered.kind === 'ok' ? tokenize(rendered.text) : undefined;
}

export function ollamaPrompt(
  messages: readonly ChatMessage[],
  body: Record<string, unknown>,
  options: OllamaPromptOptions,
): OllamaPrompt {
  const full = render(messages, body, options.strictTemplate);
  // The only failure of a lenient render is the strict template's mid-conversation system message.
  if (!full) return { kind: 'error', status: 500, message: OLLAMA_MID_SYSTEM };
  let tokens = full;
  let dropped = false;
  const last = messages.length - 1;
  for (let start = 1; tokens.length > options.numCtx && start <= last; start += 1) {
    const kept = [
      ...messages.slice(0, start).filter((message) => message.role === 'system'),
      ...messages.slice(start),
    ];
    const candidate = render(kept, body, options.strictTemplate);
    if (!candidate) return { kind: 'error', status: 500, message: OLLAMA_MID_SYSTEM };
    tokens = candidate;
    dropped = true;
  }
  const limit = stageTwoLimit(tokens.length, options);
  if (limit === 'error') {
    return { kind: 'error', status: 400, message: OLLAMA_PROMPT_TOO_LONG, fullTokens: full.length };
  }
  if (limit !== undefined) {
    const keep = Math.min(NUM_KEEP, limit);
    tokens = [...tokens.slice(0, keep), ...tokens.slice(tokens.length - (limit - keep))];
  }
  return {
    kind: 'ok',
    tokens,
    fullTokens: full.length,
    truncated: dropped || limit !== undefined,
  };
}
