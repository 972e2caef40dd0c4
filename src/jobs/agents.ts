import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { LocalAgentsError } from '../errors.js';
import type { AgentEntry } from '../registry/config-types.js';
import type { JobRequest } from './job.js';

/**
 * The user's own subagent definitions (`.claude/agents/<name>.md`, Claude Code's format: YAML frontmatter with
 * `name`, `description`, `tools`, `model`, then the agent's system prompt), found for the project (the directory
 * and every parent up to the filesystem root) and then the user (`~/.claude/agents/`). A `localagents:` block in
 * the frontmatter says how to run the agent on a local model: `model`, `verify`, `isolation`.
 */
export interface AgentDefinition {
  name: string;
  file: string;
  scope: 'project' | 'user';
  description?: string;
  /** The agent's system prompt: the file's body. */
  prompt: string;
  /** The tools it may use; undefined: Claude Code's default set. */
  tools?: string[];
  /** Claude Code's own model field (sonnet, opus, inherit…): used only when it names a localagents menu entry. */
  model?: string;
  localagents: AgentSettings;
}

export interface AgentSettings {
  model?: string | undefined;
  verify?: string | undefined;
  isolation?: 'none' | 'worktree' | undefined;
}

const toolList = z
  .union([z.string(), z.array(z.string())])
  .transform((value) =>
    (Array.isArray(value) ? value : value.split(','))
      .map((tool) => tool.trim())
      .filter((tool) => tool.length > 0),
  );

export const AgentSettingsSchema = z.strictObject({
  model: z.string().min(1).optional(),
  verify: z.string().min(1).optional(),
  isolation: z.enum(['none', 'worktree']).optional(),
});

const FrontmatterSchema = z.looseObject({
  name: z.string().optional(),
  description: z.string().optional(),
  tools: toolList.optional(),
  model: z.string().optional(),
  localagents: AgentSettingsSchema.optional(),
});

const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** One agent file: its frontmatter and body; an error naming the file and the field when it cannot be read. */
export function parseAgentFile(
  text: string,
  file: string,
  scope: AgentDefinition['scope'],
): AgentDefinition {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  const fallbackName = file.replace(/^.*\//, '').replace(/\.md$/, '');
  let front: unknown = {};
  if (match) {
    try {
      front = parseYaml(match[1] ?? '') ?? {};
    } catch (error) {
      throw new LocalAgentsError(
        'CONFIG_INVALID',
        `${file}: the frontmatter is not YAML: ${String(error)}`,
        {
          hint: 'fix the block between the --- lines',
        },
      );
    }
  }
  const parsed = FrontmatterSchema.safeParse(front);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new LocalAgentsError(
      'CONFIG_INVALID',
      `${file}: ${issue?.path.join('.') ?? 'frontmatter'}: ${issue?.message ?? 'invalid'}`,
      {
        hint: 'tools is a list or a comma-separated string; localagents takes model, verify and isolation',
      },
    );
  }
  const data = parsed.data;
  const definition: AgentDefinition = {
    name: data.name ?? fallbackName,
    file,
    scope,
    prompt: (match ? (match[2] ?? '') : text).trim(),
    localagents: data.localagents ?? {},
  };
  if (data.description !== undefined) definition.description = data.description;
  if (data.tools !== undefined) definition.tools = data.tools;
  if (data.model !== undefined) definition.model = data.model;
  return definition;
}

/** Where agent files are looked for, nearest first: the project's (cwd and its parents), then the user's. */
function agentDirs(cwd: string, home: string): { dir: string; scope: AgentDefinition['scope'] }[] {
  const dirs: { dir: string; scope: AgentDefinition['scope'] }[] = [];
  const userDir = join(home, '.claude', 'agents');
  for (let at = resolve(cwd); ; at = dirname(at)) {
    const dir = join(at, '.claude', 'agents');
    if (dir !== userDir) dirs.push({ dir, scope: 'project' });
    if (dirname(at) === at) break;
  }
  dirs.push({ dir: userDir, scope: 'user' });
  return dirs;
}

/** Every agent a job in `cwd` can run, a project's definition over the user's of the same name. */
export async function findAgents(cwd: string, home: string): Promise<AgentDefinition[]> {
  const found = new Map<string, AgentDefinition>();
  for (const { dir, scope } of agentDirs(cwd, home)) {
    let names: string[];
    try {
      names = (await readdir(dir)).filter((name) => name.endsWith('.md')).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const file = join(dir, name);
      const agent = parseAgentFile(await readFile(file, 'utf8'), file, scope);
      if (!found.has(agent.name)) found.set(agent.name, agent);
    }
  }
  return [...found.values()];
}

/** The agent called `name` for a job in `cwd`, or an error listing the ones there are. */
export async function loadAgent(name: string, cwd: string, home: string): Promise<AgentDefinition> {
  if (!AGENT_NAME.test(name))
    throw new LocalAgentsError('BAD_ARGUMENT', `agent "${name}" is not an agent name`, {
      hint: 'use the name of a file in .claude/agents/ without .md',
    });
  const agents = await findAgents(cwd, home);
  const agent = agents.find((candidate) => candidate.name === name);
  if (agent) return agent;
  throw new LocalAgentsError(
    'BAD_ARGUMENT',
    `there is no agent "${name}" for ${cwd} (looked in .claude/agents/ of it and its parents, and ~/.claude/agents/)`,
    {
      hint:
        agents.length > 0
          ? `use one of: ${agents.map((candidate) => candidate.name).join(', ')}`
          : 'write .claude/agents/<name>.md (Claude Code subagent format), or leave agent out',
    },
  );
}

/**
 * A job request with the agent's definition applied under it: the call's own arguments win, then models.yaml's
 * `agents.NAME`, then the file's `localagents:` block, then Claude Code's `model` field when it names a menu
 * entry. The agent's prompt comes before the call's system_prompt_append; its tools are the delegate's tools.
 */
export function applyAgent(
  request: JobRequest,
  agent: AgentDefinition,
  configured: AgentEntry | undefined,
  isMenuName: (name: string) => boolean,
): JobRequest {
  const fileModel = agent.model !== undefined && isMenuName(agent.model) ? agent.model : undefined;
  const model = configured?.model ?? agent.localagents.model ?? fileModel;
  const isolation = configured?.isolation ?? agent.localagents.isolation;
  const verify = configured?.verify ?? agent.localagents.verify;
  const append = [agent.prompt, request.systemPromptAppend]
    .filter((part): part is string => part !== undefined && part.trim() !== '')
    .join('\n\n');
  return {
    ...request,
    model: request.model ?? model,
    isolation: request.isolation ?? isolation,
    verify: request.verify ?? verify,
    allowedTools: request.allowedTools ?? agent.tools,
    tools: request.tools ?? agent.tools,
    systemPromptAppend: append === '' ? undefined : append,
  };
}
