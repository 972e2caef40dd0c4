import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';

/** A file tree as an object literal: { 'a/b.txt': 'text' }. */
export type FileTree = Record<string, string>;

export async function writeTree(root: string, tree: FileTree): Promise<void> {
  for (const [relative, content] of Object.entries(tree)) {
    const path = join(root, relative);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
}

/** A fresh directory holding `tree`, removed when the current test finishes. */
export async function tempDir(tree: FileTree = {}, prefix = 'localagents-test-'): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  await writeTree(root, tree);
  return root;
}
