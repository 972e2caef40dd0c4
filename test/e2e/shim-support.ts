import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { query, type SDKMessage, type SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import { onTestFinished } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import type { RequestLogLine } from '../../src/shim/log.js';
import { createShim, type ShimRoute } from '../../src/shim/server.js';
import type { RouteConfig } from '../../src/shim/route.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { gitRepo } from '../support/git-repo.js';
import { tempDir } from '../support/temp-dir.js';

/** The emulator's window for the shim e2e tests: big enough that Claude Code's auto-compaction stays quiet. */
export const WINDOW = 131072;

export interface ShimRig {
  emulator: Emulator;
  route: ShimRoute;
  logDir: string;
  repo: string;
  /** Closes the route (flushing its log) and returns the request log lines. */
  logLines(): Promise<RequestLogLine[]>;
}

/** Emulator (strict Qwen template) ← shim route ← a temp git repo for `claude` to work in; all closed after the test. */
export async function startRig(
  emulator: EmulatorOptions = {},
  route: Partial<RouteConfig> = {},
): Promise<ShimRig> {
  const emu = await startEmulator({
    nCtx: WINDOW,
    nCtxTrain: WINDOW,
    parallel: 1,
    strictTemplate: true,
    ...emulator,
  });
  const shim = await createShim();
  onTestFinished(async () => {
    await shim.close();
    await emu.close();
  });
  const logDir = await tempDir({}, 'localagents-shimlog-');
  const added = shim.addRoute({
    backendUrl: emu.url,
    backend: 'llama.cpp',
    servedId: 'qwen-test',
    contextTokens: WINDOW,
    logDir,
    ...route,
  });
  const repo = await gitRepo();
  return {
    emulator: emu,
    route: added,
    logDir,
    repo,
    async logLines() {
      await added.close();
      const text = await readFile(join(logDir, 'requests.jsonl'), 'utf8');
      return text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as RequestLogLine);
    },
  };
}

export interface SessionOutcome {
  result: SDKResultMessage | undefined;
  messages: SDKMessage[];
  thrown: unknown;
}

/** Runs the real `claude` (Agent SDK `query()`) through the shim route. */
export async function runClaude(
  rig: ShimRig,
  prompt: string,
  env: Record<string, string> = {},
): Promise<SessionOutcome> {
  const claudeEnv = await isolatedClaudeEnv({
    ANTHROPIC_BASE_URL: rig.route.baseUrl,
    ANTHROPIC_API_KEY: 'x',
    ANTHROPIC_MODEL: 'qwen-test',
    CLAUDE_CODE_MAX_CONTEXT_TOKENS: String(WINDOW),
    ...env,
  });
  const messages: SDKMessage[] = [];
  let result: SDKResultMessage | undefined;
  let thrown: unknown;
  try {
    for await (const message of query({
      prompt,
      options: {
        cwd: rig.repo,
        model: 'qwen-test',
        permissionMode: 'acceptEdits',
        allowedTools: ['Read', 'Write', 'Edit', 'Bash'],
        env: claudeEnv,
        maxTurns: 12,
      },
    })) {
      messages.push(message);
      if (message.type === 'result') result = message;
    }
  } catch (error) {
    // query() throws after yielding an is_error result (contract §0.9).
    thrown = error;
  }
  return { result, messages, thrown };
}

/** The text of a recorded request's last user message (where Claude Code puts the compaction prompt). */
export function lastUserText(body: unknown): string {
  if (
    typeof body !== 'object' ||
    body === null ||
    !('messages' in body) ||
    !Array.isArray(body.messages)
  )
    return '';
  const users: unknown[] = body.messages.filter(
    (message: unknown) =>
      typeof message === 'object' &&
      message !== null &&
      'role' in message &&
      message.role === 'user',
  );
  return JSON.stringify(users[users.length - 1] ?? '');
}
