import { z } from 'zod';

import { CONTEXT_SOURCES, PERMISSION_MODES, type PermissionMode } from '../kinds.js';

export const JOB_STATUSES = [
  'queued',
  'running',
  'succeeded',
  'failed',
  'timeout',
  'cancelled',
  'interrupted',
  /** The session ended well but the job's verify command failed (after any verify_retries rounds). */
  'failed_verification',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

const TERMINAL: ReadonlySet<JobStatus> = new Set([
  'succeeded',
  'failed',
  'timeout',
  'cancelled',
  'interrupted',
  'failed_verification',
]);

export function isTerminalStatus(status: JobStatus): boolean {
  return TERMINAL.has(status);
}

const diffstatFileSchema = z.object({
  path: z.string(),
  insertions: z.number().nullable(),
  deletions: z.number().nullable(),
  untracked: z.boolean(),
});

export const diffstatSchema = z.object({
  files_changed: z.number(),
  insertions: z.number(),
  deletions: z.number(),
  files: z.array(diffstatFileSchema),
});
export type Diffstat = z.infer<typeof diffstatSchema>;

export const worktreeInfoSchema = z.object({
  repo_root: z.string(),
  path: z.string(),
  branch: z.string(),
  base_ref: z.string(),
  base_commit: z.string(),
  /**
   * The branch the job started from (HEAD's branch, or base_ref when it names one): where merge_job merges.
   * Absent for a job started from a detached commit, or recorded before it was kept.
   */
  base_branch: z.string().optional(),
  /**
   * active while the job runs; kept when it changed something; removed when it did not (or discard_job);
   * merged once merge_job took its work into base_branch.
   */
  state: z.enum(['active', 'kept', 'removed', 'merged']),
  /** What merge_job did: the strategy, the branch it merged into and the commit that branch then had. */
  merged: z
    .object({
      /** apply: a working-tree job's own changes applied, uncommitted, to the user's working tree. */
      strategy: z.enum(['merge', 'squash', 'cherry-pick', 'apply']),
      into: z.string(),
      commit: z.string(),
    })
    .optional(),
  head_commit: z.string().optional(),
  diffstat: diffstatSchema.optional(),
  /** The calls that look at, take or throw away the work (job_diff, merge_job, discard_job). */
  review: z.object({ diff: z.string(), merge: z.string(), drop: z.string() }).optional(),
});
export type WorktreeInfo = z.infer<typeof worktreeInfoSchema>;

export const usageSchema = z.object({
  input_tokens: z.number(),
  output_tokens: z.number(),
  cache_read_input_tokens: z.number(),
  cache_creation_input_tokens: z.number(),
});
export type Usage = z.infer<typeof usageSchema>;

/** Per-job figures computed from the shim's request log (and llama.cpp/vLLM /metrics when it is on). */
export const backendFiguresSchema = z.object({
  requests: z.number(),
  failed_requests: z.number(),
  prompt_tokens: z.number(),
  cached_tokens: z.number(),
  cache_hit_rate: z.number().nullable(),
  /** false: the backend reports no cache figures (Ollama), so cached_tokens 0 means nothing. */
  cache_reported: z.literal(false).optional(),
  generated_tokens: z.number(),
  rewrites: z.record(z.string(), z.number()),
  /** Prompts that extended the previous prompt of their conversation (the KV cache could be reused). */
  prefix_extends: z.number(),
  /** Prompts that changed an earlier part of the conversation (the cache is lost from there). */
  prefix_breaks: z.number(),
  prompt_tokens_per_s: z.number().nullable(),
  generation_tokens_per_s: z.number().nullable(),
  /** job: the speeds are this job's own; server_wide: other jobs ran on the endpoint at the same time. */
  speed_scope: z.enum(['job', 'server_wide', 'unavailable']),
  /**
   * Speculative decoding over the job's span, from vLLM's spec_decode counters (same scope as the speeds).
   * Absent or null where the backend does not report it: llama.cpp has no such counters in /metrics and no
   * draft counts in its /v1/messages answers (docs/jobs.md).
   */
  spec_decode: z
    .object({
      drafts: z.number(),
      draft_tokens: z.number(),
      accepted_tokens: z.number(),
      /** accepted / draft tokens. */
      acceptance_rate: z.number(),
      /** Tokens per step: 1 + accepted / drafts. */
      mean_acceptance_length: z.number(),
    })
    .nullable()
    .optional(),
});
export type BackendFigures = z.infer<typeof backendFiguresSchema>;

export const jobErrorSchema = z.object({
  kind: z.enum([
    'api_error',
    'max_turns',
    'timeout',
    'cancelled',
    'interrupted',
    'session_failed',
    'setup_failed',
    /** job.json could not be written: the job was stopped, its outcome is said in the answer. */
    'record_write_failed',
    /** The backend refused what retries cannot fix (a key, a model, a server flag): ended at once. */
    'backend_config',
    /** The backend was gone or kept loading past defaults.backend_grace_s. */
    'backend_down',
    /** The verify command failed after the session (and its verify_retries rounds). */
    'verification_failed',
  ]),
  message: z.string(),
});
export type JobError = z.infer<typeof jobErrorSchema>;

/** The job's verify command, as it ran after the session (its last round). */
export const verificationSchema = z.object({
  command: z.string(),
  /** null: it did not exit by itself (timed out, or the job was stopped). */
  exit_code: z.number().nullable(),
  passed: z.boolean(),
  duration_s: z.number(),
  /** The last lines of its output (stdout and stderr together), at most 4 KB. */
  output_tail: z.string(),
  /** Verification rounds run: 1 + the retries the session got (verify_retries). */
  rounds: z.number(),
});
export type Verification = z.infer<typeof verificationSchema>;

export const jobRecordSchema = z.object({
  version: z.literal(1),
  id: z.string(),
  task: z.string(),
  status: z.enum(JOB_STATUSES),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  duration_ms: z.number().nullable(),
  requested_model: z.string().nullable(),
  served_model: z.string().nullable(),
  endpoint: z.string().nullable(),
  base_url: z.string().nullable(),
  context_tokens: z.number().nullable(),
  context_source: z.enum(CONTEXT_SOURCES).nullable(),
  cwd: z.string(),
  run_cwd: z.string(),
  isolation: z.enum(['none', 'worktree']),
  worktree: worktreeInfoSchema.nullable(),
  permission_mode: z.enum(PERMISSION_MODES),
  max_turns: z.number(),
  timeout_s: z.number(),
  resumed_from: z.string().nullable(),
  session_id: z.string().nullable(),
  turns: z.number(),
  tool_calls: z.number(),
  files_touched: z.array(z.string()),
  last_activity: z.object({ at: z.string(), text: z.string() }).nullable(),
  /** The last tool call, e.g. `Bash(npm test)`. */
  last_tool: z.string().nullable().default(null),
  result_text: z.string().nullable(),
  terminal_reason: z.string().nullable(),
  error: jobErrorSchema.nullable(),
  usage: usageSchema.nullable(),
  backend: backendFiguresSchema.nullable(),
  /**
   * isolation none in a git repository: whether git saw the tree change while the job ran (edits made
   * through Bash included); null when it cannot be told (no repository, or a worktree job).
   */
  changed_on_disk: z.boolean().nullable().default(null),
  /**
   * While the job is queued: its place among the jobs waiting for its model (1 is next), why it waits
   * ("waiting for a free slot on desk (2/2 busy)") and since when; null once it started (scheduler.ts).
   */
  queue: z
    .object({ position: z.number(), reason: z.string(), since: z.string() })
    .nullable()
    .default(null),
  verification: verificationSchema.nullable().default(null),
  /** The user's subagent the job ran as (.claude/agents/NAME.md), or null. */
  agent: z.string().nullable().default(null),
  /** A job that ended with no edits and no meaningful result text: it may have done nothing. */
  possible_no_op: z.boolean(),
  warnings: z.array(z.string()),
  /** The server process that runs the job; a dead owner at the next start means `interrupted`. */
  owner_pid: z.number(),
  /** The `claude` child, so an orphan left by a killed server can be reaped. */
  claude_pid: z.number().nullable(),
});
export type JobRecord = z.infer<typeof jobRecordSchema>;

/** Options the caller may set for one job; everything else comes from the registry defaults. */
export interface JobRequest {
  task: string;
  model?: string | undefined;
  endpoint?: string | undefined;
  cwd: string;
  isolation?: 'none' | 'worktree' | undefined;
  baseRef?: string | undefined;
  permissionMode?: PermissionMode | undefined;
  maxTurns?: number | undefined;
  allowedTools?: string[] | undefined;
  systemPromptAppend?: string | undefined;
  resumeJob?: string | undefined;
  timeoutS?: number | undefined;
  /** A shell command run in the job's directory after the session; its failure fails the job. */
  verify?: string | undefined;
  /** Rounds the session gets to fix a failed verification (the output as its next message). */
  verifyRetries?: number | undefined;
  /** The user's subagent (.claude/agents/NAME.md) to run: its prompt, tools and localagents settings. */
  agent?: string | undefined;
  /** The delegate's whole tool set (an agent's `tools`); undefined: Claude Code's default set. */
  tools?: string[] | undefined;
}
