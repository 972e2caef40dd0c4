import { describe, expect, it } from 'vitest';
import { moveRepoPaths, worktreeNotice } from './worktree-brief.js';

const ROOT = '/home/u/src/app';
const TREE = '/home/u/.local/state/localagents/worktrees/app/20261201-0000-abcd';

describe('moveRepoPaths', () => {
  it.each([
    [`Fix ${ROOT}/src/x.ts and run the tests.`, `Fix ${TREE}/src/x.ts and run the tests.`],
    [`Work in ${ROOT}.`, `Work in ${TREE}.`],
    [`cd ${ROOT} && npm test`, `cd ${TREE} && npm test`],
    [`"${ROOT}/a" and '${ROOT}/b'`, `"${TREE}/a" and '${TREE}/b'`],
    [`${ROOT}2/x.ts stays`, `${ROOT}2/x.ts stays`],
    [`${ROOT}.old/x.ts stays`, `${ROOT}.old/x.ts stays`],
    [`${ROOT}-copy stays`, `${ROOT}-copy stays`],
    ['no paths at all', 'no paths at all'],
  ])('moves %j to %j', (text, expected) => {
    expect(moveRepoPaths(text, ROOT, TREE)).toBe(expected);
  });

  it('treats regular-expression characters in the root literally', () => {
    expect(moveRepoPaths('/a+b/(c)/x', '/a+b/(c)', '/w')).toBe('/w/x');
    expect(moveRepoPaths('/aab/(c)/x', '/a+b/(c)', '/w')).toBe('/aab/(c)/x');
  });
});

describe('worktreeNotice', () => {
  it('names both trees and tells the delegate to stay in the worktree', () => {
    const notice = worktreeNotice(ROOT, TREE);
    expect(notice).toContain(`isolated git worktree at ${TREE}`);
    expect(notice).toContain(`never change files under ${ROOT}`);
  });
});
