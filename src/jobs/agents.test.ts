import { describe, expect, it } from 'vitest';
import { applyAgent, parseAgentFile } from './agents.js';

const FILE = `---
name: tester
description: Writes tests.
tools:
  - Read
  - Write
model: opus
localagents:
  model: coder
  isolation: worktree
---
Write tests first.
`;

describe('parseAgentFile (Claude Code subagent format)', () => {
  it('reads the frontmatter and the prompt, tools as a list or a comma-separated string', () => {
    expect(parseAgentFile(FILE, '/p/.claude/agents/tester.md', 'project')).toEqual({
      name: 'tester',
      file: '/p/.claude/agents/tester.md',
      scope: 'project',
      description: 'Writes tests.',
      prompt: 'Write tests first.',
      tools: ['Read', 'Write'],
      model: 'opus',
      localagents: { model: 'coder', isolation: 'worktree' },
    });
    const plain = parseAgentFile(
      '---\ntools: Read, Grep\n---\nHi.',
      '/h/.claude/agents/x.md',
      'user',
    );
    expect(plain).toMatchObject({ name: 'x', tools: ['Read', 'Grep'], prompt: 'Hi.' });
  });

  it('names the file and the field it cannot use', () => {
    expect(() =>
      parseAgentFile('---\nlocalagents:\n  isolation: sometimes\n---\n', '/a.md', 'user'),
    ).toThrow(/\/a\.md: localagents\.isolation/);
  });
});

describe('applyAgent', () => {
  const agent = parseAgentFile(FILE, '/p/.claude/agents/tester.md', 'project');
  it('puts the call over models.yaml over the file, and the prompt before the call’s own', () => {
    const applied = applyAgent(
      { task: 't', cwd: '/p', systemPromptAppend: 'Be brief.' },
      agent,
      { name: 'tester', verify: 'npm test' },
      () => false,
    );
    expect(applied).toMatchObject({
      model: 'coder',
      isolation: 'worktree',
      verify: 'npm test',
      allowedTools: ['Read', 'Write'],
      tools: ['Read', 'Write'],
      systemPromptAppend: 'Write tests first.\n\nBe brief.',
    });
    expect(
      applyAgent({ task: 't', cwd: '/p', model: 'other' }, agent, undefined, () => false).model,
    ).toBe('other');
  });

  it('takes Claude Code’s model field only when it names a menu entry', () => {
    const bare = { ...agent, localagents: {} };
    expect(
      applyAgent({ task: 't', cwd: '/p' }, bare, undefined, () => false).model,
    ).toBeUndefined();
    expect(
      applyAgent({ task: 't', cwd: '/p' }, bare, undefined, (name) => name === 'opus').model,
    ).toBe('opus');
  });
});
