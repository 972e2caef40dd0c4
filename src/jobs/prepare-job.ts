import { stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { LocalAgentsError } from '../errors.js';
import type { Defaults } from '../registry/config-types.js';
import { redactUrl } from '../redact.js';
import type { ReadyEndpoint } from './ready-endpoint.js';
import { isTerminalStatus, type JobRecord, type JobRequest } from './job.js';
import { newJobRecord } from './record.js';
import { looksLikeClaudeModel } from './session-env.js';
import { createWorktree, findRepo } from './worktree.js';

/** resume_job needs a finished job that had a session. */
export function resumableJob(previous: JobRecord): JobRecord {
  if (!isTerminalStatus(previous.status) || previous.session_id === null) {
    const why = previous.session_id === null ? ' and has no session' : '';
    throw new LocalAgentsError(
      'JOB_STATE',
      `job ${previous.id} cannot be resumed: it is ${previous.status}${why}`,
      {
        hint: 'wait for it to finish (wait_job), or start a new job',
      },
    );
  }
  return previous;
}

/** Argument checks that need the disk, done before anything is probed or started. */
export async function checkRequest(
  request: JobRequest,
  previous: JobRecord | undefined,
): Promise<{ cwd: string; isolation: 'none' | 'worktree' }> {
  const cwd = previous?.cwd ?? resolvePath(request.cwd);
  const info = await stat(cwd).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new LocalAgentsError('BAD_ARGUMENT', `cwd "${cwd}" is not a directory`, {
      hint: 'pass an existing absolute directory as cwd, or leave it out for the server’s directory',
    });
  }
  const isolation = previous?.isolation ?? request.isolation ?? 'none';
  if (request.baseRef !== undefined && isolation !== 'worktree') {
    throw new LocalAgentsError('BAD_ARGUMENT', 'base_ref only applies to isolation "worktree"', {
      hint: 'add isolation: "worktree", or leave base_ref out',
    });
  }
  if (isolation === 'worktree' && !previous && !(await findRepo(cwd))) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `isolation "worktree" needs a git repository, and ${cwd} is not in one`,
      {
        hint: 'pass a cwd inside a git repository, or use isolation "none"',
      },
    );
  }
  return { cwd, isolation };
}

export interface NewRecordInput {
  id: string;
  request: JobRequest;
  previous: JobRecord | undefined;
  cwd: string;
  isolation: 'none' | 'worktree';
  defaults: Defaults;
  ready: ReadyEndpoint & { warnings?: string[] };
}

/** The queued record: the request over the defaults, the resolved endpoint, and its warnings. */
export function newRecordFor(input: NewRecordInput): JobRecord {
  const { request, defaults, ready } = input;
  const record = newJobRecord({
    id: input.id,
    task: request.task,
    cwd: input.cwd,
    isolation: input.isolation,
    permissionMode:
      request.permissionMode ?? ready.modelSettings?.permission_mode ?? defaults.permission_mode,
    maxTurns: request.maxTurns ?? ready.modelSettings?.max_turns ?? defaults.max_turns,
    timeoutS: request.timeoutS ?? defaults.timeout_s,
    requestedModel: request.model ?? input.previous?.requested_model ?? defaults.model,
    resumedFrom: input.previous?.id,
  });
  const warnings = [...(ready.warnings ?? [])];
  if (looksLikeClaudeModel(ready.servedId)) {
    warnings.push(
      `served id "${ready.servedId}" looks like a Claude model name: Claude Code ignores CLAUDE_CODE_MAX_CONTEXT_TOKENS for such names, so it assumes a larger window than ${ready.contextTokens === undefined ? 'the server has' : `${ready.contextTokens} tokens`} and may overflow; serve the model under another name (llama-server --alias, vLLM --served-model-name)`,
    );
  }
  return { ...record, ...placementFields(ready), warnings };
}

/**
 * Where the job runs, as the record says it: set when it is queued (where it would run now) and again when
 * the scheduler gives it a slot, possibly on another endpoint serving the same model.
 */
export function placementFields(
  ready: ReadyEndpoint,
): Pick<JobRecord, 'served_model' | 'endpoint' | 'base_url' | 'context_tokens' | 'context_source'> {
  return {
    served_model: ready.servedId,
    endpoint: ready.endpoint.name,
    base_url: redactUrl(ready.endpoint.base_url),
    context_tokens: ready.contextTokens ?? null,
    context_source: ready.contextSource,
  };
}

/**
 * Worktree jobs get theirs here, before the session starts. A resumed job goes back into the earlier
 * job's worktree (the session's transcript is keyed by its directory), recreated if it was removed.
 */
export async function attachWorktree(
  record: JobRecord,
  options: { previous: JobRecord | undefined; baseRef: string | undefined; stateDir: string },
): Promise<JobRecord> {
  if (record.isolation !== 'worktree') return record;
  const earlier = options.previous?.worktree;
  if (options.previous && earlier?.state === 'kept') {
    return {
      ...record,
      run_cwd: options.previous.run_cwd,
      worktree: { ...earlier, state: 'active' },
    };
  }
  const created = await createWorktree({
    stateDir: options.stateDir,
    cwd: record.cwd,
    jobId: record.id,
    baseRef: options.baseRef,
    reuse: earlier
      ? { path: earlier.path, branch: earlier.branch, baseCommit: earlier.base_commit }
      : undefined,
  });
  return {
    ...record,
    run_cwd: options.previous?.run_cwd ?? created.runCwd,
    worktree: created.info,
  };
}
