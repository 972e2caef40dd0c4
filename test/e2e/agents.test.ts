import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator } from '../../src/emulator/emulator.js';
import { callTool, callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

/** The user's own Claude Code subagent, run on a local model: its prompt and only its tools reach the backend. */
const REVIEWER = `---
name: reviewer
description: Reads code and reports problems; never edits.
tools: Read, Grep, Glob
model: sonnet
localagents:
  verify: test -f README.md
---
You are the reviewer agent (REVIEWER-7). Read the files you are pointed at and report problems; never edit.
`;

async function project(): Promise<string> {
  const root = await tempDir({ 'README.md': '# project\n' });
  await mkdir(join(root, '.claude', 'agents'), { recursive: true });
  await writeFile(join(root, '.claude', 'agents', 'reviewer.md'), REVIEWER);
  return root;
}

describe("the user's agent definitions on a local model", () => {
  it('runs .claude/agents/reviewer.md: its prompt in the system prompt, only its tools, its verify', async () => {
    const emu = await startEmulator({
      nCtx: 65536,
      parallel: 2,
      script: [{ text: 'Reviewed README.md: no problems found in the one heading.' }],
    });
    onTestFinished(() => emu.close());
    const root = await project();
    const { client, app } = await startTestApp(emulatorConfig(emu.url), { cwd: root });

    const listed = await callTool(client, 'list_models');
    expect(listed.agents).toEqual([
      expect.objectContaining({
        name: 'reviewer',
        scope: 'project',
        tools: ['Read', 'Grep', 'Glob'],
        verify: 'test -f README.md',
        description: 'Reads code and reports problems; never edits.',
      }),
    ]);

    const done = await callTool(client, 'run_agent', {
      task: 'Review README.md.',
      agent: 'reviewer',
      cwd: root,
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    expect(done.verification).toMatchObject({ command: 'test -f README.md', passed: true });
    expect((await app.store.read(String(done.id))).agent).toBe('reviewer');

    const main = emu.requests.find(
      (request) =>
        request.path.startsWith('/v1/messages') && request.rawBody.includes('REVIEWER-7'),
    );
    const body = main?.body as { tools?: { name: string }[]; system?: unknown };
    expect(JSON.stringify(body.system)).toContain('You are the reviewer agent (REVIEWER-7)');
    // Claude Code's own DeferredToolPlaceholder (its tool-search stand-in) is no tool the model can call.
    const tools = body.tools
      ?.map((tool) => tool.name)
      .filter((name) => name !== 'DeferredToolPlaceholder');
    expect(tools?.sort()).toEqual(['Glob', 'Grep', 'Read']);
  });

  it('names the agents there are when asked for one that is not', async () => {
    const { client } = await startTestApp(emulatorConfig('http://127.0.0.1:9'));
    const root = await project();
    const result = await callToolRaw(client, 'run_agent', {
      task: 'x',
      agent: 'writer',
      cwd: root,
    });
    expect(result.isError).toBe(true);
    const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    expect(text).toContain('there is no agent "writer"');
    expect(text).toContain('use one of: reviewer');
  });
});
