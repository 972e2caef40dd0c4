/** The shapes the rest of the app reads; config.ts re-exports them. */

import type { BackendKind, DelegateMcp, PermissionMode, SettingSource } from '../kinds.js';

export interface Defaults {
  model?: string;
  permission_mode: PermissionMode;
  allowed_tools: string[];
  disallowed_tools: string[];
  setting_sources: SettingSource[];
  max_turns: number;
  timeout_s: number;
  probe_timeout_s: number;
  system_prompt_append: string;
  dump_requests: boolean;
  keepalive_s: number;
  /** How long a job waits for a backend that is gone or stays loading before it ends as backend_down. */
  backend_grace_s: number;
  delegate_mcp: DelegateMcp;
  /** A shell command every job runs in its directory after its session; a failure fails the job. */
  verify?: string;
  /** Rounds a job's session gets to fix a failed verification. */
  verify_retries: number;
  /** How long one verification may run before it counts as failed. */
  verify_timeout_s: number;
}

export interface EndpointConfig {
  name: string;
  base_url: string;
  backend: BackendKind;
  host?: string;
  notes?: string;
  api_key_env?: string;
  /** Parallel requests the server takes, when it cannot tell (Ollama), or a cap below what it tells. */
  max_concurrent?: number;
  env: Record<string, string>;
}

export interface ModelEntry {
  name: string;
  notes?: string;
  /** Where the user runs it: relayed with a bring-up request, never a filter. */
  host?: string;
  served_name?: string;
  /** The endpoint tried first; others that serve the model are still used. */
  endpoint?: string;
  /** The window when the backend reports none; a smaller one than it reports is honoured as headroom. */
  context?: number;
  bring_up?: string;
  tags?: string[];
  /** Applied after the endpoint's env: the user's own choice, any variable. */
  env?: Record<string, string>;
  max_turns?: number;
  permission_mode?: PermissionMode;
  /** This model's jobs' verify command, over defaults.verify. */
  verify?: string;
}

/** models.yaml `agents.NAME`: how the user's subagent NAME runs here (over its file's localagents block). */
export interface AgentEntry {
  name: string;
  model?: string;
  verify?: string;
  isolation?: 'none' | 'worktree';
}

export interface RegistryConfig {
  defaults: Defaults;
  /** In config order: the user file's first, then entries new in later layers. */
  endpoints: EndpointConfig[];
  models: ModelEntry[];
  agents: AgentEntry[];
  /** The layers that existed, lowest first. */
  files: string[];
}

/** Rendered as `models.yaml:14 endpoints.gpu.base_url: expected an http(s) URL …` (see formatConfigIssue). */
export interface ConfigIssue {
  file: string;
  line?: number;
  path: string;
  message: string;
  fix?: string;
}

export type ConfigResult =
  | { ok: true; config: RegistryConfig; warnings: ConfigIssue[] }
  /** `files`: the layers that were read, so a broken config still says where it came from. */
  | { ok: false; issues: ConfigIssue[]; warnings: ConfigIssue[]; files: string[] };

/** `sidecar` is models.local.yaml beside the user file; only register_* writes it. */
export interface ConfigPaths {
  user: string;
  /** The user file was named (--config or LOCALAGENTS_CONFIG): its absence is worth a warning. */
  userNamed?: boolean;
  project?: string;
  sidecar: string;
}
