import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit } from './git.js';
import { findRepo } from './worktree.js';

/**
 * A read-only fingerprint of a git work tree: HEAD, `git status` (untracked files included) and the
 * mtime and size of every path status lists. Two equal fingerprints mean nothing visible to git changed
 * in between — also edits made through Bash, which no Edit/Write tool call records. Reading only:
 * no temporary index and no objects are written into the user's repository (GIT_OPTIONAL_LOCKS=0 in
 * git.ts keeps status from refreshing the index). Undefined outside a git repository.
 */
export async function fingerprintTree(cwd: string): Promise<string | undefined> {
  const repo = await findRepo(cwd);
  if (!repo) return undefined;
  const top = repo.root;
  const [head, status] = await Promise.all([
    runGit(top, ['rev-parse', '--verify', '--quiet', 'HEAD'], { okCodes: [1, 128] }),
    runGit(top, ['status', '--porcelain=v1', '-z', '--untracked-files=all']),
  ]);
  const hash = createHash('sha256').update(head.stdout).update('\0').update(status.stdout);
  for (const path of statusPaths(status.stdout)) {
    const info = await lstat(join(top, path)).catch(() => undefined);
    hash.update(`\0${path}\0${info ? `${info.mtimeMs}:${info.size}` : 'gone'}`);
  }
  return hash.digest('hex');
}

/** The paths of `git status --porcelain=v1 -z`: `XY path`, with a rename's original after its own NUL. */
export function statusPaths(output: string): string[] {
  const fields = output.split('\0');
  const paths: string[] = [];
  for (let index = 0; index < fields.length; index += 1) {
    const entry = fields[index] ?? '';
    if (entry.length < 4) continue;
    paths.push(entry.slice(3));
    if (entry[0] === 'R' || entry[0] === 'C') index += 1;
  }
  return paths;
}
