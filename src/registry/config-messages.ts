import type { ConfigIssue } from './config-types.js';

/** What a field should hold ("expected …") and, where it helps, how to fix it. */
interface FieldHelp {
  expect: string;
  fix?: string;
}

// Keyed by path with entry names replaced by `*` and list indexes dropped.
const FIELD_HELP: Record<string, FieldHelp> = {
  '': { expect: 'a mapping with defaults, endpoints and models' },
  name: { expect: 'a name of letters, digits and . _ : / @ + - starting with a letter or digit' },
  defaults: { expect: 'a mapping of settings such as max_turns: 60' },
  'defaults.model': { expect: 'a model name, glob or part of a served id, such as qwen3.8-27b' },
  'defaults.permission_mode': {
    expect: 'one of default, acceptEdits, bypassPermissions, plan, dontAsk',
    fix: 'acceptEdits lets the delegate edit files without asking',
  },
  'defaults.allowed_tools': { expect: 'a list of tool names such as [Read, Edit, Write, Bash]' },
  'defaults.disallowed_tools': { expect: 'a list of tool names such as [Agent, Task]' },
  'defaults.setting_sources': { expect: 'a list drawn from user, project, local' },
  'defaults.max_turns': { expect: 'a whole number of at least 1, such as 60' },
  'defaults.timeout_s': { expect: 'a number of seconds above 0, such as 1800' },
  'defaults.probe_timeout_s': { expect: 'a number of seconds from 0.05 to 60, such as 2.5' },
  'defaults.system_prompt_append': { expect: 'text (use `|` for several lines)' },
  'defaults.dump_requests': { expect: 'true or false' },
  'defaults.keepalive_s': { expect: 'a number of seconds of at least 0, such as 15' },
  'defaults.verify': {
    expect: 'a shell command, such as npm test',
    fix: 'it runs in the job directory after the session; exit 0 means the work passed',
  },
  'defaults.verify_retries': { expect: 'a whole number from 0 to 10, such as 1' },
  'defaults.verify_timeout_s': { expect: 'a number of seconds above 0, such as 600' },
  'models.*.verify': { expect: 'a shell command, such as npm test' },
  'defaults.delegate_mcp': {
    expect: 'inherit or none',
    fix: 'inherit gives delegates your other MCP servers (never localagents itself); none gives them no MCP server',
  },
  endpoints: { expect: 'a mapping of endpoint names to settings' },
  'endpoints.*': {
    expect: 'a mapping with at least base_url, such as {base_url: http://127.0.0.1:8080}',
  },
  'endpoints.*.base_url': {
    expect: 'an http(s) URL such as http://127.0.0.1:8080',
    fix: 'write the scheme, host and port of the server, without /v1',
  },
  'endpoints.*.backend': {
    expect: 'one of llama.cpp, vllm, ollama, lmstudio, other',
    fix: 'use other to have the backend detected',
  },
  'endpoints.*.host': { expect: 'text naming the machine, such as workstation' },
  'endpoints.*.notes': { expect: 'text' },
  'endpoints.*.api_key_env': {
    expect: 'the name of an environment variable such as LLAMA_API_KEY',
    fix: 'put the key itself in that variable (export LLAMA_API_KEY=…), never in models.yaml',
  },
  'endpoints.*.max_concurrent': {
    expect: 'a whole number of parallel requests of at least 1, such as 2',
    fix: "set it to the server's parallel setting (Ollama: OLLAMA_NUM_PARALLEL)",
  },
  'endpoints.*.env': { expect: 'a mapping of environment variable names to values' },
  'endpoints.*.env.*': { expect: 'a text value' },
  models: { expect: 'a mapping of model names to settings' },
  'models.*': { expect: 'a mapping such as {notes: …, host: …}, or just the notes as text' },
  'models.*.notes': { expect: 'text' },
  'models.*.host': { expect: 'text naming the machine, such as gpu-server' },
  'models.*.served_name': { expect: 'a served id or a glob such as "unsloth/Qwen3*"' },
  'models.*.endpoint': { expect: 'the name of an endpoint defined under endpoints' },
  'models.*.context': {
    expect: 'a whole number of tokens of at least 256, such as 65536',
    fix: 'leave it out to use the window the server reports',
  },
  'models.*.bring_up': { expect: 'text telling the user how to start the model' },
  agents: { expect: 'a mapping of agent names (files in .claude/agents/) to settings' },
  'agents.*': {
    expect: 'a mapping such as {model: qwen3.8-27b, verify: npm test, isolation: worktree}',
  },
  'agents.*.model': { expect: 'a served id or menu name for this agent’s jobs' },
  'agents.*.verify': { expect: 'a shell command, such as npm test' },
  'agents.*.isolation': { expect: 'none or worktree' },
};

const NAME_HELP: Record<string, FieldHelp> = {
  endpoints: {
    expect: 'a name of letters, digits and . _ : / @ + - starting with a letter or digit',
  },
  models: { expect: 'a name of letters, digits and . _ : / @ + - starting with a letter or digit' },
  'endpoints.*.env': { expect: 'an environment variable name such as CUDA_VISIBLE_DEVICES' },
};

/** `endpoints.gpu.base_url` → `endpoints.*.base_url`; list indexes vanish. */
export function fieldPattern(path: readonly PropertyKey[]): string {
  const parts: string[] = [];
  path.forEach((segment, index) => {
    if (typeof segment === 'number') return;
    const parent = path[index - 1];
    const grand = path[index - 2];
    const isName =
      (index === 1 && (parent === 'endpoints' || parent === 'models')) ||
      (parent === 'env' && grand !== undefined && path[0] === 'endpoints');
    parts.push(isName ? '*' : String(segment));
  });
  return parts.join('.');
}

/** `['models', 'qwen3', 'context']` → `models.qwen3.context`; indexes as `[2]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((segment, index) =>
      typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`,
    )
    .join('');
}

export interface IssueLike {
  code: string;
  path: readonly PropertyKey[];
  input?: unknown;
}

/** The message and fix for one zod issue at `path`. Never echoes the value (it could be a key). */
export function describeIssue(issue: IssueLike): Pick<ConfigIssue, 'message' | 'fix'> {
  if (issue.code === 'invalid_key') {
    const help = NAME_HELP[fieldPattern(issue.path.slice(0, -1))];
    return { message: `not a valid name; expected ${help?.expect ?? 'a plain name'}` };
  }
  const help = FIELD_HELP[fieldPattern(issue.path)];
  const expect = help?.expect ?? 'a different value';
  const missing = issue.code === 'invalid_type' && issue.input === undefined;
  const message = missing ? `missing; expected ${expect}` : `expected ${expect}`;
  return help?.fix ? { message, fix: help.fix } : { message };
}

/** Damerau-free edit distance, enough to suggest `base_url` for `baseurl`. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const saved = row[j] ?? 0;
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((row[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, previous + cost);
      previous = saved;
    }
  }
  return row[b.length] ?? 0;
}

export function suggestKey(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; score: number } | undefined;
  for (const candidate of known) {
    const score = distance(key.toLowerCase(), candidate);
    if (score <= 3 && (!best || score < best.score)) best = { key: candidate, score };
  }
  return best?.key;
}

/** `models.yaml:14 endpoints.gpu.base_url: expected …` and, when known, an indented fix line. */
export function formatConfigIssue(issue: ConfigIssue): string {
  const where = issue.line === undefined ? issue.file : `${issue.file}:${issue.line}`;
  const head =
    issue.path === '' ? `${where}: ${issue.message}` : `${where} ${issue.path}: ${issue.message}`;
  return issue.fix ? `${head}\n  fix: ${issue.fix}` : head;
}
