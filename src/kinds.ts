/**
 * The small closed vocabularies that several areas share, each written once: models.yaml validates
 * against them, the shim and the emulator branch on them, tools and the CLI offer them as choices.
 */

/** What serves an endpoint; `other` is detected by the probe. */
export const BACKEND_KINDS = ['llama.cpp', 'vllm', 'ollama', 'lmstudio', 'other'] as const;
export type BackendKind = (typeof BACKEND_KINDS)[number];

/**
 * The `backend:` spellings models.yaml accepts: ours, the Python original's (`llamacpp`, `ollama`) and common
 * variants, case and separators aside.
 */
const BACKEND_SPELLINGS: Readonly<Record<string, BackendKind>> = {
  llamacpp: 'llama.cpp',
  llamaserver: 'llama.cpp',
  vllm: 'vllm',
  other: 'other',
  ollama: 'ollama',
  lmstudio: 'lmstudio',
  lms: 'lmstudio',
};

/** A `backend:` value with case and separators aside, as BACKEND_SPELLINGS keys it. */
export function backendSpelling(value: string): string {
  return value.toLowerCase().replace(/[\s._-]/g, '');
}

/** The kind a `backend:` value names, or undefined for a value no spelling matches. */
export function backendKindOf(value: string): BackendKind | undefined {
  return BACKEND_SPELLINGS[backendSpelling(value)];
}

/** Claude Code's permission modes, as the delegate gets one. */
export const PERMISSION_MODES = [
  'default',
  'acceptEdits',
  'bypassPermissions',
  'plan',
  'dontAsk',
] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];

export function isPermissionMode(value: string): value is PermissionMode {
  return PERMISSION_MODES.some((mode) => mode === value);
}

/** Which Claude Code settings files a delegate loads. */
export const SETTING_SOURCES = ['user', 'project', 'local'] as const;
export type SettingSource = (typeof SETTING_SOURCES)[number];

/** Which of the user's MCP servers a delegate gets: all but localagents itself, or none. */
export const DELEGATE_MCP_MODES = ['inherit', 'none'] as const;
export type DelegateMcp = (typeof DELEGATE_MCP_MODES)[number];

/**
 * Where a job's window came from: the server's report, models.yaml's `context`, the window an unloaded Ollama
 * model will get from its Modelfile's num_ctx, or nothing.
 */
export const CONTEXT_SOURCES = ['probe', 'menu', 'predicted', 'unknown'] as const;
export type ContextSource = (typeof CONTEXT_SOURCES)[number];
