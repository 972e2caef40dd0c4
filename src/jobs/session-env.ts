import { packageVersion } from '../version.js';
/** Set in every delegate's environment; `serve` started under it refuses to run. */
export const DELEGATE_MARKER = 'LOCALAGENTS_DELEGATE';

/** Context windows below this get an explicit output budget (design §6). */
const LARGE_WINDOW_TOKENS = 128 * 1024;
const MIN_OUTPUT_TOKENS = 8192;

/** Claude Code ignores CLAUDE_CODE_MAX_CONTEXT_TOKENS for these names (contract §0.3). */
export function looksLikeClaudeModel(servedId: string): boolean {
  return /(^|[/:])claude[-_.]/i.test(servedId) || /^claude$/i.test(servedId);
}

export interface SessionEnvInput {
  /** The environment the server runs in; Anthropic credentials and Claude Code settings are dropped from it. */
  baseEnv: Record<string, string | undefined>;
  servedId: string;
  /** The job's shim route (ShimRoute.baseUrl). */
  baseUrl: string;
  /** undefined: the registry could not learn the window; Claude Code's own default stays. */
  contextTokens: number | undefined;
  timeoutS: number;
  /** The endpoint's `env` from models.yaml: applied last, so a user can override any value. */
  endpointEnv?: Record<string, string> | undefined;
  /** The menu entry's env: after the endpoint's, so the user's per-model choice wins. */
  modelEnv?: Record<string, string> | undefined;
  /**
   * Variables that hold backend credentials (models.yaml's `api_key_env` names): left out of the result, even
   * when an env map sets one. The shim sends the key; a model that runs `env` must not find it.
   */
  secretVariables?: readonly string[] | undefined;
}

/** Every model variable Claude Code reads (main, aliases, small/fast, subagent) — all point at the served id. */
const MODEL_VARIABLES = [
  'ANTHROPIC_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL',
  'ANTHROPIC_DEFAULT_SONNET_MODEL',
  'ANTHROPIC_DEFAULT_HAIKU_MODEL',
  'ANTHROPIC_SMALL_FAST_MODEL',
  'CLAUDE_CODE_SUBAGENT_MODEL',
] as const;

function isInheritedClaudeSetting(key: string): boolean {
  return (
    key.startsWith('ANTHROPIC_') ||
    key.startsWith('CLAUDE_') ||
    key.startsWith('CLAUDECODE') ||
    key === 'API_TIMEOUT_MS' ||
    key.startsWith('AWS_BEARER_TOKEN_BEDROCK') ||
    key === 'DEBUG_CLAUDE_AGENT_SDK'
  );
}

export function outputBudgetTokens(contextTokens: number): number | undefined {
  if (contextTokens >= LARGE_WINDOW_TOKENS) return undefined;
  return Math.max(MIN_OUTPUT_TOKENS, Math.floor(contextTokens / 8));
}

/**
 * What localagents tells a `claude` that talks to a local model through the shim, in order: routing,
 * window and privacy settings (contract §1). A job's delegate gets all of it; `localagents proxy` prints
 * it for an interactive `claude` (which is no delegate and has no job timeout). The one list for both.
 */
export function claudeCodeSettings(input: {
  servedId: string;
  baseUrl: string;
  /** undefined: the registry could not learn the window; Claude Code's own default stays. */
  contextTokens: number | undefined;
  /** A job: API_TIMEOUT_MS and the delegate marker. */
  job?: { timeoutS: number };
}): Array<[string, string]> {
  const settings: Array<[string, string]> = [['ANTHROPIC_BASE_URL', input.baseUrl]];
  // Claude Code refuses to start without a key; the shim holds the real one (if any) and never forwards this.
  settings.push(['ANTHROPIC_API_KEY', 'localagents-shim']);
  for (const name of MODEL_VARIABLES) settings.push([name, input.servedId]);
  if (input.contextTokens !== undefined) {
    settings.push(['CLAUDE_CODE_MAX_CONTEXT_TOKENS', String(input.contextTokens)]);
    // Claude Code asks for 32000 output tokens (128000 after a max_tokens stop); small windows need less.
    const budget = outputBudgetTokens(input.contextTokens);
    if (budget !== undefined) settings.push(['CLAUDE_CODE_MAX_OUTPUT_TOKENS', String(budget)]);
  }
  if (input.job)
    settings.push(['API_TIMEOUT_MS', String(Math.max(1, Math.round(input.job.timeoutS * 1000)))]);
  settings.push(
    ['CLAUDE_CODE_ATTRIBUTION_HEADER', '0'],
    ['CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', '1'],
    ['DISABLE_TELEMETRY', '1'],
    ['DISABLE_AUTOUPDATER', '1'],
    ['DISABLE_ERROR_REPORTING', '1'],
    ['CLAUDE_AGENT_SDK_CLIENT_APP', `localagents/${packageVersion()}`],
  );
  // Claude Code passes its environment to the MCP servers it starts: a `localagents serve` that finds this
  // refuses to run, should a registration slip past the delegate's deniedMcpServers (delegate-mcp.ts).
  if (input.job) settings.push([DELEGATE_MARKER, '1']);
  return settings;
}

/**
 * The child's whole environment (the SDK's `env` replaces, not merges): the parent's variables minus
 * anything Anthropic/Claude Code, then claudeCodeSettings, then the endpoint's own env, then the model's.
 */
export function buildSessionEnv(input: SessionEnvInput): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(input.baseEnv)) {
    if (value !== undefined && !isInheritedClaudeSetting(key)) env[key] = value;
  }
  const settings = claudeCodeSettings({
    servedId: input.servedId,
    baseUrl: input.baseUrl,
    contextTokens: input.contextTokens,
    job: { timeoutS: input.timeoutS },
  });
  const merged: Record<string, string> = {
    ...env,
    ...Object.fromEntries(settings),
    ...input.endpointEnv,
    ...input.modelEnv,
  };
  for (const name of input.secretVariables ?? []) delete merged[name];
  return merged;
}

/**
 * The part of the child's environment that Claude Code's own settings must not override: a project's
 * `.claude/settings.json` (setting source `project`) may carry an `env` block, and Claude Code applies it
 * over the process environment — an ANTHROPIC_BASE_URL there would take the delegate off the shim (and
 * off the local model) and a CLAUDE_CODE_MAX_CONTEXT_TOKENS there would stop compaction. Passed back as
 * flag settings (`--settings`), the highest user-controlled layer, so ours win.
 */
export function pinnedSettingsEnv(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([key]) => isInheritedClaudeSetting(key) || key.startsWith('DISABLE_'),
    ),
  );
}

/** Tools a delegate never gets: anything that spawns agents or moves the session to another worktree. */
export const DELEGATE_FORBIDDEN_TOOLS = [
  'Agent',
  'Task',
  'TaskStop',
  'SendMessage',
  'ListAgents',
  'Workflow',
  'EnterWorktree',
  'ExitWorktree',
  'CronCreate',
  'CronDelete',
  'CronList',
  'ScheduleWakeup',
  'RemoteTrigger',
] as const;

/** The user's disallowed list plus the forbidden ones, without duplicates; allowed lists lose the forbidden ones. */
export function delegateToolLists(
  allowed: readonly string[],
  disallowed: readonly string[],
): { allowed: string[]; disallowed: string[] } {
  const forbidden = new Set<string>(DELEGATE_FORBIDDEN_TOOLS);
  return {
    allowed: allowed.filter((tool) => !forbidden.has(tool)),
    disallowed: [...new Set([...disallowed, ...DELEGATE_FORBIDDEN_TOOLS])],
  };
}

export const DELEGATE_SUFFIX = [
  'You are a delegate: another agent handed you one task. Do only this task; do not start unrelated work.',
  'Verify your work (run the tests or the command that proves it) before you finish.',
  'Finish with a short report: what you changed (files), how you verified it, and what is left or uncertain.',
].join('\n');

/** defaults.system_prompt_append, then the per-call text; the delegate suffix leads when neither says it. */
export function buildSystemPromptAppend(parts: (string | undefined)[]): string {
  const given = parts
    .map((part) => part?.trim())
    .filter((part): part is string => part !== undefined && part.length > 0);
  const saysDelegate = given.some((part) => /\bdelegate\b/i.test(part));
  return (saysDelegate ? given : [DELEGATE_SUFFIX, ...given]).join('\n\n');
}
