import type { BackendFigures, JobRecord } from '../jobs/job.js';
import { clipText, filesChanged, summarizeJob } from '../jobs/record.js';
import { alignColumns } from './columns.js';

function elapsedSeconds(record: JobRecord, now: Date): string {
  const summary = summarizeJob(record, now);
  return summary.elapsed_s === undefined ? '-' : `${summary.elapsed_s.toFixed(1)}s`;
}

/** `localagents jobs`: one row per job, newest first. */
export function renderJobTable(records: JobRecord[], now: Date = new Date()): string {
  if (records.length === 0)
    return 'no jobs yet: start one with `localagents run "<task>"` or run_agent';
  const rows = records.map((record) => [
    record.id,
    record.status === 'queued' && record.queue ? `queued #${record.queue.position}` : record.status,
    record.served_model ?? record.requested_model ?? '-',
    elapsedSeconds(record, now),
    String(record.files_touched.length),
    clipText(record.task, 50),
  ]);
  return alignColumns([['ID', 'STATUS', 'MODEL', 'TIME', 'FILES', 'TASK'], ...rows]).join('\n');
}

export function describeBackend(figures: BackendFigures): string[] {
  const lines = [
    `requests: ${figures.requests} (${figures.failed_requests} failed)`,
    figures.cache_reported === false
      ? `prompt tokens: ${figures.prompt_tokens}, cache: not reported by the backend`
      : `prompt tokens: ${figures.prompt_tokens}, cached ${figures.cached_tokens}${figures.cache_hit_rate === null ? '' : ` (cache hit rate ${Math.round(figures.cache_hit_rate * 100)}%)`}`,
    `generated tokens: ${figures.generated_tokens}`,
    `prefix: ${figures.prefix_extends} prompts extended the previous one, ${figures.prefix_breaks} changed it`,
    `rewrites: ${
      Object.entries(figures.rewrites)
        .map(([name, count]) => `${name} ×${count}`)
        .join(', ') || 'none'
    }`,
  ];
  const speeds = [
    figures.prompt_tokens_per_s === null ? '' : `prompt ${figures.prompt_tokens_per_s} tok/s`,
    figures.generation_tokens_per_s === null
      ? ''
      : `generation ${figures.generation_tokens_per_s} tok/s`,
  ].filter((text) => text.length > 0);
  if (figures.speed_scope !== 'unavailable' && speeds.length > 0) {
    const scope =
      figures.speed_scope === 'server_wide' ? ' (server-wide: other jobs overlapped)' : '';
    lines.push(`speed: ${speeds.join(', ')}${scope}`);
  }
  return lines;
}

/** Parts of renderJob a caller that prints them on its own (the demo) can leave out. */
export interface RenderJobParts {
  diffstat?: boolean;
  backend?: boolean;
}

/** `localagents show` and the end of `localagents run`: the record for people. */
export function renderJob(
  record: JobRecord,
  now: Date = new Date(),
  parts: RenderJobParts = {},
): string {
  const lines = [
    `job ${record.id}: ${record.status}${record.possible_no_op ? ' (possible no-op: no edits and no real report)' : ''}`,
    `task: ${clipText(record.task, 200)}`,
    `model: ${record.served_model ?? record.requested_model ?? '-'} on ${record.endpoint ?? '-'} (window ${record.context_tokens ?? '?'} tokens, ${record.context_source ?? '?'})`,
    `cwd: ${record.run_cwd}${record.run_cwd === record.cwd ? '' : ` (for ${record.cwd})`}`,
    `time: ${elapsedSeconds(record, now)}, ${record.turns} turns, ${record.tool_calls} tool calls`,
    `files touched: ${record.files_touched.join(', ') || 'none'}`,
  ];
  if (record.resumed_from) lines.push(`resumed from: ${record.resumed_from}`);
  if (record.status === 'queued' && record.queue)
    lines.push(
      `queue: #${record.queue.position} since ${record.queue.since}: ${record.queue.reason}`,
    );
  if (record.last_activity && !record.finished_at)
    lines.push(`last activity: ${record.last_activity.text}`);
  if (record.result_text)
    lines.push(
      'result:',
      ...record.result_text
        .trim()
        .split('\n')
        .map((line) => `  ${line}`),
    );
  if (record.error) lines.push(`error (${record.error.kind}): ${record.error.message}`);
  const worktree = record.worktree;
  if (worktree) {
    lines.push(
      `worktree: ${worktree.state} ${worktree.path} on ${worktree.branch} (base ${worktree.base_commit.slice(0, 12)})`,
    );
    if (worktree.diffstat && parts.diffstat !== false) {
      const stat = worktree.diffstat;
      lines.push(
        `diffstat: ${filesChanged(stat.files_changed)}, +${stat.insertions} -${stat.deletions}`,
      );
      for (const file of stat.files) {
        lines.push(
          `  ${file.path}  +${file.insertions ?? '?'} -${file.deletions ?? '?'}${file.untracked ? ' (new)' : ''}`,
        );
      }
    }
    // The CLI's own commands for what MCP callers get as review calls (job_diff, merge_job, discard_job).
    if (worktree.state === 'kept') {
      lines.push(
        `review: localagents diff ${record.id}`,
        `merge:  localagents merge ${record.id} [--strategy squash|cherry-pick]${worktree.base_branch ? ` (into ${worktree.base_branch})` : ''}`,
        `drop:   localagents discard ${record.id}`,
      );
    }
    if (worktree.merged)
      lines.push(
        `merged: into ${worktree.merged.into} (${worktree.merged.strategy}), now ${worktree.merged.commit.slice(0, 12)}`,
      );
  }
  if (record.backend && parts.backend !== false)
    lines.push('backend:', ...describeBackend(record.backend).map((line) => `  ${line}`));
  for (const warning of record.warnings) lines.push(`warning: ${warning}`);
  return lines.join('\n');
}

/** One progress line: elapsed time, turn, last activity. */
export function renderProgress(record: JobRecord, now: Date = new Date()): string {
  if (record.status === 'queued' && record.queue)
    return `[${elapsedSeconds(record, now)}] queued #${record.queue.position} · ${clipText(record.queue.reason, 100)}`;
  const activity =
    record.last_activity?.text ??
    (record.status === 'queued' ? 'starting' : 'waiting for the model');
  // The last tool stays in view while the model thinks or talks between calls.
  const tool =
    record.last_tool !== null && !activity.startsWith('tool ')
      ? ` · last tool ${clipText(record.last_tool, 40)}`
      : '';
  return `[${elapsedSeconds(record, now)}] ${record.status} · turn ${record.turns}${tool} · ${clipText(activity, 90)}`;
}
