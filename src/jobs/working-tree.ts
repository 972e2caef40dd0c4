import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runGit } from './git.js';

/**
 * `base_ref: "working-tree"`: a worktree job that continues the user's work in progress without the user
 * committing first. The worktree starts at HEAD and gets the user's uncommitted state (staged and unstaged
 * changes to tracked files, untracked files git does not ignore), committed there as one snapshot commit; that
 * commit is the job's base, so its diff, diffstat and merge carry only the job's own changes.
 */
export const WORKING_TREE = 'working-tree';

const SNAPSHOT_IDENTITY = [
  '-c',
  'user.name=localagents',
  '-c',
  'user.email=localagents@localhost.invalid',
];

/** Copies the user's uncommitted state into a fresh worktree and commits it there; the snapshot's commit. */
export async function snapshotWorkingTree(
  repoRoot: string,
  worktree: string,
  jobId: string,
): Promise<string> {
  const patch = (await runGit(repoRoot, ['diff', 'HEAD', '--binary'])).stdout;
  if (patch.length > 0) await applyPatch(worktree, patch);
  const untracked = (
    await runGit(repoRoot, ['ls-files', '--others', '--exclude-standard', '-z'])
  ).stdout
    .split('\0')
    .filter((name) => name.length > 0);
  for (const file of untracked) {
    await mkdir(dirname(join(worktree, file)), { recursive: true });
    await copyFile(join(repoRoot, file), join(worktree, file));
  }
  await runGit(worktree, ['add', '-A']);
  await runGit(worktree, [
    ...SNAPSHOT_IDENTITY,
    'commit',
    '-q',
    '--allow-empty',
    '-m',
    `localagents: your uncommitted work when job ${jobId} started`,
  ]);
  return (await runGit(worktree, ['rev-parse', 'HEAD'])).stdout.trim();
}

/** `git apply` of a patch given as text, in `cwd`: `check` only says whether it would apply. */
export async function applyPatch(cwd: string, patch: string, check = false): Promise<void> {
  await runGit(cwd, ['apply', '--binary', ...(check ? ['--check'] : []), '-'], { input: patch });
}
