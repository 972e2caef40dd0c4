import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { callTool, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { git, gitRepo } from '../support/git-repo.js';
import { tempDir } from '../support/temp-dir.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(() => emulator.close());

/** Every text the backend was sent for one job: system blocks and message contents, as JSON. */
function sentTexts(from: number): { system: string; messages: string }[] {
  return emulator.requests
    .slice(from)
    .filter((request) => request.path.startsWith('/v1/messages'))
    .map((request) => {
      const body = request.body as { system?: { text: string }[]; messages?: unknown };
      return {
        system: (body.system ?? []).map((block) => block.text).join('\n'),
        messages: JSON.stringify(body.messages ?? []),
      };
    });
}

describe('the options a job passes to its session', () => {
  it.each([
    ['inherit', true],
    ['none', false],
  ] as const)(
    'delegate_mcp: %s gives the delegate the user’s own MCP servers: %s',
    async (mode, inherited) => {
      const config = emulatorConfig(emulator.url).replace(
        'defaults:\n',
        `defaults:\n  delegate_mcp: ${mode}\n`,
      );
      const { client, env } = await startTestApp(config);
      // A user-scope server, as `claude mcp add --scope user other -- node echo-mcp-server.js` writes it.
      const echo = fileURLToPath(new URL('../support/echo-mcp-server.js', import.meta.url));
      await writeFile(
        join(env.HOME ?? '/nonexistent', '.claude.json'),
        JSON.stringify({
          mcpServers: { other: { type: 'stdio', command: process.execPath, args: [echo] } },
        }),
      );
      const before = emulator.requests.length;
      const summary = await callTool(client, 'run_agent', {
        task: 'Write hello.txt.',
        cwd: await tempDir(),
        wait_s: 100,
      });
      expect(summary.status).toBe('succeeded');
      const wire = sentTexts(before)
        .map((texts) => texts.messages)
        .join('\n');
      expect(wire.length).toBeGreaterThan(0);
      expect(wire.includes('mcp__other__echo')).toBe(inherited);
    },
  );

  it('loads project settings but not the user’s, and applies per-call permission mode, tools and prompt', async () => {
    const { client, app, env } = await startTestApp(emulatorConfig(emulator.url));
    await writeFile(join(env.HOME ?? '/nonexistent', '.claude', 'CLAUDE.md'), 'USER-MEMORY-7f3a\n');
    const cwd = await tempDir({ 'CLAUDE.md': 'PROJECT-MEMORY-5c1d\n' });
    const before = emulator.requests.length;
    const summary = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd,
      wait_s: 100,
      // Write is not allowed and the mode asks before edits: with nobody to ask, the Write is denied.
      permission_mode: 'default',
      allowed_tools: ['Read', 'Bash'],
      system_prompt_append: 'PER-CALL-APPEND-91be',
    });
    expect(summary.status).toBe('succeeded');
    const sent = sentTexts(before);
    expect(sent.length).toBeGreaterThan(0);
    const first = sent[0] ?? { system: '', messages: '' };
    expect(first.messages).toContain('PROJECT-MEMORY-5c1d');
    expect(sent.some((texts) => texts.messages.includes('USER-MEMORY-7f3a'))).toBe(false);
    expect(first.system).toContain('PER-CALL-APPEND-91be');
    expect(first.system).toContain('You are a delegate');

    expect(existsSync(join(cwd, 'hello.txt'))).toBe(false);
    const record = await app.store.read(String(summary.id));
    expect(record.permission_mode).toBe('default');
    // A denied Write touched nothing.
    expect(record.files_touched).toEqual([]);
    const events = (await readFile(join(app.store.jobDir(record.id), 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; message: Record<string, unknown> });
    expect(events[0]?.message).toMatchObject({ permissionMode: 'default' });
    const result = events.at(-1)?.message as { permission_denials?: { tool_name: string }[] };
    expect(result.permission_denials?.map((denial) => denial.tool_name)).toEqual(['Write']);
  });
});

describe('a project that sets Claude Code env in its settings', () => {
  it('cannot take the delegate off the shim: the routing variables win over .claude/settings.json', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const settings = JSON.stringify({
      env: {
        ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
        ANTHROPIC_MODEL: 'claude-from-project-settings',
        CLAUDE_CODE_MAX_CONTEXT_TOKENS: '1000000',
      },
    });
    const cwd = await tempDir({ '.claude/settings.json': settings });
    const before = emulator.requests.length;
    const summary = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd,
      wait_s: 100,
    });
    expect(summary.status).toBe('succeeded');
    expect(await readFile(join(cwd, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
    const record = await app.store.read(String(summary.id));
    const models = emulator.requests
      .slice(before)
      .filter((request) => request.path.startsWith('/v1/messages'))
      .map((request) => (request.body as { model?: string }).model);
    expect(models.length).toBeGreaterThan(0);
    expect(new Set(models)).toEqual(new Set([record.served_model]));
    const events = (await readFile(join(app.store.jobDir(record.id), 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            message: { modelUsage?: Record<string, { contextWindow: number }> };
          },
      );
    const usage = Object.values(events.at(-1)?.message.modelUsage ?? {});
    expect(usage.map((entry) => entry.contextWindow)).toContain(record.context_tokens);
  });
});

describe('judging a job from the disk', () => {
  it('counts an edit made through Bash in a git tree, so a terse job is not flagged as a no-op', async () => {
    const bashOnly = await startEmulator({
      script: [
        { toolCalls: [{ name: 'Bash', input: { command: 'echo made > bash.txt' } }] },
        { text: 'Done.' },
      ],
    });
    try {
      const { client, app } = await startTestApp(emulatorConfig(bashOnly.url));
      const repo = await gitRepo();
      const edited = await callTool(client, 'run_agent', {
        task: 'Make bash.txt.',
        cwd: repo,
        wait_s: 100,
      });
      expect(edited.status).toBe('succeeded');
      expect(await readFile(join(repo, 'bash.txt'), 'utf8')).toBe('made\n');
      const record = await app.store.read(String(edited.id));
      expect(record.files_touched).toEqual([]);
      expect(record.changed_on_disk).toBe(true);
      expect(record.possible_no_op).toBe(false);

      // The same terse answer with nothing changed is flagged; outside git it cannot be told.
      await git(repo, 'add', '-A');
      await git(repo, 'commit', '-qm', 'bash.txt');
      const idle = await startEmulator({ script: [{ text: 'Done.' }] });
      try {
        const idleApp = await startTestApp(emulatorConfig(idle.url));
        const nothing = await callTool(idleApp.client, 'run_agent', {
          task: 'Look.',
          cwd: repo,
          wait_s: 100,
        });
        const idleRecord = await idleApp.app.store.read(String(nothing.id));
        expect(idleRecord.changed_on_disk).toBe(false);
        expect(idleRecord.possible_no_op).toBe(true);
        const outside = await callTool(idleApp.client, 'run_agent', {
          task: 'Look.',
          cwd: await tempDir(),
          wait_s: 100,
        });
        expect((await idleApp.app.store.read(String(outside.id))).changed_on_disk).toBeNull();
      } finally {
        await idle.close();
      }
    } finally {
      await bashOnly.close();
    }
  });
});
