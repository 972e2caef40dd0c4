import { describe, expect, it } from 'vitest';
import {
  buildSessionEnv,
  buildSystemPromptAppend,
  delegateToolLists,
  looksLikeClaudeModel,
  outputBudgetTokens,
  pinnedSettingsEnv,
} from './session-env.js';

const base = {
  PATH: '/usr/bin',
  HOME: '/home/u',
  ANTHROPIC_API_KEY: 'sk-parent-secret',
  ANTHROPIC_AUTH_TOKEN: 'parent-token',
  CLAUDE_CODE_OAUTH_TOKEN: 'oauth-secret',
  CLAUDECODE: '1',
  API_TIMEOUT_MS: '5',
};

describe('buildSessionEnv', () => {
  const env = buildSessionEnv({
    baseEnv: base,
    servedId: 'qwen3.8-27b',
    baseUrl: 'http://127.0.0.1:4000/j/tok',
    contextTokens: 32768,
    timeoutS: 1800,
    endpointEnv: { LLAMA_EXTRA: 'x', DISABLE_TELEMETRY: '0' },
  });

  it.each([
    'ANTHROPIC_MODEL',
    'ANTHROPIC_DEFAULT_OPUS_MODEL',
    'ANTHROPIC_DEFAULT_SONNET_MODEL',
    'ANTHROPIC_DEFAULT_HAIKU_MODEL',
    'ANTHROPIC_SMALL_FAST_MODEL',
    'CLAUDE_CODE_SUBAGENT_MODEL',
  ])('points %s at the served id', (name) => {
    expect(env[name]).toBe('qwen3.8-27b');
  });

  it('routes to the shim and never passes the parent credentials on', () => {
    expect(env.ANTHROPIC_BASE_URL).toBe('http://127.0.0.1:4000/j/tok');
    expect(env.ANTHROPIC_API_KEY).toBe('localagents-shim');
    expect(env.ANTHROPIC_AUTH_TOKEN).toBeUndefined();
    expect(env.CLAUDE_CODE_OAUTH_TOKEN).toBeUndefined();
    expect(env.CLAUDECODE).toBeUndefined();
    expect(Object.values(env)).not.toContain('sk-parent-secret');
  });

  it('sets the window, the output budget below 128k and the header timeout from the job timeout', () => {
    expect(env.CLAUDE_CODE_MAX_CONTEXT_TOKENS).toBe('32768');
    expect(env.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBe('8192');
    expect(env.API_TIMEOUT_MS).toBe('1800000');
  });

  it('turns off attribution, telemetry, auto-update, error reporting and non-essential traffic', () => {
    expect(env.CLAUDE_CODE_ATTRIBUTION_HEADER).toBe('0');
    expect(env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1');
    expect(env.DISABLE_AUTOUPDATER).toBe('1');
    expect(env.DISABLE_ERROR_REPORTING).toBe('1');
  });

  it('keeps the rest of the parent environment and applies the endpoint env last', () => {
    expect(env.PATH).toBe('/usr/bin');
    expect(env.HOME).toBe('/home/u');
    expect(env.LLAMA_EXTRA).toBe('x');
    expect(env.DISABLE_TELEMETRY).toBe('0');
  });
});

describe('outputBudgetTokens', () => {
  it.each([
    [32768, 8192],
    [65536, 8192],
    [100000, 12500],
    [131072, undefined],
    [262144, undefined],
  ])('gives a %i-token window an output budget of %s', (window, budget) => {
    expect(outputBudgetTokens(window)).toBe(budget);
  });
});

describe('looksLikeClaudeModel', () => {
  it.each([
    ['claude-sonnet-4-5', true],
    ['anthropic/claude-3-haiku', true],
    ['qwen3.8-27b', false],
    ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL', false],
    ['claudette-7b', false],
  ])('judges %s as a Claude name: %s', (name, expected) => {
    expect(looksLikeClaudeModel(name)).toBe(expected);
  });
});

describe('buildSessionEnv without endpoint env', () => {
  const env = buildSessionEnv({
    baseEnv: { PATH: '/usr/bin' },
    servedId: 'qwen3.8-27b',
    baseUrl: 'http://127.0.0.1:4000/j/tok',
    contextTokens: 262144,
    timeoutS: 90,
  });

  it.each([
    ['CLAUDE_CODE_ATTRIBUTION_HEADER', '0'],
    ['CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', '1'],
    ['DISABLE_TELEMETRY', '1'],
    ['DISABLE_AUTOUPDATER', '1'],
    ['DISABLE_ERROR_REPORTING', '1'],
    ['API_TIMEOUT_MS', '90000'],
    ['CLAUDE_CODE_MAX_CONTEXT_TOKENS', '262144'],
  ])('sets %s to %s', (name, value) => {
    expect(env[name]).toBe(value);
  });

  it('leaves the output budget to Claude Code at 128k and above', () => {
    expect(env.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBeUndefined();
  });

  it('sets no window when the registry could not learn it', () => {
    const unknown = buildSessionEnv({
      baseEnv: {},
      servedId: 'm',
      baseUrl: 'http://127.0.0.1:1/j/t',
      contextTokens: undefined,
      timeoutS: 60,
    });
    expect(unknown.CLAUDE_CODE_MAX_CONTEXT_TOKENS).toBeUndefined();
    expect(unknown.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBeUndefined();
  });
});

describe('delegateToolLists', () => {
  // Agent-spawning (Task is Agent's old name, contract §4), agent-addressing and worktree-switching tools of
  // Claude Code 2.1.332: the first request's tool list and deferred-tool list, and sdk-tools.d.ts.
  it.each([
    'Agent',
    'Task',
    'Workflow',
    'ListAgents',
    'SendMessage',
    'TaskStop',
    'EnterWorktree',
    'ExitWorktree',
    'ScheduleWakeup',
    'CronCreate',
    'CronDelete',
    'CronList',
    'RemoteTrigger',
  ])('always disallows %s, even when the caller allows it', (tool) => {
    const lists = delegateToolLists(['Read', tool], []);
    expect(lists.disallowed).toContain(tool);
    expect(lists.allowed).toEqual(['Read']);
  });

  it('removes agent-spawning tools from the allowed list and always disallows them', () => {
    const lists = delegateToolLists(['Read', 'Agent', 'Bash'], ['WebFetch', 'Task']);
    expect(lists.allowed).toEqual(['Read', 'Bash']);
    expect(lists.disallowed).toEqual(
      expect.arrayContaining(['WebFetch', 'Agent', 'Task', 'EnterWorktree']),
    );
    expect(lists.disallowed.filter((tool) => tool === 'Task')).toHaveLength(1);
  });
});

describe('buildSystemPromptAppend', () => {
  it('puts the delegate suffix first when no part says so, and skips empty parts', () => {
    const text = buildSystemPromptAppend(['  from defaults ', undefined, '', 'per call']);
    expect(text.startsWith('You are a delegate')).toBe(true);
    expect(text.endsWith('from defaults\n\nper call')).toBe(true);
  });

  it('keeps the defaults text alone when it already makes the session a delegate', () => {
    expect(buildSystemPromptAppend(['You are a delegate: do X.', 'also Y'])).toBe(
      'You are a delegate: do X.\n\nalso Y',
    );
  });
});

/** A job's environment on a 32k window with the given endpoint and model env. */
function jobEnv(endpointEnv: Record<string, string>, modelEnv?: Record<string, string>) {
  return buildSessionEnv({
    baseEnv: base,
    servedId: 'q',
    baseUrl: 'http://127.0.0.1:4000/j/tok',
    contextTokens: 32768,
    timeoutS: 60,
    endpointEnv,
    modelEnv,
  });
}

describe('buildSessionEnv with a menu entry env', () => {
  it('applies the model env after the endpoint env, window variables included', () => {
    const env = jobEnv(
      { CLAUDE_CODE_MAX_RETRIES: '2', API_TIMEOUT_MS: '1000' },
      { API_TIMEOUT_MS: '900000', CLAUDE_CODE_MAX_CONTEXT_TOKENS: '30000' },
    );
    expect(env).toMatchObject({
      CLAUDE_CODE_MAX_RETRIES: '2',
      API_TIMEOUT_MS: '900000',
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '30000',
    });
  });
});

describe('buildSessionEnv with backend key variables', () => {
  it('leaves every key variable out, even one an env map sets', () => {
    const env = buildSessionEnv({
      baseEnv: { ...base, LLAMA_KEY: 'sk-1', VLLM_KEY: 'sk-2' },
      servedId: 'q',
      baseUrl: 'http://127.0.0.1:4000/j/tok',
      contextTokens: 32768,
      timeoutS: 60,
      endpointEnv: { VLLM_KEY: 'sk-3' },
      secretVariables: ['LLAMA_KEY', 'VLLM_KEY'],
    });
    expect(env).not.toHaveProperty('LLAMA_KEY');
    expect(env).not.toHaveProperty('VLLM_KEY');
    expect(env.ANTHROPIC_API_KEY).toBe('localagents-shim');
  });
});

describe('pinnedSettingsEnv', () => {
  it('keeps the routing, window and privacy variables a job sets, and nothing of the rest', () => {
    const pinned = pinnedSettingsEnv(jobEnv({ LLAMA_EXTRA: 'x', CLAUDE_CODE_EFFORT_LEVEL: 'low' }));
    expect(pinned).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000/j/tok',
      ANTHROPIC_MODEL: 'q',
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '32768',
      API_TIMEOUT_MS: '60000',
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_EFFORT_LEVEL: 'low',
    });
    expect(Object.keys(pinned)).not.toContain('PATH');
    expect(Object.keys(pinned)).not.toContain('LLAMA_EXTRA');
    expect(pinned.ANTHROPIC_API_KEY).toBe('localagents-shim');
  });
});
