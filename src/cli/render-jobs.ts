import { isAbsolute, relative } from 'node:path';
import type { BackendFigures, JobRecord } from '../jobs/job.js';
import { clipText, filesChanged, summarizeJob } from '../jobs/record.js';
import { fitColumns } from './columns.js';
import { shortenPathsIn, shortPath, textBases } from './display-paths.js';
import { createPaint, type ScreenView } from './terminal.js';
import { clipEnd, displayWidth, elideMiddle } from './text-width.js';

const NO_PAINT = createPaint(false);

function flat(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function elapsedSeconds(record: JobRecord, now: Date): string {
  const summary = summarizeJob(record, now);
  return summary.elapsed_s === undefined ? '-' : `${summary.elapsed_s.toFixed(1)}s`;
}

/** `localagents jobs`: one row per job, newest first. */
export function renderJobTable(
  records: JobRecord[],
  now: Date = new Date(),
  view: ScreenView = {},
): string {
  if (records.length === 0)
    return 'no jobs yet: start one with `localagents run "<task>"` or run_agent';
  // Without a width (a pipe) the task keeps today's 50 columns; with one, the table fits it.
  const task = (text: string): string =>
    view.wide || view.width !== undefined ? flat(text) : clipText(text, 50);
  const rows = records.map((record) => [
    record.id,
    record.status === 'queued' && record.queue ? `queued #${record.queue.position}` : record.status,
    record.served_model ?? record.requested_model ?? '-',
    elapsedSeconds(record, now),
    String(record.files_touched.length),
    task(record.task),
  ]);
  const paint = view.paint ?? NO_PAINT;
  return fitColumns([['ID', 'STATUS', 'MODEL', 'TIME', 'FILES', 'TASK'], ...rows], {
    width: view.wide ? undefined : view.width,
    // The task gives way first, to a readable start; then the model name (both ends kept); then the
    // task again, to its first words.
    shrink: [
      { column: 5, min: 24 },
      { column: 2, min: 12, cut: 'middle' },
      { column: 5, min: 10 },
    ],
    paint: (cell, row, column) =>
      row > 0 && column === 1 ? paint.status(records[row - 1]?.status ?? '', cell) : cell,
  }).join('\n');
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

/** Parts of renderJob a caller can leave out or point at: the demo prints some on its own, `run` names the worktree first. */
export interface RenderJobParts {
  diffstat?: boolean;
  backend?: boolean;
  /**
   * The worktree's path is already on this screen (`run`'s started line, when stdout and stderr are one
   * terminal): the record points at it instead of naming it again.
   */
  worktreeNamedAbove?: boolean;
}

/** The cwd line: for a worktree job, where it ran is the worktree, named once on its own line below. */
function cwdLine(
  record: JobRecord,
  path: (value: string) => string,
  worktreeAt: 'above' | 'below',
): string {
  const worktree = record.worktree;
  if (worktree && worktree.state !== 'removed') {
    const inWorktree = relative(worktree.path, record.run_cwd);
    if (!inWorktree.startsWith('..') && !isAbsolute(inWorktree))
      return `cwd: ${path(record.cwd)} (ran in the worktree ${worktreeAt}${inWorktree ? `, at ${inWorktree}` : ''})`;
  }
  return `cwd: ${path(record.run_cwd)}${record.run_cwd === record.cwd ? '' : ` (for ${path(record.cwd)})`}`;
}

/** `localagents show` and the end of `localagents run`: the record for people. */
export function renderJob(
  record: JobRecord,
  now: Date = new Date(),
  parts: RenderJobParts = {},
  view: ScreenView = {},
): string {
  const paint = view.paint ?? NO_PAINT;
  const paths = view.paths;
  const path = (value: string): string => (paths ? shortPath(value, paths) : value);
  const text = (value: string): string =>
    paths ? shortenPathsIn(value, textBases(paths, record.run_cwd)) : value;
  const lines = [
    `job ${record.id}: ${paint.status(record.status)}${record.possible_no_op ? ' (possible no-op: no edits and no real report)' : ''}`,
    `task: ${clipText(record.task, 200)}`,
    `model: ${record.served_model ?? record.requested_model ?? '-'} on ${record.endpoint ?? '-'} (window ${record.context_tokens ?? '?'} tokens, ${record.context_source ?? '?'})`,
    cwdLine(record, path, parts.worktreeNamedAbove ? 'above' : 'below'),
    `time: ${elapsedSeconds(record, now)}, ${record.turns} turns, ${record.tool_calls} tool calls`,
    `files touched: ${record.files_touched.join(', ') || 'none'}`,
  ];
  if (record.resumed_from) lines.push(`resumed from: ${record.resumed_from}`);
  if (record.status === 'queued' && record.queue)
    lines.push(
      `queue: #${record.queue.position} since ${record.queue.since}: ${record.queue.reason}`,
    );
  if (record.last_activity && !record.finished_at)
    lines.push(`last activity: ${text(record.last_activity.text)}`);
  if (record.result_text)
    lines.push(
      'result:',
      ...record.result_text
        .trim()
        .split('\n')
        .map((line) => `  ${line}`),
    );
  if (record.error)
    lines.push(`${paint.error('error')} (${record.error.kind}): ${record.error.message}`);
  const worktree = record.worktree;
  if (worktree) {
    lines.push(
      `worktree: ${worktree.state} ${parts.worktreeNamedAbove ? '(the one above)' : path(worktree.path)} on ${worktree.branch} (base ${worktree.base_commit.slice(0, 12)})`,
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
  for (const warning of record.warnings) lines.push(`${paint.warning('warning:')} ${warning}`);
  return lines.join('\n');
}

/**
 * One progress line: elapsed time, turn, last activity. With a width it fits it: the last tool goes
 * first, then the activity is elided in its middle (a path keeps its file name); the head always stays.
 * With paths, the job's own directory is left out of the paths it names (the worktree is named once).
 */
export function renderProgress(
  record: JobRecord,
  now: Date = new Date(),
  view: ScreenView = {},
): string {
  const paint = view.paint ?? NO_PAINT;
  const text = (value: string): string =>
    view.paths ? shortenPathsIn(value, textBases(view.paths, record.run_cwd)) : value;
  const time = `[${elapsedSeconds(record, now)}]`;
  const [head, activity, tool] =
    record.status === 'queued' && record.queue
      ? [`queued #${record.queue.position}`, clipText(record.queue.reason, 100), '']
      : progressParts(record, text, view.width === undefined);
  // The head starts with the status word ("running · turn 3", "queued #2").
  const paintHead = (plain: string): string =>
    plain.replace(record.status, (word) => paint.status(record.status, word));
  const width = view.width;
  const line = `${time} ${head}${tool} · ${activity}`;
  if (width === undefined || displayWidth(line) <= width)
    return `${time} ${paintHead(head)}${tool} · ${activity}`;
  const fixed = `${time} ${head} · `;
  const room = width - displayWidth(fixed);
  if (room < 8) return clipEnd(`${time} ${head}`, width);
  return `${time} ${paintHead(head)} · ${elideMiddle(activity, room)}`;
}

function progressParts(
  record: JobRecord,
  text: (value: string) => string,
  clip: boolean,
): [string, string, string] {
  const activity =
    record.last_activity?.text ??
    (record.status === 'queued' ? 'starting' : 'waiting for the model');
  // The last tool stays in view while the model thinks or talks between calls.
  const tool =
    record.last_tool !== null && !activity.startsWith('tool ')
      ? ` · last tool ${clipText(text(record.last_tool), 40)}`
      : '';
  const shown = text(activity);
  return [
    `${record.status} · turn ${record.turns}`,
    clip ? clipText(shown, 90) : flat(shown),
    tool,
  ];
}
