import { homedir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { LocalAgentsError } from '../errors.js';
import type { Defaults } from '../registry/config-types.js';
import type { Registry } from '../registry/registry.js';
import {
  findMenuEntry,
  type NotReadyResolution,
  type ResolveRequest,
} from '../registry/resolve.js';
import { createJobId, validateJobId } from './ids.js';
import { isTerminalStatus, type JobRecord, type JobRequest } from './job.js';
import {
  attachWorktree,
  checkRequest,
  newRecordFor,
  placementFields,
  resumableJob,
} from './prepare-job.js';
import type { ActiveJob } from './active-job.js';
import { completeOnce, type CompleteRequest, type Completion } from './complete.js';
import { readyEndpoint } from './ready-endpoint.js';
import { cancelElsewhere, recoverJobs, type Recovery } from './recover.js';
import { applyAgent, findAgents, loadAgent } from './agents.js';
import { createLeaseStore } from './leases.js';
import { discardJob, mergeJob, type MergeStrategy } from './merge.js';
import { waitForSlot } from './queue-job.js';
import { executeJob, type ExecuteDeps, type JobSettings } from './run-job.js';
import { createScheduler } from './scheduler.js';
import { buildSystemPromptAppend, delegateToolLists } from './session-env.js';
import { JOB_FILES, type JobListing } from './store.js';
import { waitForRecordElsewhere } from './watch-record.js';
import { moveRepoPaths, worktreeNotice } from './worktree-brief.js';

/** What the runner needs of the registry: resolution, fresh probes for the queue, the defaults (registry.ts). */
export type JobRegistry = Pick<
  Registry,
  'resolve' | 'snapshot' | 'defaults' | 'keyVariables' | 'config'
>;

export type StartOutcome =
  | { kind: 'started'; record: JobRecord }
  /** The registry could not give a ready endpoint: its own answer, to be passed on as is. */
  | { kind: 'not_ready'; resolution: NotReadyResolution };

/** One of the user's subagents as list_models and `localagents agents` show it. */
export interface AgentListing {
  name: string;
  scope: 'project' | 'user';
  file: string;
  description: string | null;
  tools: string[] | null;
  /** What a job as this agent runs on (null: the endpoint's first model, as with no model named). */
  model: string | null;
  verify: string | null;
  isolation: 'none' | 'worktree' | null;
}

export type CompleteOutcome =
  | { kind: 'completed'; completion: Completion }
  | { kind: 'not_ready'; resolution: NotReadyResolution };

export interface Runner {
  start(request: JobRequest): Promise<StartOutcome>;
  /** local_complete: one prompt through a short-lived shim route, no session. */
  complete(
    request: CompleteRequest & { model?: string | undefined; endpoint?: string | undefined },
  ): Promise<CompleteOutcome>;
  get(id: string): Promise<JobRecord>;
  /** The record once the job ends, or as it is after timeoutMs. onProgress sees every update meanwhile. */
  wait(id: string, timeoutMs: number, onProgress?: (record: JobRecord) => void): Promise<JobRecord>;
  cancel(id: string): Promise<JobRecord>;
  /** A finished worktree job's work into the branch it started from; worktree and branch removed (merge.ts). */
  merge(id: string, strategy: MergeStrategy, message?: string): Promise<JobRecord>;
  /** A finished worktree job's worktree and branch removed, its work thrown away. */
  discard(id: string): Promise<JobRecord>;
  /** The user's subagents a job in `cwd` can run as, each with what it would run with. */
  agents(cwd: string): Promise<AgentListing[]>;
  /** Oldest first; damaged records listed apart (store.ts). */
  list(includeFinished: boolean): Promise<JobListing>;
  /** Marks jobs of dead servers `interrupted` and stops their orphaned `claude` children. */
  recover(): Promise<Recovery>;
  /** Aborts every running job and waits until each has written its record. */
  close(): Promise<void>;
}

/** What each job is executed with, plus where state lives and the registry that resolves models. */
export interface RunnerDeps extends ExecuteDeps {
  stateDir: string;
  registry: JobRegistry;
}

/** The verify command a job runs: the call's, else its model's, else the defaults'; none: no verification. */
function verifySettings(
  request: JobRequest,
  modelVerify: string | undefined,
  defaults: Defaults,
): JobSettings['verify'] {
  const command = request.verify ?? modelVerify ?? defaults.verify;
  if (command === undefined || command.trim() === '') return undefined;
  return {
    command,
    retries: request.verifyRetries ?? defaults.verify_retries,
    timeoutS: defaults.verify_timeout_s,
  };
}

export function createRunner(deps: RunnerDeps): Runner {
  const active = new Map<string, ActiveJob>();
  const byEndpoint = new Map<string, Set<ActiveJob>>();
  let closed = false;
  const scheduler = createScheduler({
    snapshot: (signal) => deps.registry.snapshot(signal),
    leases: createLeaseStore(deps.stateDir),
    inflight: (baseUrl) =>
      [...(byEndpoint.get(baseUrl) ?? [])].reduce((sum, job) => sum + (job.inflight?.() ?? 0), 0),
    graceMs: async () => (await deps.registry.defaults()).backend_grace_s * 1000,
    diagnostics: deps.diagnostics,
  });

  /** The registry's answer for a model and endpoint, either left out when not given. */
  const resolve = (model: string | undefined, endpoint: string | undefined) =>
    deps.registry.resolve({
      ...(model === undefined ? {} : { model }),
      ...(endpoint === undefined ? {} : { endpoint }),
    });

  // Final records the disk refused (full, read-only): what callers are told, written again whenever asked for.
  const unsaved = new Map<string, JobRecord>();
  const retryUnsaved = async (id: string): Promise<JobRecord | undefined> => {
    const record = unsaved.get(id);
    if (!record) return undefined;
    await deps.store.save(record).then(
      () => unsaved.delete(id),
      () => undefined,
    );
    return record;
  };

  const get = async (id: string): Promise<JobRecord> =>
    active.get(validateJobId(id))?.record ?? (await retryUnsaved(id)) ?? deps.store.read(id);

  /**
   * A job's life after its record exists: it waits for a slot (scheduler.ts), then runs on the endpoint it got,
   * holding that slot until it ends.
   */
  const queueThenRun = async (
    job: ActiveJob,
    request: ResolveRequest,
    settings: JobSettings,
  ): Promise<void> => {
    const placed = await waitForSlot(
      { store: deps.store, scheduler, diagnostics: deps.diagnostics },
      job,
      request,
    );
    if (!placed) return;
    const ready = readyEndpoint(placed.resolution);
    job.record = { ...job.record, ...placementFields(ready) };
    const peers = byEndpoint.get(ready.endpoint.base_url) ?? new Set<ActiveJob>();
    byEndpoint.set(ready.endpoint.base_url, peers);
    for (const peer of peers) peer.overlapped = true;
    job.overlapped = peers.size > 0;
    peers.add(job);
    try {
      const saved = await executeJob(deps, job, ready, {
        ...settings,
        secretVariables: [
          ...settings.secretVariables,
          ...(ready.apiKeyEnv === undefined ? [] : [ready.apiKeyEnv]),
        ],
      });
      if (!saved) unsaved.set(job.record.id, job.record);
    } finally {
      peers.delete(job);
      await placed.lease.release().catch(() => undefined);
      scheduler.wake();
    }
  };

  /** The request with its agent's definition applied (agents.ts), and the agent's name for the record. */
  const withAgent = async (request: JobRequest): Promise<JobRequest> => {
    if (request.agent === undefined) return request;
    const agent = await loadAgent(
      request.agent,
      resolvePath(request.cwd),
      deps.baseEnv.HOME ?? homedir(),
    );
    const config = await deps.registry.config();
    const configured = config.ok
      ? config.config.agents.find((entry) => entry.name === agent.name)
      : undefined;
    return applyAgent(
      { ...request, agent: agent.name },
      agent,
      configured,
      (name) => config.ok && findMenuEntry(config.config, name) !== undefined,
    );
  };

  const agents = async (cwd: string): Promise<AgentListing[]> => {
    const found = await findAgents(resolvePath(cwd), deps.baseEnv.HOME ?? homedir());
    const config = await deps.registry.config();
    return found.map((agent) => {
      const applied = applyAgent(
        { task: '', cwd },
        agent,
        config.ok ? config.config.agents.find((entry) => entry.name === agent.name) : undefined,
        (name) => config.ok && findMenuEntry(config.config, name) !== undefined,
      );
      return {
        name: agent.name,
        scope: agent.scope,
        file: agent.file,
        description: agent.description ?? null,
        tools: agent.tools ?? null,
        model: applied.model ?? (config.ok ? (config.config.defaults.model ?? null) : null),
        verify: applied.verify ?? null,
        isolation: applied.isolation ?? null,
      };
    });
  };

  const start = async (given: JobRequest): Promise<StartOutcome> => {
    const request = await withAgent(given);
    if (closed)
      throw new LocalAgentsError('JOB_STATE', 'the server is shutting down', {
        hint: 'start the job again on a running server',
      });
    const previous =
      request.resumeJob === undefined
        ? undefined
        : resumableJob(await get(validateJobId(request.resumeJob, 'resume_job')));
    const { cwd, isolation } = await checkRequest(request, previous);
    const defaults = await deps.registry.defaults();
    // No model named: the resolver applies defaults.model (its one home).
    const model = previous?.served_model ?? request.model;
    const endpoint = previous?.endpoint ?? request.endpoint;
    const resolution = await resolve(model, endpoint);
    if (resolution.kind !== 'ready') return { kind: 'not_ready', resolution };
    const ready = readyEndpoint(resolution);

    const id = createJobId();
    const record = await attachWorktree(
      {
        ...newRecordFor({ id, request, previous, cwd, isolation, defaults, ready }),
        agent: request.agent ?? null,
      },
      { previous, baseRef: request.baseRef, stateDir: deps.stateDir },
    );
    await deps.store.save(record);
    await deps.store.write(
      id,
      JOB_FILES.task,
      request.task.endsWith('\n') ? request.task : `${request.task}\n`,
    );
    const worktree = record.worktree;

    const tools = delegateToolLists(
      request.allowedTools ?? defaults.allowed_tools,
      defaults.disallowed_tools,
    );
    const job: ActiveJob = {
      record,
      controller: new AbortController(),
      termination: undefined,
      overlapped: false,
      listeners: new Set(),
      done: Promise.resolve(),
    };
    active.set(id, job);
    const settings: JobSettings = {
      prompt: worktree
        ? moveRepoPaths(request.task, worktree.repo_root, worktree.path)
        : request.task,
      permissionMode: record.permission_mode,
      allowedTools: tools.allowed,
      disallowedTools: tools.disallowed,
      settingSources: defaults.setting_sources,
      maxTurns: record.max_turns,
      timeoutS: record.timeout_s,
      systemPromptAppend: buildSystemPromptAppend([
        defaults.system_prompt_append,
        request.systemPromptAppend,
        worktree ? worktreeNotice(worktree.repo_root, worktree.path) : undefined,
      ]),
      resumeSessionId: previous?.session_id ?? undefined,
      dumpRequests: defaults.dump_requests,
      keepaliveS: defaults.keepalive_s,
      backendGraceS: defaults.backend_grace_s,
      delegateMcp: defaults.delegate_mcp,
      // The shim holds the backend's key; the delegate (and whatever its model runs) never sees one.
      secretVariables: await deps.registry.keyVariables(),
      verify: verifySettings(request, ready.modelSettings?.verify, defaults),
      // An agent's own tool set, without the tools that spawn agents (a delegate never spawns delegates).
      tools: request.tools?.filter((tool) => !tools.disallowed.includes(tool)),
    };
    job.done = queueThenRun(job, { model, endpoint }, settings)
      .catch((error: unknown) =>
        deps.diagnostics.error(`job ${id} crashed`, { error: String(error) }),
      )
      .finally(() => {
        active.delete(id);
        for (const listener of job.listeners) listener(job.record);
      });
    return { kind: 'started', record: job.record };
  };

  const wait = async (
    id: string,
    timeoutMs: number,
    onProgress?: (record: JobRecord) => void,
  ): Promise<JobRecord> => {
    const job = active.get(validateJobId(id));
    if (!job)
      return (
        (await retryUnsaved(id)) ?? waitForRecordElsewhere(deps.store, id, timeoutMs, onProgress)
      );
    let timer: NodeJS.Timeout | undefined;
    const listener = onProgress ? (record: JobRecord) => onProgress(record) : undefined;
    if (listener) job.listeners.add(listener);
    try {
      await Promise.race([
        job.done,
        new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
    } finally {
      clearTimeout(timer);
      if (listener) job.listeners.delete(listener);
    }
    return job.record;
  };

  const complete = async (
    request: CompleteRequest & { model?: string | undefined; endpoint?: string | undefined },
  ): Promise<CompleteOutcome> => {
    const resolution = await resolve(request.model, request.endpoint);
    if (resolution.kind !== 'ready') return { kind: 'not_ready', resolution };
    const completion = await completeOnce(
      await deps.shim(),
      readyEndpoint(resolution),
      join(deps.stateDir, 'complete'),
      request,
    );
    return { kind: 'completed', completion };
  };

  const cancel = async (id: string): Promise<JobRecord> => {
    const job = active.get(validateJobId(id));
    if (job) {
      job.termination ??= 'cancelled';
      job.controller.abort();
      await job.done;
      return job.record;
    }
    return cancelElsewhere(deps.store, await deps.store.read(id), recover);
  };

  /** A finished job's record changed by `change` and saved; one still running is refused by merge.ts. */
  const settle = async (
    id: string,
    change: (record: JobRecord) => Promise<JobRecord>,
  ): Promise<JobRecord> => {
    const record = await change(await get(id));
    await deps.store.save(record);
    return record;
  };

  const list = async (includeFinished: boolean): Promise<JobListing> => {
    for (const id of unsaved.keys()) await retryUnsaved(id);
    const listing = await deps.store.list();
    const records = listing.records.map(
      (record) => active.get(record.id)?.record ?? unsaved.get(record.id) ?? record,
    );
    return {
      records: includeFinished
        ? records
        : records.filter((record) => !isTerminalStatus(record.status)),
      damaged: listing.damaged,
    };
  };

  const recover = (): Promise<Recovery> => recoverJobs(deps.store, (id) => active.has(id));

  const close = async (): Promise<void> => {
    closed = true;
    const running = [...active.values()];
    for (const job of running) {
      job.termination ??= 'shutdown';
      job.controller.abort();
    }
    scheduler.close();
    await Promise.all(running.map((job) => job.done));
    // A last try for records the disk refused; what still fails is relabelled interrupted at the next start.
    for (const id of [...unsaved.keys()]) await retryUnsaved(id);
  };

  return {
    start,
    complete,
    get,
    wait,
    cancel,
    merge: (id, strategy, message) => settle(id, (record) => mergeJob(record, strategy, message)),
    discard: (id) => settle(id, discardJob),
    agents,
    list,
    recover,
    close,
  };
}
