import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describeError } from '../errors.js';
import type { ActiveJob, ExecuteDeps, JobSettings, ReadyEndpoint } from './active-job.js';
import {
  computeBackendFigures,
  describeFigures,
  fetchMetrics,
  type MetricsSnapshot,
} from './backend-figures.js';
import { watchCancelRequest } from './cancel-request.js';
import type { JobRecord } from './job.js';
import {
  configuredMcpServers,
  delegateMcpPolicy,
  ownPackageRoots,
  type DelegateMcpPolicy,
} from './delegate-mcp.js';
import { routeConfigFor } from './ready-endpoint.js';
import { decideOutcome, finishedFields, isPossibleNoOp } from './outcome.js';
import { isProcessAlive, terminateProcess } from './process.js';
import { buildSessionEnv } from './session-env.js';
import { JOB_FILES } from './store.js';
import { createTranscript, formatDoneLine, formatStartLine, formatStderr } from './transcript.js';
import { fingerprintTree } from './tree-fingerprint.js';
import { finishWorktree } from './worktree.js';

const SAVE_DELAY_MS = 250;

/** Which MCP servers this job's delegate loads: never localagents itself (see delegate-mcp.ts). */
async function delegateMcpFor(
  deps: ExecuteDeps,
  record: JobRecord,
  settings: JobSettings,
): Promise<DelegateMcpPolicy> {
  const [configured, packageRoots] = await Promise.all([
    configuredMcpServers({
      home: deps.baseEnv.HOME ?? homedir(),
      claudeConfigDir: deps.baseEnv.CLAUDE_CONFIG_DIR,
      dirs: [record.cwd, record.run_cwd],
    }),
    ownPackageRoots(),
  ]);
  return delegateMcpPolicy(settings.delegateMcp, configured, {
    packageRoots,
    mcpUrls: [...(deps.mcpUrls?.() ?? [])],
  });
}

/** Runs one job to its end. Never throws: whatever happens ends up in the record, and teardown always runs. */
export async function executeJob(
  deps: ExecuteDeps,
  job: ActiveJob,
  ready: ReadyEndpoint,
  settings: JobSettings,
): Promise<void> {
  const { store } = deps;
  const id = job.record.id;
  const transcriptFile = store.open(id, JOB_FILES.transcript);
  const eventsFile = store.open(id, JOB_FILES.events);
  const transcript = createTranscript(job.record.run_cwd);
  let saveTimer: NodeJS.Timeout | undefined;
  const update = (patch: Partial<JobRecord>, persist: 'now' | 'soon'): Promise<void> => {
    job.record = { ...job.record, ...patch };
    for (const listener of job.listeners) listener(job.record);
    if (persist === 'soon') {
      saveTimer ??= setTimeout(() => {
        saveTimer = undefined;
        store
          .save(job.record)
          .catch((error: unknown) => deps.diagnostics.warn(`job ${id}: ${describeError(error)}`));
      }, SAVE_DELAY_MS);
      return Promise.resolve();
    }
    clearTimeout(saveTimer);
    saveTimer = undefined;
    return store.save(job.record);
  };
  const writeLines = (lines: string[]): void => {
    for (const line of lines) transcriptFile.write(`${line}\n`);
  };

  const startedAt = new Date();
  const timeout = setTimeout(() => {
    job.termination ??= 'timeout';
    job.controller.abort();
  }, settings.timeoutS * 1000);
  const cancelRequest = watchCancelRequest(store.jobDir(id), () => {
    job.termination ??= 'cancelled';
    job.controller.abort();
  });
  let route: { baseUrl: string; close(): Promise<void> | void } | undefined;
  let metricsBefore: Promise<MetricsSnapshot | undefined> = Promise.resolve(undefined);
  let thrown: unknown;
  // Once our child has exited and been reaped its pid can belong to another process: never signal it then.
  let claudeExited = false;
  // Taken while claude starts; compared at the end so edits made through Bash count as edits too.
  const treeBefore =
    job.record.isolation === 'none'
      ? fingerprintTree(job.record.run_cwd).catch(() => undefined)
      : Promise.resolve(undefined);
  try {
    const shim = await deps.shim();
    route = shim.addRoute(
      routeConfigFor(ready, {
        logDir: store.jobDir(id),
        dumpFullRequests: settings.dumpRequests,
        keepaliveMs: settings.keepaliveS * 1000,
      }),
    );
    // Taken while claude starts (≥ 0.5 s before its first request), so it costs the job no time.
    metricsBefore = fetchMetrics(ready.endpoint.base_url, ready.apiKey);
    // Not awaited: saves keep their order, and claude's start (≥ 0.5 s) need not wait for the disk.
    update({ status: 'running', started_at: startedAt.toISOString() }, 'now').catch(
      (error: unknown) => deps.diagnostics.warn(`job ${id}: ${describeError(error)}`),
    );
    writeLines([
      formatStartLine({
        jobId: id,
        endpoint: ready.endpoint.name,
        model: ready.servedId,
        contextTokens: ready.contextTokens,
        contextSource: ready.contextSource,
        cwd: job.record.run_cwd,
        resumedFrom: job.record.resumed_from,
      }),
      `task: ${settings.prompt}`,
    ]);
    const env = buildSessionEnv({
      baseEnv: deps.baseEnv,
      servedId: ready.servedId,
      baseUrl: route.baseUrl,
      contextTokens: ready.contextTokens,
      timeoutS: settings.timeoutS,
      endpointEnv: ready.endpoint.env,
    });
    // Loaded on the first job, not at start: the Agent SDK is a tenth of a second `serve` must not spend
    // before it answers the MCP handshake.
    const { runSession } = await import('./session.js');
    const mcp = await delegateMcpFor(deps, job.record, settings);
    const session = runSession({
      prompt: settings.prompt,
      cwd: job.record.run_cwd,
      env,
      model: ready.servedId,
      systemPromptAppend: settings.systemPromptAppend,
      permissionMode: settings.permissionMode,
      allowedTools: settings.allowedTools,
      disallowedTools: settings.disallowedTools,
      settingSources: settings.settingSources,
      mcp,
      maxTurns: settings.maxTurns,
      resume: settings.resumeSessionId,
      claudePath: deps.claudePath,
      signal: job.controller.signal,
      onSpawn: (pid) => void update({ claude_pid: pid }, 'now'),
      onExit: () => (claudeExited = true),
      onStderr: (text) => writeLines(formatStderr(text)),
    });
    for await (const message of session) {
      eventsFile.write(
        `${JSON.stringify({ ts: new Date().toISOString(), kind: kindOf(message), message })}\n`,
      );
      const lines = transcript.add(message);
      writeLines(lines);
      const stats = transcript.stats();
      if (lines.length === 0 && stats.sessionId === job.record.session_id) continue;
      await update(
        {
          session_id: stats.sessionId ?? job.record.session_id,
          turns: stats.turns,
          tool_calls: stats.toolCalls,
          files_touched: stats.filesTouched,
          last_tool: stats.lastTool ?? job.record.last_tool,
          last_activity: stats.lastActivity
            ? { at: new Date().toISOString(), text: stats.lastActivity }
            : job.record.last_activity,
        },
        'soon',
      );
    }
  } catch (error) {
    thrown = error;
  } finally {
    clearTimeout(timeout);
    cancelRequest.close();
  }

  // Teardown: each step guarded so one failure cannot skip the rest.
  const guard = async (what: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
    } catch (error) {
      deps.diagnostics.warn(`job ${id}: ${what} failed: ${describeError(error)}`);
      job.record = {
        ...job.record,
        warnings: [...job.record.warnings, `${what} failed: ${describeError(error)}`],
      };
    }
  };
  // `localagents cancel` from another process leaves a marker and stops claude: a cancel, not a failure.
  // The watch above normally sees it first; this covers a claude stopped before its event arrived.
  // A session that reached its result finished on its own and keeps its outcome.
  if (
    !job.termination &&
    !transcript.stats().result &&
    (await access(join(store.jobDir(id), JOB_FILES.cancelRequest)).then(
      () => true,
      () => false,
    ))
  ) {
    job.termination = 'cancelled';
  }
  const pid = job.record.claude_pid;
  if (pid !== null && !claudeExited && isProcessAlive(pid))
    await guard('stopping claude', () => terminateProcess(pid, 3000));
  await guard('closing the shim route', async () => {
    await route?.close();
  });
  const stats = transcript.stats();
  const outcome = decideOutcome(job.termination, stats.result, thrown);
  if (thrown !== undefined && !job.termination && !stats.result)
    writeLines([`! ${describeError(thrown)}`]);
  const patch = finishedFields(stats, outcome, startedAt, new Date(), job.record);
  job.record = { ...job.record, ...patch };
  await guard('computing backend figures', async () => {
    const before = await metricsBefore;
    const metricsAfter = before
      ? await fetchMetrics(ready.endpoint.base_url, ready.apiKey)
      : undefined;
    const requestLog = await readFile(join(store.jobDir(id), JOB_FILES.requests), 'utf8').catch(
      () => '',
    );
    job.record = {
      ...job.record,
      backend: computeBackendFigures({
        requestLog,
        before,
        after: metricsAfter,
        overlapped: job.overlapped,
      }),
    };
  });
  const worktree = job.record.worktree;
  if (worktree)
    await guard('finishing the worktree', async () => {
      job.record = { ...job.record, worktree: await finishWorktree(worktree, id) };
    });
  await guard('checking the tree for changes', async () => {
    const before = await treeBefore;
    if (before === undefined) return;
    const after = await fingerprintTree(job.record.run_cwd);
    job.record = { ...job.record, changed_on_disk: after !== before };
  });
  job.record = { ...job.record, possible_no_op: isPossibleNoOp(job.record) };
  writeLines([
    formatDoneLine({
      status: job.record.status,
      turns: job.record.turns,
      toolCalls: job.record.tool_calls,
      durationMs: job.record.duration_ms ?? 0,
      metrics: job.record.backend ? describeFigures(job.record.backend) : undefined,
    }),
  ]);
  if (job.record.error) writeLines([`error: ${job.record.error.message}`]);
  await guard('closing the job logs', async () => {
    await Promise.all([transcriptFile.close(), eventsFile.close()]);
  });
  await guard('writing job.json', () => update({}, 'now'));
}

function kindOf(message: unknown): string {
  if (typeof message !== 'object' || message === null || !('type' in message)) return 'unknown';
  const type = typeof message.type === 'string' ? message.type : 'unknown';
  return 'subtype' in message && typeof message.subtype === 'string'
    ? `${type}/${message.subtype}`
    : type;
}
