import type { Defaults } from './config-types.js';

/** Appended to Claude Code's own system prompt in every delegated session. */
export const DEFAULT_SYSTEM_PROMPT_APPEND = `You are a delegate: another Claude Code session handed you one well-defined task and will review your work.
- Do only this task. Do not widen its scope, refactor unrelated code, or start other agents.
- Work in the current directory. Prefer small, reviewable edits that follow the code's existing style.
- Verify what you did: run the relevant tests, type-checker, linter or the program itself, and fix what fails.
- If something blocks you, stop and say what and why instead of guessing.
- Finish with a short report: what you changed (files), how you verified it (commands and results), and what is left or uncertain.`;

/** Built-in values; every layer of models.yaml may override them key by key. */
export function builtinDefaults(): Defaults {
  return {
    permission_mode: 'acceptEdits',
    allowed_tools: ['Read', 'Edit', 'Write', 'Glob', 'Grep', 'Bash', 'WebFetch'],
    // A delegate never spawns delegates of its own.
    disallowed_tools: ['Agent', 'Task'],
    setting_sources: ['project', 'local'],
    max_turns: 60,
    timeout_s: 1800,
    probe_timeout_s: 2.5,
    system_prompt_append: DEFAULT_SYSTEM_PROMPT_APPEND,
    dump_requests: false,
    keepalive_s: 15,
    backend_grace_s: 30,
    delegate_mcp: 'inherit',
    verify_retries: 0,
    verify_timeout_s: 600,
  };
}

/** `LOCALAGENTS_DUMP_REQUESTS=1` (the Python original's switch) turns on requests_full.jsonl like `dump_requests`. */
export function dumpRequestsFromEnv(env: Record<string, string | undefined>): boolean {
  return env.LOCALAGENTS_DUMP_REQUESTS === '1' || env.LOCALAGENTS_DUMP_REQUESTS === 'true';
}

/**
 * Claude Code's first request with its default tools, in tokens: about 42 kB of system prompt and tool schemas
 * (test/fixtures/claude-code/first-turn-request.json), about 10.5k tokens at 4 bytes a token.
 */
export const CLAUDE_CODE_FIXED_PROMPT_TOKENS = 10_500;

/**
 * No job starts on a smaller window: below it the answer is a bring-up request, not a doomed job. Measured with
 * the real claude (and the output budget session-env sets): at 18432 tokens it ends in "Autocompact is
 * thrashing" before any work, at 19456 a job runs; the fixed prompt alone is about half of that.
 */
export const MIN_JOB_CONTEXT_TOKENS = 20_480;

/** A window to suggest when one must be raised: what Ollama's docs recommend for coding tools. */
export const SUGGESTED_CONTEXT_TOKENS = 65_536;

/** Below this many tokens, Claude Code's fixed prompt plus compaction thrash (about 128k). */
export const COMFORTABLE_CONTEXT_TOKENS = 128_000;
