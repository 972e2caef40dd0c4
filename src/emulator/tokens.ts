/**
 * The emulator's deterministic token rule (no real tokenizer ships with localagents).
 *
 * 1. Special tokens of the Qwen chat template (`<|im_start|>`, `<|im_end|>`, `<think>`, `</think>`,
 *    `<tool_call>`, `</tool_call>`, `<tool_response>`, `</tool_response>`) are one token each.
 * 2. The rest is split with the qwen2 pre-tokenizer pattern (a word with its leading space or
 *    punctuation, one digit, a punctuation run, a newline run, a whitespace run).
 * 3. A piece of n characters counts ceil(n / 8) tokens (long words and runs are several tokens).
 *
 * Calibrated on the captured vocab (fixtures/llama.cpp): `'hello ' * 8180` as one user message renders
 * to 8191 tokens with thinking on and 8193 with it off (A90, A92), "Say hello." to 14 (A10). Counts of
 * code and JSON differ from a real tokenizer by a few percent, which is all the emulator needs.
 */
const SPECIAL = /(<\|[a-z_]+\|>|<\/?think>|<\/?tool_call>|<\/?tool_response>)/;
const PIECE =
  /'(?:s|t|re|ve|m|ll|d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/giu;
const PIECE_CHARS = 8;

/** The text as token strings; joining them gives the text back. */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const part of text.split(SPECIAL)) {
    if (part === '') continue;
    if (SPECIAL.test(part) && part.length <= 16 && part.startsWith('<')) {
      tokens.push(part);
      continue;
    }
    for (const match of part.matchAll(PIECE)) {
      const piece = match[0];
      for (let start = 0; start < piece.length; start += PIECE_CHARS) {
        tokens.push(piece.slice(start, start + PIECE_CHARS));
      }
    }
  }
  return tokens;
}

export function countTokens(text: string): number {
  return tokenize(text).length;
}

/** Length of the longest common prefix of two token lists. */
export function commonPrefixLength(a: readonly string[], b: readonly string[]): number {
  const limit = Math.min(a.length, b.length);
  let index = 0;
  while (index < limit && a[index] === b[index]) index += 1;
  return index;
}
