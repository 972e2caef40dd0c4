import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { computeDiff } from '../../jobs/worktree.js';
import { answer, jsonResult } from '../results.js';
import type { McpDeps } from '../server.js';
import { jobIdInput } from './job-id.js';

const DEFAULT_PAGE_LINES = 400;
/** A page never exceeds this many characters, whatever its line count: a minified file is one huge line. */
export const MAX_PAGE_CHARS = 60_000;

/** Lines [offset, end) that fit in maxLines and MAX_PAGE_CHARS; a single longer line is cut, marked, and still counts. */
export function diffPage(
  lines: string[],
  offset: number,
  maxLines: number,
): { text: string; end: number } {
  const page: string[] = [];
  let chars = 0;
  let end = offset;
  while (end < lines.length && page.length < maxLines) {
    const line = lines[end] ?? '';
    if (page.length > 0 && chars + line.length + 1 > MAX_PAGE_CHARS) break;
    const fitted =
      line.length > MAX_PAGE_CHARS
        ? `${line.slice(0, MAX_PAGE_CHARS)} … [line cut: ${line.length} characters]`
        : line;
    page.push(fitted);
    chars += fitted.length + 1;
    end += 1;
  }
  return { text: page.join('\n'), end };
}

export function registerJobDiffTool(server: McpServer, deps: McpDeps): RegisteredTool {
  return server.registerTool(
    'job_diff',
    {
      title: 'Worktree diff of a job',
      description: `The diff of a worktree job against its base commit (new files included), a page at a time (at most max_lines lines and ${MAX_PAGE_CHARS} characters): pass next_offset back as offset for the next page. Jobs without a worktree have no diff; look at files_touched instead.`,
      inputSchema: {
        job_id: jobIdInput,
        offset: z.number().int().min(0).optional().describe('First line of the page (default 0)'),
        max_lines: z
          .number()
          .int()
          .min(1)
          .max(5000)
          .optional()
          .describe(`Lines per page (default ${DEFAULT_PAGE_LINES})`),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        const record = await deps.runner.get(args.job_id);
        const worktree = record.worktree;
        if (!worktree || worktree.state === 'removed') {
          return jsonResult({
            id: record.id,
            status: record.status,
            diff: '',
            total_lines: 0,
            offset: 0,
            next_offset: null,
            note: worktree
              ? 'the job changed nothing, so its worktree and branch were removed'
              : `the job ran without a worktree (isolation none); files it edited: ${record.files_touched.join(', ') || 'none'}`,
          });
        }
        const lines = (await computeDiff(worktree.path, worktree.base_commit)).split('\n');
        if (lines.at(-1) === '') lines.pop();
        const offset = args.offset ?? 0;
        const { text, end } = diffPage(lines, offset, args.max_lines ?? DEFAULT_PAGE_LINES);
        return jsonResult({
          id: record.id,
          status: record.status,
          worktree: worktree.path,
          branch: worktree.branch,
          base_commit: worktree.base_commit,
          diffstat: worktree.diffstat ?? null,
          total_lines: lines.length,
          offset,
          next_offset: end < lines.length ? end : null,
          diff: text,
        });
      }),
  );
}
