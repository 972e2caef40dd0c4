import { access } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describeError } from '../errors.js';
import type { Diagnostics } from '../diagnostics.js';
import type { DelegateMcp, PermissionMode, SettingSource } from '../kinds.js';
import type { RouteConfig, RouteStats } from '../shim/route.js';
import type { ActiveJob } from './active-job.js';
import {
  computeBackendFigures,
  describeFigures,
  fetchMetrics,
  hasMetrics,
  type MetricsSnapshot,
} from './backend-figures.js';
import { watchCancelRequest } from './cancel-request.js';
import type { JobError, JobRecord, Verification } from './job.js';
import {
  configuredMcpServers,
  delegateMcpPolicy,
  ownPackageRoots,
  type DelegateMcpPolicy,
} from './delegate-mcp.js';
import { routeConfigFor, type ReadyEndpoint } from './ready-endpoint.js';
import { claimWithoutTrace, decideOutcome, finishedFields, isPossibleNoOp } from './outcome.js';
import { isProcessAlive, runShellCommand, terminateProcess } from './process.js';
import { watchBackend, type BackendFailure, type BackendWatch } from './backend-watch.js';
import { buildSessionEnv } from './session-env.js';
import { JOB_FILES, type Appender, type JobStore } from './store.js';
import { createTranscript, formatDoneLine, formatStartLine, formatStderr } from './transcript.js';
import { fingerprintTree } from './tree-fingerprint.js';
import { finishWorktree } from './worktree.js';

/** The part of the shim a job needs (src/shim/server.ts). */
export interface JobShim {
  addRoute(config: RouteConfig): {
    baseUrl: string;
    stats(): RouteStats;
    inflight(): number;
    close(): Promise<void> | void;
  };
}

/** What one job is run with, settled before the session starts (runner.ts). */
export interface JobSettings {
  prompt: string;
  permissionMode: PermissionMode;
  allowedTools: string[];
  disallowedTools: string[];
  settingSources: SettingSource[];
  maxTurns: number;
  timeoutS: number;
  systemPromptAppend: string;
  resumeSessionId?: string | undefined;
  dumpRequests: boolean;
  keepaliveS: number;
  /** The user's MCP servers in the delegate: all but localagents itself, or none. */
  delegateMcp: DelegateMcp;
  /** Variables that hold backend credentials: never in the delegate's environment. */
  secretVariables: string[];
  /** defaults.backend_grace_s: how long a gone or loading backend may take to answer again. */
  backendGraceS: number;
  /** The delegate's whole tool set (an agent's), agent-spawning tools removed; undefined: the default set. */
  tools?: string[] | undefined;
  /** Run after the session; a failure gives the session `retries` more rounds, then fails the job. */
  verify?: { command: string; retries: number; timeoutS: number } | undefined;
}

/** What executeJob needs of the process around it. */
export interface ExecuteDeps {
  store: JobStore;
  shim: () => Promise<JobShim>;
  baseEnv: Record<string, string | undefined>;
  diagnostics: Diagnostics;
  claudePath?: string | undefined;
  /** The streamable-HTTP URLs this process serves MCP on, so delegates never connect back to it. */
  mcpUrls?: () => readonly string[];
}

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

/** One job while executeJob runs it: its files, its transcript, and what start() set up for finish(). */
interface JobRun {
  deps: ExecuteDeps;
  job: ActiveJob;
  ready: ReadyEndpoint;
  settings: JobSettings;
  transcript: ReturnType<typeof createTranscript>;
  transcriptFile: Appender;
  eventsFile: Appender;
  startedAt: Date;
  route: ReturnType<JobShim['addRoute']> | undefined;
  metricsBefore: Promise<MetricsSnapshot | undefined>;
  /** Taken while claude starts; compared at the end so edits made through Bash count as edits too. */
  treeBefore: Promise<string | undefined>;
  /** Once our child has exited and been reaped its pid can belong to another process: never signal it then. */
  claudeExited: boolean;
  /** What ended the session, if it did not end by itself. */
  thrown: unknown;
  /** The first write of job.json that failed: the job stops, and its answer says so. */
  writeFailure: unknown;
  /** Whether the last record written is the final one (else the runner keeps it and writes it later). */
  saved: boolean;
  /** Why the backend watch ended the job early, if it did. */
  backendFailure: BackendFailure | undefined;
  backendWatch: BackendWatch | undefined;
  /** The delegate's environment, built once: a verify round resumes the session with the same. */
  env: Record<string, string>;
  /** Never rejects: a record that cannot be written stops the job (writeFailure, termination). */
  update(patch: Partial<JobRecord>, persist: 'now' | 'soon'): Promise<void>;
  /** Drops a progress save still waiting: the final record supersedes it (and nothing writes after it). */
  cancelPendingSave(): void;
  writeLines(lines: string[]): void;
}

/**
 * Runs one job to its end. Never throws: whatever happens ends up in the record, and teardown always runs.
 * Resolves with whether the final record reached the disk.
 */
export async function executeJob(
  deps: ExecuteDeps,
  job: ActiveJob,
  ready: ReadyEndpoint,
  settings: JobSettings,
): Promise<boolean> {
  const run = openRun(deps, job, ready, settings);
  const id = job.record.id;
  const timeout = setTimeout(() => {
    job.termination ??= 'timeout';
    job.controller.abort();
  }, settings.timeoutS * 1000);
  const cancelRequest = watchCancelRequest(deps.store.jobDir(id), () => {
    job.termination ??= 'cancelled';
    job.controller.abort();
  });
  try {
    await pump(run, await start(run));
    await verifyRounds(run);
  } catch (error) {
    run.thrown = error;
  } finally {
    clearTimeout(timeout);
    cancelRequest.close();
  }
  await finish(run);
  return run.saved;
}

function openRun(
  deps: ExecuteDeps,
  job: ActiveJob,
  ready: ReadyEndpoint,
  settings: JobSettings,
): JobRun {
  const { store } = deps;
  const id = job.record.id;
  const transcriptFile = store.open(id, JOB_FILES.transcript);
  let saveTimer: NodeJS.Timeout | undefined;
  const run: JobRun = {
    deps,
    job,
    ready,
    settings,
    transcript: createTranscript(job.record.run_cwd),
    transcriptFile,
    eventsFile: store.open(id, JOB_FILES.events),
    startedAt: new Date(),
    route: undefined,
    metricsBefore: Promise.resolve(undefined),
    treeBefore:
      job.record.isolation === 'none'
        ? fingerprintTree(job.record.run_cwd).catch(() => undefined)
        : Promise.resolve(undefined),
    claudeExited: false,
    thrown: undefined,
    writeFailure: undefined,
    saved: false,
    backendFailure: undefined,
    backendWatch: undefined,
    env: {},
    update(patch, persist) {
      job.record = { ...job.record, ...patch };
      for (const listener of job.listeners) listener(job.record);
      // A record that cannot be written stops the job: running on would report work nobody can find.
      const failed = (error: unknown): void => {
        deps.diagnostics.warn(`job ${id}: ${describeError(error)}`);
        if (run.writeFailure !== undefined) return;
        run.writeFailure = error;
        job.termination ??= 'record_write_failed';
        job.controller.abort();
      };
      if (persist === 'soon') {
        saveTimer ??= setTimeout(() => {
          saveTimer = undefined;
          store.save(job.record).catch(failed);
        }, SAVE_DELAY_MS);
        return Promise.resolve();
      }
      clearTimeout(saveTimer);
      saveTimer = undefined;
      return store.save(job.record).catch(failed);
    },
    writeLines(lines) {
      for (const line of lines) transcriptFile.write(`${line}\n`);
    },
    cancelPendingSave() {
      clearTimeout(saveTimer);
      saveTimer = undefined;
    },
  };
  return run;
}

/** The shim route, the first /metrics, the running status, and the session itself. */
async function start(run: JobRun): Promise<AsyncGenerator<unknown, void, undefined>> {
  const { deps, job, ready, settings } = run;
  const id = job.record.id;
  const shim = await deps.shim();
  run.backendWatch = watchBackend({
    endpoint: `endpoint ${ready.endpoint.name}`,
    graceMs: settings.backendGraceS * 1000,
    onFailure: (failure) => {
      run.backendFailure = failure;
      run.writeLines([`! ${failure.kind}: ${failure.message}`]);
      job.termination ??= 'backend_failed';
      job.controller.abort();
    },
  });
  const route = shim.addRoute(
    routeConfigFor(ready, {
      logDir: deps.store.jobDir(id),
      dumpFullRequests: settings.dumpRequests,
      keepaliveMs: settings.keepaliveS * 1000,
      watch: run.backendWatch.watch,
    }),
  );
  run.route = route;
  job.inflight = () => route.inflight();
  // Taken while claude starts (≥ 0.5 s before its first request), so it costs the job no time. Ollama and LM
  // Studio have no /metrics (docs/backends.md): not asked.
  run.metricsBefore = hasMetrics(ready.endpoint.backend)
    ? fetchMetrics(ready.endpoint.base_url, ready.apiKey)
    : Promise.resolve(undefined);
  // Not awaited: saves keep their order, and claude's start (≥ 0.5 s) need not wait for the disk.
  // update() never rejects: a failed write stops the job itself (writeFailure).
  void run.update({ status: 'running', started_at: run.startedAt.toISOString() }, 'now');
  run.writeLines([
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
  run.env = buildSessionEnv({
    baseEnv: deps.baseEnv,
    servedId: ready.servedId,
    baseUrl: route.baseUrl,
    contextTokens: ready.contextTokens,
    timeoutS: settings.timeoutS,
    endpointEnv: ready.endpoint.env,
    modelEnv: ready.modelSettings?.env,
    secretVariables: settings.secretVariables,
  });
  return openSession(run, settings.prompt, settings.resumeSessionId);
}

/** A claude session on the job's route: the first, or a later round resuming it (verify_retries). */
async function openSession(
  run: JobRun,
  prompt: string,
  resume: string | undefined,
): Promise<AsyncGenerator<unknown, void, undefined>> {
  const { deps, job, ready, settings } = run;
  // Loaded on the first job, not at start: the Agent SDK is a tenth of a second `serve` must not spend
  // before it answers the MCP handshake.
  const { runSession } = await import('./session.js');
  const mcp = await delegateMcpFor(deps, job.record, settings);
  run.claudeExited = false;
  return runSession({
    prompt,
    cwd: job.record.run_cwd,
    env: run.env,
    model: ready.servedId,
    systemPromptAppend: settings.systemPromptAppend,
    permissionMode: settings.permissionMode,
    allowedTools: settings.allowedTools,
    disallowedTools: settings.disallowedTools,
    tools: settings.tools,
    settingSources: settings.settingSources,
    mcp,
    maxTurns: settings.maxTurns,
    resume,
    claudePath: deps.claudePath,
    signal: job.controller.signal,
    onSpawn: (pid) => void run.update({ claude_pid: pid }, 'now'),
    onExit: () => (run.claudeExited = true),
    onStderr: (text) => run.writeLines(formatStderr(text)),
  });
}

const VERIFY_OUTPUT_BYTES = 4096;

/**
 * The job's verify command, after a session that ended well: in the job's directory, with the server's
 * environment minus the backend keys. A failure with rounds left resumes the session with the command and its
 * output as the next message; each round is in the transcript, the last in the record.
 */
async function verifyRounds(run: JobRun): Promise<void> {
  const { job, settings } = run;
  const verify = settings.verify;
  if (!verify) return;
  const env = { ...run.deps.baseEnv };
  for (const name of settings.secretVariables) delete env[name];
  for (let round = 1; ; round++) {
    const ended = decideOutcome(job.termination, run.transcript.stats().result, run.thrown);
    if (job.controller.signal.aborted || ended.status !== 'succeeded') return;
    run.writeLines([`=== verify, round ${round}: ${verify.command}`]);
    const outcome = await runShellCommand({
      command: verify.command,
      cwd: job.record.run_cwd,
      env,
      timeoutMs: verify.timeoutS * 1000,
      signal: job.controller.signal,
      keepBytes: VERIFY_OUTPUT_BYTES,
    });
    const verification: Verification = {
      command: verify.command,
      exit_code: outcome.exitCode,
      passed: outcome.exitCode === 0,
      duration_s: Math.round(outcome.durationMs / 100) / 10,
      output_tail: outcome.output,
      rounds: round,
    };
    run.writeLines([
      ...outcome.output
        .trimEnd()
        .split('\n')
        .map((line) => `  | ${line}`),
      `=== verify, round ${round}: ${verification.passed ? 'passed' : outcome.timedOut ? `timed out after ${verify.timeoutS} s` : `failed (exit ${outcome.exitCode ?? 'none'})`} in ${verification.duration_s} s`,
    ]);
    await run.update({ verification }, 'now');
    if (verification.passed || round > verify.retries || job.record.session_id === null) return;
    await pump(run, await openSession(run, retryBrief(verification), job.record.session_id));
  }
}

/** The next message of a session whose work failed its verification. */
function retryBrief(verification: Verification): string {
  return `The verification command \`${verification.command}\` failed (exit ${verification.exit_code ?? 'none'}). Its output ends with:\n\n${verification.output_tail.trimEnd()}\n\nFix the cause, then say what you changed.`;
}

/** Every SDK message: to events.jsonl, to the transcript, and what changed to the record. */
async function pump(run: JobRun, session: AsyncGenerator<unknown, void, undefined>): Promise<void> {
  const { job, transcript } = run;
  for await (const message of session) {
    run.eventsFile.write(
      `${JSON.stringify({ ts: new Date().toISOString(), kind: kindOf(message), message })}\n`,
    );
    const lines = transcript.add(message);
    run.writeLines(lines);
    const stats = transcript.stats();
    if (lines.length === 0 && stats.sessionId === job.record.session_id) continue;
    await run.update(
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
}

/**
 * The teardown, in order. Each step is guarded: one that fails adds a warning to the record and the rest
 * still run, so the record is always written and nothing is left running.
 */
const TEARDOWN: readonly { what: string; step: (run: JobRun) => Promise<void> | void }[] = [
  { what: 'checking for a cancel from another process', step: noticeCancelMarker },
  { what: 'stopping claude', step: stopClaude },
  {
    what: 'closing the shim route',
    step: async (run) => {
      run.backendWatch?.close();
      await run.route?.close();
    },
  },
  { what: 'recording the outcome', step: recordOutcome },
  { what: 'computing backend figures', step: recordBackendFigures },
  { what: 'finishing the worktree', step: recordWorktree },
  { what: 'checking the tree for changes', step: recordTreeChange },
  { what: 'flagging a possible no-op', step: flagNoOp },
  { what: 'writing the done line', step: writeDoneLine },
  { what: 'closing the job logs', step: closeLogs },
  { what: 'writing job.json', step: saveFinalRecord },
];

/** The transcript and events files: closed, and any that could not be written said in the record. */
async function closeLogs(run: JobRun): Promise<void> {
  const { job } = run;
  await Promise.all([run.transcriptFile.close(), run.eventsFile.close()]);
  const lost = [
    [JOB_FILES.transcript, run.transcriptFile.failure()],
    [JOB_FILES.events, run.eventsFile.failure()],
  ] as const;
  for (const [file, failure] of lost) {
    if (failure === undefined) continue;
    const code = (failure as NodeJS.ErrnoException).code ?? describeError(failure);
    job.record = {
      ...job.record,
      warnings: [
        ...job.record.warnings,
        `${file} could not be written (${code}): it is incomplete`,
      ],
    };
  }
}

/**
 * The final record. When it cannot be written, what the caller is told must not claim more than the disk
 * holds: the job is answered failed with record_write_failed (the path and errno), and the runner keeps the
 * record to write it once it can (run.saved stays false).
 */
async function saveFinalRecord(run: JobRun): Promise<void> {
  const { job, deps } = run;
  run.cancelPendingSave();
  try {
    await deps.store.save(job.record);
    run.saved = true;
  } catch (error) {
    run.writeFailure ??= error;
    job.record = {
      ...job.record,
      status: 'failed',
      error: writeFailedError(error),
    };
  }
  for (const listener of job.listeners) listener(job.record);
}

function writeFailedError(error: unknown): JobError {
  return { kind: 'record_write_failed', message: describeError(error) };
}

async function finish(run: JobRun): Promise<void> {
  const { job } = run;
  for (const { what, step } of TEARDOWN) {
    try {
      await step(run);
    } catch (error) {
      run.deps.diagnostics.warn(`job ${job.record.id}: ${what} failed: ${describeError(error)}`);
      job.record = {
        ...job.record,
        warnings: [...job.record.warnings, `${what} failed: ${describeError(error)}`],
      };
    }
  }
}

/**
 * `localagents cancel` from another process leaves a marker and stops claude: a cancel, not a failure. The
 * watch normally sees it first; this covers a claude stopped before its event arrived. A session that
 * reached its result finished on its own and keeps its outcome.
 */
async function noticeCancelMarker(run: JobRun): Promise<void> {
  const { job } = run;
  if (job.termination || run.transcript.stats().result) return;
  const marker = join(run.deps.store.jobDir(job.record.id), JOB_FILES.cancelRequest);
  if (
    await access(marker).then(
      () => true,
      () => false,
    )
  )
    job.termination = 'cancelled';
}

async function stopClaude(run: JobRun): Promise<void> {
  const pid = run.job.record.claude_pid;
  if (pid !== null && !run.claudeExited && isProcessAlive(pid)) await terminateProcess(pid, 3000);
}

function recordOutcome(run: JobRun): void {
  const { job, transcript, thrown } = run;
  const stats = transcript.stats();
  const decided = decideOutcome(job.termination, stats.result, thrown);
  const outcome =
    job.termination === 'record_write_failed' && run.writeFailure !== undefined
      ? { ...decided, error: writeFailedError(run.writeFailure) }
      : job.termination === 'backend_failed' && run.backendFailure !== undefined
        ? { ...decided, error: run.backendFailure }
        : decided;
  if (thrown !== undefined && !job.termination && !stats.result)
    run.writeLines([`! ${describeError(thrown)}`]);
  const verification = job.record.verification;
  // A session that ended well has not done its work when the verify command says otherwise.
  const verified =
    outcome.status === 'succeeded' && verification && !verification.passed
      ? {
          status: 'failed_verification' as const,
          error: {
            kind: 'verification_failed' as const,
            message: `\`${verification.command}\` ${verification.exit_code === null ? 'did not finish' : `exited ${verification.exit_code}`} after ${verification.rounds} round(s)`,
          },
        }
      : outcome;
  job.record = {
    ...job.record,
    ...finishedFields(stats, verified, run.startedAt, new Date(), job.record),
  };
}

async function recordBackendFigures(run: JobRun): Promise<void> {
  const { job, ready } = run;
  const route = run.route;
  if (!route) return;
  const before = await run.metricsBefore;
  const after = before ? await fetchMetrics(ready.endpoint.base_url, ready.apiKey) : undefined;
  job.record = {
    ...job.record,
    backend: computeBackendFigures({
      stats: route.stats(),
      before,
      after,
      overlapped: job.overlapped,
    }),
  };
}

async function recordWorktree(run: JobRun): Promise<void> {
  const { job } = run;
  const worktree = job.record.worktree;
  if (!worktree) return;
  job.record = { ...job.record, worktree: await finishWorktree(worktree, job.record.id) };
}

async function recordTreeChange(run: JobRun): Promise<void> {
  const before = await run.treeBefore;
  if (before === undefined) return;
  const after = await fingerprintTree(run.job.record.run_cwd);
  run.job.record = { ...run.job.record, changed_on_disk: after !== before };
}

function flagNoOp(run: JobRun): void {
  const record = run.job.record;
  const claim = claimWithoutTrace(record, run.transcript.stats().commandsRun);
  run.job.record = {
    ...record,
    possible_no_op: isPossibleNoOp(record) || claim !== undefined,
    ...(claim === undefined ? {} : { warnings: [...record.warnings, claim] }),
  };
}

function writeDoneLine(run: JobRun): void {
  const record = run.job.record;
  run.writeLines([
    formatDoneLine({
      status: record.status,
      turns: record.turns,
      toolCalls: record.tool_calls,
      durationMs: record.duration_ms ?? 0,
      metrics: record.backend ? describeFigures(record.backend) : undefined,
    }),
  ]);
  if (record.error) run.writeLines([`error: ${record.error.message}`]);
}

function kindOf(message: unknown): string {
  if (typeof message !== 'object' || message === null || !('type' in message)) return 'unknown';
  const type = typeof message.type === 'string' ? message.type : 'unknown';
  return 'subtype' in message && typeof message.subtype === 'string'
    ? `${type}/${message.subtype}`
    : type;
}
