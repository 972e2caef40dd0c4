import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { PERMISSION_MODES } from '../../kinds.js';
import { isTerminalStatus, type JobRecord } from '../../jobs/job.js';
import { summarizeJob, type JobSummary } from '../../jobs/record.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { notReadyResult } from './not-ready.js';

/** Claude Code gives up on a tool call after 2 minutes: every wait ends before that. */
export const MAX_WAIT_S = 110;

/**
 * A wait the client can afford: longer asks (the Python original took 120, and any larger value) wait
 * MAX_WAIT_S and say so, instead of failing.
 */
export function safeWaitS(asked: number | undefined, fallback: number): number {
  return Math.min(asked ?? fallback, MAX_WAIT_S);
}

/** The summary of a wait, saying how long it waited when the job is still going. */
export function waitedSummary(
  record: JobRecord,
  waitedS: number,
): JobSummary & { waited_s?: number } {
  const summary = summarizeJob(record);
  return isTerminalStatus(record.status) || waitedS === 0
    ? summary
    : { ...summary, waited_s: waitedS };
}

export const runAgentInput = {
  task: z
    .string()
    .trim()
    .min(1, 'task must be a non-empty brief')
    .describe(
      'The brief for the delegate, self-contained: goal, files to look at, constraints, and how to verify (which test or command). The delegate sees nothing of your conversation.',
    ),
  model: z
    .string()
    .optional()
    .describe(
      'Served model id or menu name (from list_models); default: models.yaml defaults.model, else the first live endpoint',
    ),
  endpoint: z.string().optional().describe('Endpoint name, when the same model runs on several'),
  cwd: z
    .string()
    .optional()
    .describe(
      'Absolute path of the project you are working in; the job runs there. Always pass it: without it the job runs wherever the localagents server was started, which is not necessarily your project',
    ),
  isolation: z
    .enum(['none', 'worktree'])
    .optional()
    .describe(
      '"worktree" (recommended in a git repository): the job works on a new branch local-agent/<job> in its own git worktree, kept only if it changed something, so your tree stays untouched. "none" (the default): the job edits cwd directly',
    ),
  base_ref: z
    .string()
    .optional()
    .describe(
      'Where the worktree starts (only with isolation "worktree"): a commit, branch or tag (default HEAD), or "working-tree": your current uncommitted state (staged, unstaged and untracked files), so the job continues work in progress without you committing; merge_job then applies only the job\'s own changes to your working tree',
    ),
  base: z
    .string()
    .optional()
    .describe('Same as base_ref: "head", "working-tree" or a commit, branch or tag'),
  wait_s: z
    .number()
    .min(0)
    .optional()
    .describe(
      `Seconds to wait for the job before answering (default 0: answer at once with the job id; at most ${MAX_WAIT_S} is waited, under Claude Code's 2-minute tool limit)`,
    ),
  permission_mode: z
    .enum(PERMISSION_MODES)
    .optional()
    .describe('Claude Code permission mode for the delegate (default acceptEdits)'),
  max_turns: z
    .number()
    .int()
    .min(1)
    .max(500)
    .optional()
    .describe('Most model turns before the delegate stops (default from models.yaml, 60)'),
  allowed_tools: z
    .array(z.string())
    .optional()
    .describe(
      'Tools the delegate may use without asking (default Read, Edit, Write, Glob, Grep, Bash, WebFetch); agent-spawning tools are always removed',
    ),
  system_prompt_append: z
    .string()
    .optional()
    .describe('Extra instructions appended to the delegate’s system prompt'),
  resume_job: z
    .string()
    .optional()
    .describe(
      'Id of a finished job to continue: same session, model and directory; task is then the follow-up message',
    ),
  timeout_s: z
    .number()
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .describe('Seconds before the job is stopped (default from models.yaml, 1800)'),
  agent: z
    .string()
    .optional()
    .describe(
      "Name of the user's own Claude Code subagent (.claude/agents/<name>.md, in cwd's project or ~/.claude): its prompt is the delegate's instructions and its tools the delegate's tools; a localagents: block in it (or agents: in models.yaml) picks model, verify and isolation. list_models lists them",
    ),
  verify: z
    .string()
    .trim()
    .min(1)
    .optional()
    .describe(
      'Shell command run in the job directory (the worktree when isolated) after the session, e.g. "npm test": a non-zero exit makes the job failed_verification, with the end of its output in the answer (default: models.yaml verify, else none)',
    ),
  verify_retries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .optional()
    .describe(
      'Rounds the delegate gets to fix a failed verification, with the command output as its next message (default 0)',
    ),
};

export function registerRunAgentTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'run_agent',
    {
      title: 'Delegate a task to a local model',
      description:
        'Start a headless Claude Code session driven by a local model to do one routine task (edits, tests, refactors, boilerplate) in cwd. Answers at once with the job id and status (or after wait_s). Then call wait_job until the status is final, and review what it did: local models make mistakes, so treat the result as a draft. If the model is not running, the answer says so and whom to ask; nothing is started.',
      inputSchema: runAgentInput,
    },
    (args) =>
      answer(async () => {
        const outcome = await deps.runner.start({
          task: args.task,
          model: args.model,
          endpoint: args.endpoint,
          cwd: args.cwd ?? deps.cwd,
          isolation: args.isolation,
          baseRef: args.base_ref ?? (args.base?.toLowerCase() === 'head' ? 'HEAD' : args.base),
          permissionMode: args.permission_mode,
          maxTurns: args.max_turns,
          allowedTools: args.allowed_tools,
          systemPromptAppend: args.system_prompt_append,
          resumeJob: args.resume_job,
          timeoutS: args.timeout_s,
          verify: args.verify,
          verifyRetries: args.verify_retries,
          agent: args.agent,
        });
        if (outcome.kind === 'not_ready') return notReadyResult(outcome.resolution);
        const waitS = safeWaitS(args.wait_s, 0);
        const record =
          waitS > 0 ? await deps.runner.wait(outcome.record.id, waitS * 1000) : outcome.record;
        return jsonResult(waitedSummary(record, waitS));
      }),
  );
}
