import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tempDir, writeTree, type FileTree } from './temp-dir.js';

const run = promisify(execFile);

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
};

export async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: { ...process.env, ...GIT_ENV } });
  return stdout;
}

/** A real git repository with `tree` committed on `main`, background maintenance off; removed after the test. */
export async function gitRepo(tree: FileTree = { 'README.md': '# test repo\n' }): Promise<string> {
  const root = await tempDir({}, 'localagents-repo-');
  await git(root, 'init', '-q', '-b', 'main');
  await git(root, 'config', 'gc.auto', '0');
  await git(root, 'config', 'maintenance.auto', 'false');
  await git(root, 'config', 'user.name', 'Test');
  await git(root, 'config', 'user.email', 'test@example.invalid');
  await writeTree(root, tree);
  await git(root, 'add', '-A');
  await git(root, 'commit', '-q', '-m', 'initial');
  return root;
}
