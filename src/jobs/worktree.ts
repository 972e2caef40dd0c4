import { mkdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { LocalAgentsError } from '../errors.js';
import { shellQuote } from '../shell-quote.js';
import { gitOutput, isOutputTooLarge, runGit, verifyRef } from './git.js';
import type { Diffstat, WorktreeInfo } from './job.js';
import { snapshotWorkingTree, WORKING_TREE } from './working-tree.js';

export interface RepoLocation {
  root: string;
  /** cwd relative to the root, with a trailing slash, '' at the root (git rev-parse --show-prefix). */
  prefix: string;
}

/** The repository that holds `cwd`, or undefined when it is not inside a git work tree. */
export async function findRepo(cwd: string): Promise<RepoLocation | undefined> {
  try {
    const root = await gitOutput(cwd, ['rev-parse', '--show-toplevel']);
    const prefix = await gitOutput(cwd, ['rev-parse', '--show-prefix']);
    return { root, prefix };
  } catch {
    return undefined;
  }
}

export function branchName(jobId: string): string {
  return `local-agent/${jobId}`;
}

function safeRepoName(root: string): string {
  return basename(root).replace(/[^\w.-]+/g, '_') || 'repo';
}

export interface CreateWorktreeInput {
  stateDir: string;
  cwd: string;
  jobId: string;
  baseRef?: string | undefined;
  /** Reuse this path and branch (resume of a worktree job) instead of deriving them from jobId. */
  reuse?: { path: string; branch: string; baseCommit: string } | undefined;
}

/** `git worktree add -b local-agent/<job> <state>/worktrees/<repo>/<job> <base>` → where the job runs. */
export async function createWorktree(
  input: CreateWorktreeInput,
): Promise<{ info: WorktreeInfo; runCwd: string }> {
  const repo = await findRepo(input.cwd);
  if (!repo) {
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `isolation "worktree" needs a git repository, and ${input.cwd} is not in one`,
      {
        hint: 'run the job in a git repository, or use isolation "none"',
      },
    );
  }
  const baseRef = input.baseRef ?? 'HEAD';
  // working-tree: the user's uncommitted state on top of HEAD, snapshotted once the worktree exists.
  const fromWorkingTree = baseRef === WORKING_TREE;
  const startRef = fromWorkingTree ? 'HEAD' : baseRef;
  const baseCommit =
    input.reuse?.baseCommit ?? (await verifyRef(repo.root, `${startRef}^{commit}`));
  // HEAD that is not a commit: a repository with no commit yet (git init, nothing committed). The caller may not
  // have named a base at all, so the fix is about the repository, not base_ref.
  if (baseCommit === undefined && startRef === 'HEAD')
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `isolation "worktree" starts from a commit, and the repository ${repo.root} has none yet`,
      {
        hint: 'commit once (git add -A && git commit -m "initial"), or run the job without worktree isolation',
      },
    );
  if (baseCommit === undefined)
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `base_ref "${baseRef}" is not a commit in ${repo.root}`,
      {
        hint: 'pass a branch, tag or commit that exists, or leave base_ref out for HEAD',
      },
    );
  const baseBranch = await branchOf(repo.root, startRef);
  const path =
    input.reuse?.path ?? join(input.stateDir, 'worktrees', safeRepoName(repo.root), input.jobId);
  const branch = input.reuse?.branch ?? branchName(input.jobId);
  const branchExists = input.reuse
    ? (await verifyRef(repo.root, `refs/heads/${branch}`)) !== undefined
    : false;
  const args = branchExists
    ? ['worktree', 'add', path, branch]
    : ['worktree', 'add', '-b', branch, path, baseCommit];
  await runGit(repo.root, args);
  const snapshot =
    fromWorkingTree && !input.reuse
      ? await snapshotWorkingTree(repo.root, path, input.jobId)
      : undefined;
  // The job runs in the same directory relative to the repository root as the caller's cwd.
  const runCwd = resolve(path, repo.prefix);
  await mkdir(runCwd, { recursive: true });
  return {
    info: {
      repo_root: repo.root,
      path,
      branch,
      base_ref: baseRef,
      base_commit: snapshot ?? baseCommit,
      ...(baseBranch === undefined ? {} : { base_branch: baseBranch }),
      state: 'active',
    },
    runCwd,
  };
}

/** The branch a job starting from `baseRef` started from: HEAD's branch, or baseRef when it names one. */
async function branchOf(root: string, baseRef: string): Promise<string | undefined> {
  if (baseRef === 'HEAD') {
    const head = await runGit(root, ['symbolic-ref', '--short', '-q', 'HEAD'], { okCodes: [1] });
    return head.code === 0 ? head.stdout.trim() : undefined;
  }
  return (await verifyRef(root, `refs/heads/${baseRef}`)) === undefined ? undefined : baseRef;
}

async function untrackedFiles(path: string): Promise<string[]> {
  const out = await gitOutput(path, ['ls-files', '--others', '--exclude-standard', '-z']);
  return out.split('\0').filter((name) => name.length > 0);
}

function parseNumstat(text: string, untracked: boolean): Diffstat['files'] {
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [added = '-', removed = '-', ...rest] = line.split('\t');
      const path = rest.join('\t').replace(/^\/dev\/null => /, '');
      return {
        path,
        insertions: added === '-' ? null : Number(added),
        deletions: removed === '-' ? null : Number(removed),
        untracked,
      };
    });
}

/** Working tree (committed, staged, unstaged and untracked) against the base commit, without touching the index. */
export async function computeDiffstat(path: string, baseCommit: string): Promise<Diffstat> {
  const tracked = parseNumstat(await gitOutput(path, ['diff', '--numstat', baseCommit]), false);
  const extra: Diffstat['files'] = [];
  for (const file of await untrackedFiles(path)) {
    const { stdout } = await runGit(path, ['diff', '--no-index', '--numstat', '/dev/null', file], {
      okCodes: [1],
    });
    extra.push(...parseNumstat(stdout, true).map((entry) => ({ ...entry, path: file })));
  }
  const files = [...tracked, ...extra];
  return {
    files_changed: files.length,
    insertions: files.reduce((sum, file) => sum + (file.insertions ?? 0), 0),
    deletions: files.reduce((sum, file) => sum + (file.deletions ?? 0), 0),
    files,
  };
}

const MAX_DIFF_BYTES = 16 * 1024 * 1024;

/** Stands in for a file whose diff is too big to hold (a generated file, a dump): how to see it instead. */
function tooLargeNote(path: string, baseCommit: string, file: string, maxBytes: number): string {
  const size =
    maxBytes >= 1024 * 1024
      ? `${Math.round((maxBytes / (1024 * 1024)) * 10) / 10} MB`
      : `${Math.round(maxBytes / 1024)} KB`;
  return `diff --git a/${file} b/${file}\n# the diff of ${file} is over ${size} and is not shown; see it with: git -C ${shellQuote(path)} diff ${baseCommit} -- ${shellQuote(file)}\n`;
}

/** One git diff call; a diff over maxBytes becomes the note instead of failing the whole diff. */
async function boundedDiff(
  path: string,
  args: string[],
  note: () => string,
  maxBytes: number,
): Promise<string> {
  try {
    return (await runGit(path, args, { okCodes: [1], maxOutputBytes: maxBytes })).stdout;
  } catch (error) {
    if (isOutputTooLarge(error)) return note();
    throw error;
  }
}

/**
 * The diff of the worktree against its base, untracked files included as additions. Bounded: one file's
 * diff over `maxBytes` is replaced by a note saying how to see it, so a huge generated file cannot make
 * the whole diff fail (job_diff pages what is left).
 */
export async function computeDiff(
  path: string,
  baseCommit: string,
  maxBytes = MAX_DIFF_BYTES,
): Promise<string> {
  const parts: string[] = [];
  try {
    parts.push((await runGit(path, ['diff', baseCommit], { maxOutputBytes: maxBytes })).stdout);
  } catch (error) {
    if (!isOutputTooLarge(error)) throw error;
    // Too big together: file by file, so only the files that are too big on their own are left out.
    const names = (await gitOutput(path, ['diff', '--name-only', '-z', baseCommit]))
      .split('\0')
      .filter((name) => name.length > 0);
    for (const file of names) {
      parts.push(
        await boundedDiff(
          path,
          ['diff', baseCommit, '--', file],
          () => tooLargeNote(path, baseCommit, file, maxBytes),
          maxBytes,
        ),
      );
    }
  }
  for (const file of await untrackedFiles(path)) {
    parts.push(
      await boundedDiff(
        path,
        ['diff', '--no-index', '/dev/null', file],
        () => tooLargeNote(path, baseCommit, file, maxBytes),
        maxBytes,
      ),
    );
  }
  return parts.join('');
}

/** What to call to look at, take or throw away a kept worktree's work (MCP tools; the CLI has the same). */
export function reviewCommands(
  info: WorktreeInfo,
  jobId: string,
): NonNullable<WorktreeInfo['review']> {
  const into = info.base_branch ?? 'the branch it started from';
  return {
    diff: `job_diff(job_id: "${jobId}")`,
    merge: `merge_job(job_id: "${jobId}", strategy: "merge" | "squash" | "cherry-pick"): into ${into}`,
    drop: `discard_job(job_id: "${jobId}")`,
  };
}

/** No change (clean status, same HEAD) → worktree and branch removed; otherwise kept with diffstat and commands. */
export async function finishWorktree(info: WorktreeInfo, jobId: string): Promise<WorktreeInfo> {
  const status = await gitOutput(info.path, ['status', '--porcelain', '--untracked-files=all']);
  const head = await gitOutput(info.path, ['rev-parse', 'HEAD']);
  if (status.length === 0 && head === info.base_commit) {
    await removeWorktree(info);
    return { ...info, state: 'removed', head_commit: head };
  }
  const diffstat = await computeDiffstat(info.path, info.base_commit);
  const kept: WorktreeInfo = { ...info, state: 'kept', head_commit: head, diffstat };
  return { ...kept, review: reviewCommands(kept, jobId) };
}

export async function removeWorktree(
  info: Pick<WorktreeInfo, 'repo_root' | 'path' | 'branch'>,
): Promise<void> {
  await runGit(info.repo_root, ['worktree', 'remove', '--force', info.path]);
  await runGit(info.repo_root, ['branch', '-D', info.branch]);
}
