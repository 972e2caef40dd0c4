import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../../test/support/git-repo.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { fingerprintTree, statusPaths } from './tree-fingerprint.js';

describe('statusPaths', () => {
  it('reads plain, untracked and renamed entries', () => {
    expect(statusPaths(' M a.txt\0?? new dir/b.txt\0R  to.txt\0from.txt\0')).toEqual([
      'a.txt',
      'new dir/b.txt',
      'to.txt',
    ]);
    expect(statusPaths('')).toEqual([]);
  });
});

describe('fingerprintTree', () => {
  it('changes with every kind of edit git can see, and not otherwise', async () => {
    const repo = await gitRepo({ 'a.txt': 'a\n' });
    const clean = await fingerprintTree(repo);
    expect(clean).toMatch(/^[0-9a-f]{64}$/);
    expect(await fingerprintTree(join(repo))).toBe(clean);

    await writeFile(join(repo, 'a.txt'), 'changed\n');
    const dirty = await fingerprintTree(repo);
    expect(dirty).not.toBe(clean);
    // A second edit of an already-modified file: status is the same, size is not.
    await writeFile(join(repo, 'a.txt'), 'changed again\n');
    const dirtier = await fingerprintTree(repo);
    expect(dirtier).not.toBe(dirty);

    await writeFile(join(repo, 'new.txt'), 'n\n');
    const untracked = await fingerprintTree(repo);
    expect(untracked).not.toBe(dirtier);

    await git(repo, 'add', '-A');
    await git(repo, 'commit', '-qm', 'c');
    const committed = await fingerprintTree(repo);
    expect(committed).not.toBe(untracked);
    expect(committed).not.toBe(clean);
    expect(await fingerprintTree(repo)).toBe(committed);
  });

  it('is undefined outside a git repository', async () => {
    expect(await fingerprintTree(await tempDir())).toBeUndefined();
  });
});
