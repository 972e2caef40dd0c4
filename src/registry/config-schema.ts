import { z } from 'zod';
import { DELEGATE_MCP_MODES, PERMISSION_MODES, SETTING_SOURCES } from '../kinds.js';

/**
 * The schema of ONE models.yaml layer: every key optional, because layers merge key by key.
 * Messages are not written here: config-messages.ts turns each issue into "expected …" text
 * by the field's path, so the same wording serves parse errors and register_* input errors.
 */

const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
});

const text = z.string();
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/);
// YAML reads `PORT: 8080` as a number; an environment value is always a string.
const envValue = z.union([z.string(), z.number(), z.boolean()]).transform((value) => String(value));

export const DefaultsLayerSchema = z.object({
  model: text.min(1).optional(),
  permission_mode: z.enum(PERMISSION_MODES).optional(),
  allowed_tools: z.array(text.min(1)).optional(),
  disallowed_tools: z.array(text.min(1)).optional(),
  setting_sources: z.array(z.enum(SETTING_SOURCES)).optional(),
  max_turns: z.number().int().min(1).optional(),
  timeout_s: z.number().positive().optional(),
  probe_timeout_s: z.number().min(0.05).max(60).optional(),
  system_prompt_append: text.optional(),
  dump_requests: z.boolean().optional(),
  keepalive_s: z.number().min(0).optional(),
  backend_grace_s: z.number().min(0).optional(),
  delegate_mcp: z.enum(DELEGATE_MCP_MODES).optional(),
  verify: text.min(1).optional(),
  verify_retries: z.number().int().min(0).max(10).optional(),
  verify_timeout_s: z.number().positive().optional(),
});

export const EndpointSchema = z.object({
  base_url: httpUrl,
  // Any spelling: config-rules reads it with backendKindOf, config-parse warns about one it does not know.
  backend: text.optional(),
  host: text.optional(),
  notes: text.optional(),
  api_key_env: envName.optional(),
  max_concurrent: z.number().int().min(1).optional(),
  env: z.record(envName, envValue).optional(),
});

export const ModelSchema = z.object({
  notes: text.optional(),
  host: text.optional(),
  served_name: text.min(1).optional(),
  endpoint: text.min(1).optional(),
  context: z.number().int().min(256).optional(),
  bring_up: text.optional(),
  tags: z.array(text.min(1)).optional(),
  // The session's own settings for this model, over defaults (a tool call's arguments still win).
  env: z.record(envName, envValue).optional(),
  max_turns: z.number().int().min(1).optional(),
  permission_mode: z.enum(PERMISSION_MODES).optional(),
  verify: text.min(1).optional(),
});

/** How a user's Claude Code subagent (.claude/agents/NAME.md) runs on a local model; over its frontmatter. */
export const AgentSchema = z.object({
  model: text.min(1).optional(),
  verify: text.min(1).optional(),
  isolation: z.enum(['none', 'worktree']).optional(),
});

// `qwen3:` (null) and `qwen3: "notes"` are both friendly ways to list a menu entry.
const modelEntry = z.preprocess(
  (value) => (value === null ? {} : typeof value === 'string' ? { notes: value } : value),
  ModelSchema,
);

const entryName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/);

export const LayerSchema = z.object({
  defaults: z.preprocess((value) => value ?? {}, DefaultsLayerSchema).optional(),
  endpoints: z.preprocess((value) => value ?? {}, z.record(entryName, EndpointSchema)).optional(),
  models: z.preprocess((value) => value ?? {}, z.record(entryName, modelEntry)).optional(),
  agents: z.preprocess((value) => value ?? {}, z.record(entryName, AgentSchema)).optional(),
});

export type Layer = z.output<typeof LayerSchema>;
export type EndpointLayer = z.output<typeof EndpointSchema>;
export type ModelLayer = z.output<typeof ModelSchema>;

/** Known keys per level, for "unknown key" warnings (zod's default strips them silently). */
export const KNOWN_KEYS = {
  top: Object.keys(LayerSchema.shape),
  defaults: Object.keys(DefaultsLayerSchema.shape),
  endpoint: Object.keys(EndpointSchema.shape),
  model: Object.keys(ModelSchema.shape),
  agent: Object.keys(AgentSchema.shape),
} as const;
