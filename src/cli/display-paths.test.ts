import { describe, expect, it } from 'vitest';
import { shortenPathsIn, shortPath, textBases } from './display-paths.js';

const view = { cwd: '/home/ann/src/app', home: '/home/ann' };

describe('shortPath', () => {
  it.each([
    ['a file inside the current directory', '/home/ann/src/app/src/a.ts', 'src/a.ts'],
    ['the current directory itself', '/home/ann/src/app', '.'],
    [
      'a path under home',
      '/home/ann/.local/state/localagents/worktrees/app/j1',
      '~/.local/state/localagents/worktrees/app/j1',
    ],
    ['home itself', '/home/ann', '~'],
    ['a sibling that only shares a prefix', '/home/ann/src/app2/x', '~/src/app2/x'],
    ['a path elsewhere', '/tmp/x', '/tmp/x'],
    ['a relative path', 'src/a.ts', 'src/a.ts'],
  ])('shows %s', (_name, path, shown) => {
    expect(shortPath(path, view)).toBe(shown);
  });

  it('leaves paths whole without a home', () => {
    expect(shortPath('/home/ann/x', { cwd: '/srv' })).toBe('/home/ann/x');
  });
});

describe('shortenPathsIn', () => {
  const job = '/home/ann/.local/state/localagents/worktrees/app/20261201-101010-abcd';

  it('leaves the job directory out of a tool call, so the worktree is named once', () => {
    expect(shortenPathsIn(`tool Write(${job}/src/hello.txt)`, textBases(view, job))).toBe(
      'tool Write(src/hello.txt)',
    );
  });

  it('shortens paths under cwd and home in a command', () => {
    expect(
      shortenPathsIn(
        'tool Bash(cat /home/ann/src/app/a.txt /home/ann/notes.md /etc/hosts)',
        textBases(view),
      ),
    ).toBe('tool Bash(cat a.txt ~/notes.md /etc/hosts)');
  });

  it('names a base on its own as . or ~', () => {
    expect(shortenPathsIn('tool Glob(*.ts in /home/ann/src/app)', textBases(view))).toBe(
      'tool Glob(*.ts in .)',
    );
    expect(shortenPathsIn('cd /home/ann', textBases(view))).toBe('cd ~');
  });

  it('does not touch a longer path that merely contains a base', () => {
    expect(shortenPathsIn('ls /x/home/ann/y /home/annex', textBases(view))).toBe(
      'ls /x/home/ann/y /home/annex',
    );
  });
});
