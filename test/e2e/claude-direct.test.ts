import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { query, type SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { gitRepo } from '../support/git-repo.js';

interface SessionOutcome {
  result: SDKResultMessage | undefined;
  thrown: unknown;
}

/** Runs the real `claude` against the emulator with no shim in between. */
async function runClaude(emulator: Emulator, cwd: string, prompt: string): Promise<SessionOutcome> {
  const env = await isolatedClaudeEnv({
    ANTHROPIC_BASE_URL: emulator.url,
    ANTHROPIC_API_KEY: 'sk-test',
  });
  let result: SDKResultMessage | undefined;
  let thrown: unknown;
  try {
    for await (const message of query({
      prompt,
      options: {
        cwd,
        model: 'qwen-test',
        permissionMode: 'acceptEdits',
        allowedTools: ['Read', 'Write', 'Edit', 'Bash'],
        env,
        maxTurns: 10,
      },
    })) {
      if (message.type === 'result') result = message;
    }
  } catch (error) {
    // query() throws after yielding an is_error result (contract §0.9).
    thrown = error;
  }
  return { result, thrown };
}

interface Block {
  type?: unknown;
  id?: unknown;
  name?: unknown;
  tool_use_id?: unknown;
  content?: unknown;
  is_error?: unknown;
}

function blocksOf(content: unknown): Block[] {
  return Array.isArray(content) ? (content as Block[]) : [];
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return blocksOf(content)
    .map((block) => ((block as { text?: unknown }).text as string | undefined) ?? '')
    .join('');
}

/** The result Claude Code sent back for the Bash call of the assistant turn before it, if any. */
function bashResult(body: unknown): { text: string; isError: boolean } | undefined {
  const messages = (body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const call = messages
    .filter((message) => message.role === 'assistant')
    .flatMap((message) => blocksOf(message.content))
    .find((block) => block.type === 'tool_use' && block.name === 'Bash');
  const result = blocksOf(messages.at(-1)?.content).find(
    (block) => block.type === 'tool_result' && block.tool_use_id === call?.id,
  );
  if (!call || !result) return undefined;
  return { text: textOf(result.content), isError: result.is_error === true };
}

describe('claude pointed straight at the emulator', () => {
  let emulator: Emulator | undefined;
  afterEach(async () => {
    await emulator?.close();
    emulator = undefined;
  });

  it('writes the scripted file and reads it back when the template accepts mid-conversation system messages', async () => {
    emulator = await startEmulator({ strictTemplate: false, nCtx: 65536, parallel: 2 });
    const repo = await gitRepo();
    const { result, thrown } = await runClaude(
      emulator,
      repo,
      'Create hello.txt and show me its contents.',
    );

    expect(thrown).toBeUndefined();
    expect(await readFile(join(repo, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
    expect(result?.is_error).toBe(false);
    const messages = emulator.requests.filter((r) => r.path.startsWith('/v1/messages'));
    expect(messages.map((r) => r.status)).toEqual([200, 200, 200]);
    // The later turns extend the first prompt, so the slot's prefix cache serves most of it.
    expect(messages[2]?.cachedTokens).toBeGreaterThan((messages[1]?.promptTokens ?? 0) / 2);
    // The Bash call really ran: its tool_result carries the file's content (a denied or failed
    // call would come back as is_error with a refusal instead).
    const bash = bashResult(messages[2]?.body);
    expect(bash).toMatchObject({ isError: false });
    expect(bash?.text).toContain('hello from the local model');
  });

  it('fails with the captured template error when the strict Qwen template sees the system message', async () => {
    emulator = await startEmulator({ strictTemplate: true, nCtx: 16384, parallel: 2 });
    const repo = await gitRepo();
    const { result, thrown } = await runClaude(emulator, repo, 'Create hello.txt.');

    expect(result?.is_error).toBe(true);
    expect(result?.subtype === 'success' ? result.result : '').toContain(
      'System message must be at the beginning',
    );
    expect(String(thrown)).toContain('System message must be at the beginning');
    const messages = emulator.requests.filter((r) => r.path.startsWith('/v1/messages'));
    expect(messages.length).toBeGreaterThanOrEqual(1);
    expect(messages.every((r) => r.status === 400)).toBe(true);
  });
});
