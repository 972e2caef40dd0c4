import { LocalAgentsError } from '../errors.js';
import { runGit } from './git.js';
import { isTerminalStatus, type JobRecord, type WorktreeInfo } from './job.js';
import { applyPatch, WORKING_TREE } from './working-tree.js';
import { removeWorktree } from './worktree.js';

/**
 * Taking a worktree job's work, or throwing it away, in one call (merge_job, discard_job, `localagents merge`).
 * A merge commits what the job left uncommitted on its branch (the user's git identity, trailers naming the job
 * and the model), brings it into the branch the job started from, then removes the worktree and the branch.
 * Everything that could refuse is checked before anything changes (git merge-tree for conflicts, the user's
 * uncommitted files against the files the job changed), and a git step that still fails is undone: the user's
 * tree and branch are exactly as before a refused call.
 */
export const MERGE_STRATEGIES = ['merge', 'squash', 'cherry-pick'] as const;
export type MergeStrategy = (typeof MERGE_STRATEGIES)[number];

function refuse(message: string, hint: string): never {
  throw new LocalAgentsError('JOB_STATE', message, { hint });
}

/** The kept worktree of a finished job, or a refusal saying why there is nothing to take. */
function keptWorktree(record: JobRecord): WorktreeInfo {
  if (!isTerminalStatus(record.status))
    refuse(`job ${record.id} is ${record.status}`, 'wait for it to end (wait_job), or cancel it');
  const worktree = record.worktree;
  if (!worktree)
    refuse(
      `job ${record.id} ran without isolation: its edits are already in ${record.cwd}`,
      'review them there with git diff; merge and discard apply to isolation "worktree" jobs',
    );
  if (worktree.state !== 'kept')
    refuse(
      `job ${record.id}'s worktree is ${worktree.state}: there is nothing left to ${worktree.state === 'merged' ? 'merge' : 'take'}`,
      'start a new job for more work',
    );
  return worktree;
}

const git = async (cwd: string, ...args: string[]): Promise<string> =>
  (await runGit(cwd, args)).stdout.trim();

/** The job's uncommitted work as a commit on its branch; its head either way. */
async function commitWork(
  worktree: WorktreeInfo,
  message: string,
  trailers: string,
): Promise<string> {
  await git(worktree.path, 'add', '-A');
  const staged = await runGit(worktree.path, ['diff', '--cached', '--quiet'], { okCodes: [1] });
  if (staged.code === 1) await git(worktree.path, 'commit', '-q', '-m', message, '-m', trailers);
  return git(worktree.path, 'rev-parse', 'HEAD');
}

/** The trailer lines every commit merge_job makes carries: which job, which model. */
function trailersOf(record: JobRecord): string {
  const trailers = [`Local-Agent-Job: ${record.id}`];
  if (record.served_model) trailers.push(`Local-Agent-Model: ${record.served_model}`);
  return trailers.join('\n');
}

/** Files the user has changed and not committed (staged, unstaged, untracked), in the repository root. */
async function uncommittedFiles(root: string): Promise<Set<string>> {
  const status = await git(root, 'status', '--porcelain', '-z', '--untracked-files=all');
  const files = new Set<string>();
  const entries = status.split('\0');
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index] ?? '';
    if (entry.length < 4) continue;
    files.add(entry.slice(3));
    // A rename is followed by its old name.
    if (entry.startsWith('R') || entry.startsWith('C')) files.add(entries[++index] ?? '');
  }
  return files;
}

async function checkMergeable(
  worktree: WorktreeInfo,
  into: string,
  jobHead: string,
): Promise<void> {
  const root = worktree.repo_root;
  const current = await runGit(root, ['symbolic-ref', '--short', '-q', 'HEAD'], { okCodes: [1] });
  if (current.stdout.trim() !== into)
    refuse(
      `${root} has ${current.code === 0 ? current.stdout.trim() : 'a detached HEAD'} checked out, not ${into}, the branch the job started from`,
      `check out ${into} there, then call again (nothing was changed)`,
    );
  const conflicts = await runGit(
    root,
    ['merge-tree', '--write-tree', '--name-only', into, jobHead],
    {
      okCodes: [1],
    },
  );
  if (conflicts.code === 1) {
    const files = conflicts.stdout
      .split('\n')
      .slice(1)
      .filter((line) => line && !line.startsWith('Auto-merging') && !line.startsWith('CONFLICT'));
    refuse(
      `the job's work conflicts with ${into} in ${[...new Set(files)].join(', ') || 'some files'}`,
      'resolve it by hand (job_diff shows the work), or resume the job on the current branch; nothing was changed',
    );
  }
  const changed = new Set(
    (await git(root, 'diff', '--name-only', `${into}...${jobHead}`)).split('\n').filter(Boolean),
  );
  const overlap = [...(await uncommittedFiles(root))].filter((file) => changed.has(file));
  if (overlap.length > 0)
    refuse(
      `you have uncommitted changes to ${overlap.join(', ')}, which the job changed too`,
      'commit or stash them, then call again; nothing was changed',
    );
}

/** The git steps of one strategy; a failure undoes what it began. */
async function integrate(
  root: string,
  strategy: MergeStrategy,
  worktree: WorktreeInfo,
  jobHead: string,
  message: string,
  trailers: string,
): Promise<void> {
  try {
    if (strategy === 'merge') {
      await git(root, 'merge', '--no-ff', '-q', '-m', message, '-m', trailers, worktree.branch);
    } else if (strategy === 'squash') {
      await git(root, 'merge', '--squash', '-q', worktree.branch);
      await git(root, 'commit', '-q', '-m', message, '-m', trailers);
    } else {
      await git(root, 'cherry-pick', `${worktree.base_commit}..${jobHead}`);
    }
  } catch (error) {
    const abort =
      strategy === 'cherry-pick'
        ? ['cherry-pick', '--abort']
        : strategy === 'squash'
          ? ['reset', '--merge']
          : ['merge', '--abort'];
    await runGit(root, abort, { okCodes: [1, 128] }).catch(() => undefined);
    throw error;
  }
}

/**
 * A job that started from the user's uncommitted work (base_ref "working-tree"): its own changes (snapshot to its
 * head) applied to the user's working tree, uncommitted like the work they continue, when they still apply.
 */
async function applyToWorkingTree(record: JobRecord, worktree: WorktreeInfo): Promise<JobRecord> {
  const jobHead = await commitWork(worktree, `local-agent ${record.id}`, trailersOf(record));
  const patch = (await runGit(worktree.path, ['diff', '--binary', worktree.base_commit, jobHead]))
    .stdout;
  const root = worktree.repo_root;
  if (patch.length > 0) {
    await applyPatch(root, patch, true).catch(() =>
      refuse(
        `the job's changes no longer apply to your working tree in ${root}: the files it changed were changed again since it started`,
        'look at job_diff and take what you need by hand; nothing was changed',
      ),
    );
    await applyPatch(root, patch);
  }
  return merged(record, worktree, jobHead, {
    strategy: 'apply',
    into: worktree.base_branch ?? 'your working tree',
    commit: await git(root, 'rev-parse', 'HEAD'),
  });
}

/** The record once the work is in: worktree and branch removed, where the work went. */
async function merged(
  record: JobRecord,
  worktree: WorktreeInfo,
  jobHead: string,
  outcome: NonNullable<WorktreeInfo['merged']>,
): Promise<JobRecord> {
  await removeWorktree(worktree);
  const { review: _review, ...rest } = worktree;
  return {
    ...record,
    worktree: { ...rest, head_commit: jobHead, state: 'merged', merged: outcome },
  };
}

export async function mergeJob(
  record: JobRecord,
  strategy: MergeStrategy,
  message?: string,
): Promise<JobRecord> {
  const worktree = keptWorktree(record);
  if (worktree.base_ref === WORKING_TREE) return applyToWorkingTree(record, worktree);
  const into = worktree.base_branch;
  if (into === undefined)
    refuse(
      `job ${record.id} started from a commit, not a branch (${worktree.base_ref}): there is no branch to merge into`,
      `merge its branch ${worktree.branch} by hand (job_diff shows the work)`,
    );
  const subject =
    message ?? `local-agent ${record.id}: ${record.task.split('\n')[0]?.slice(0, 60) ?? ''}`;
  const trailers = trailersOf(record);
  const jobHead = await commitWork(worktree, subject, trailers);
  await checkMergeable(worktree, into, jobHead);
  await integrate(worktree.repo_root, strategy, worktree, jobHead, subject, trailers);
  const commit = await git(worktree.repo_root, 'rev-parse', 'HEAD');
  return merged(record, worktree, jobHead, { strategy, into, commit });
}

export async function discardJob(record: JobRecord): Promise<JobRecord> {
  const worktree = keptWorktree(record);
  await removeWorktree(worktree);
  const { review: _review, ...rest } = worktree;
  return { ...record, worktree: { ...rest, state: 'removed' } };
}
