import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator } from '../../src/emulator/emulator.js';
import type { RequestLogLine } from '../../src/shim/log.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { gitRepo } from '../support/git-repo.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
const CLAUDE = createRequire(import.meta.url).resolve(
  '@anthropic-ai/claude-agent-sdk-linux-x64/claude',
);
const WINDOW = 131072;

/** Starts `localagents proxy` and collects its NAME=value lines until ANTHROPIC_BASE_URL has appeared. */
async function startProxy(args: string[], env: NodeJS.ProcessEnv) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [MAIN, 'proxy', ...args], {
    env,
    cwd: ROOT,
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exports: Record<string, string> = {};
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    const at = line.indexOf('=');
    if (at > 0) exports[line.slice(0, at)] = line.slice(at + 1);
  });
  await waitFor(() => exports.ANTHROPIC_BASE_URL !== undefined || child.exitCode !== null, {
    timeoutMs: 30_000,
    what: 'the ANTHROPIC_BASE_URL line',
  });
  if (exports.ANTHROPIC_BASE_URL === undefined)
    throw new Error(`proxy exited ${child.exitCode}: ${stderr}`);
  // The other lines are written in the same tick; give readline the rest of the chunk.
  await waitFor(() => exports.ANTHROPIC_MODEL !== undefined, { what: 'the ANTHROPIC_MODEL line' });
  return { child, exports, stderr: () => stderr };
}

describe('localagents proxy', () => {
  it('lets a plain `claude -p` work against a strict-template llama.cpp and logs its requests', async () => {
    const emu = await startEmulator({
      nCtx: WINDOW,
      nCtxTrain: WINDOW,
      parallel: 1,
      strictTemplate: true,
    });
    onTestFinished(() => emu.close());
    const state = await tempDir({}, 'localagents-state-');
    const proxy = await startProxy(['--base-url', emu.url], {
      ...process.env,
      LOCALAGENTS_STATE_DIR: state,
    });

    expect(proxy.exports.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/j\/[\w-]{22,}$/);
    expect(proxy.exports.CLAUDE_CODE_MAX_CONTEXT_TOKENS).toBe(String(WINDOW));
    expect(proxy.exports.CLAUDE_CODE_ATTRIBUTION_HEADER).toBe('0');

    const repo = await gitRepo();
    const env = await isolatedClaudeEnv(proxy.exports);
    const claude = spawn(
      CLAUDE,
      [
        '-p',
        'Create hello.txt and show me its contents.',
        '--permission-mode',
        'acceptEdits',
        '--allowedTools',
        'Read,Write,Edit,Bash',
      ],
      { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    claude.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    claude.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // A deadline, so a stuck session fails with its output instead of the test timeout.
    const deadline = setTimeout(() => claude.kill('SIGKILL'), 90_000);
    const [code] = (await once(claude, 'exit')) as [number | null];
    clearTimeout(deadline);

    expect(code, output).toBe(0);
    expect(await readFile(join(repo, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
    expect(output).toContain('Done: I wrote hello.txt');

    proxy.child.kill('SIGINT');
    const [proxyCode] = (await once(proxy.child, 'exit')) as [number | null];
    expect(proxyCode, proxy.stderr()).toBe(0);
    const log = await readFile(join(state, 'proxy', 'requests.jsonl'), 'utf8');
    const lines = log
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RequestLogLine)
      .filter((line) => line.path.startsWith('/v1/messages'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(
      lines.every((line) => line.status === 200 && line.rewrites.includes('fold_system')),
    ).toBe(true);
    expect(
      emu.requests.filter((r) => r.path.startsWith('/v1/messages')).every((r) => r.status === 200),
    ).toBe(true);
  });

  it('resolves --endpoint through models.yaml and relays to it', async () => {
    const emu = await startEmulator({
      nCtx: 65536,
      nCtxTrain: 65536,
      parallel: 2,
      servedNames: ['qwen3.5-tiny'],
    });
    onTestFinished(() => emu.close());
    const dir = await tempDir({
      'models.yaml': `endpoints:\n  gpu:\n    base_url: ${emu.url}\n    backend: llama.cpp\n`,
    });
    const proxy = await startProxy(
      ['--endpoint', 'gpu', '--config', join(dir, 'models.yaml'), '--log-dir', dir],
      {
        ...process.env,
        LOCALAGENTS_STATE_DIR: dir,
      },
    );
    expect(proxy.exports.ANTHROPIC_MODEL).toBe('qwen3.5-tiny');
    expect(proxy.exports.CLAUDE_CODE_MAX_CONTEXT_TOKENS).toBe('32768');
    expect(proxy.exports.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBe('4096');
    const response = await fetch(`${proxy.exports.ANTHROPIC_BASE_URL}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(response.status).toBe(200);
    const forwarded = emu.requests.find((r) => r.path.startsWith('/v1/messages'));
    expect(forwarded?.body).toMatchObject({ model: 'qwen3.5-tiny' });
    proxy.child.kill('SIGINT');
    const [code] = (await once(proxy.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    const [line] = (await readFile(join(dir, 'requests.jsonl'), 'utf8')).trim().split('\n');
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      model: 'claude-sonnet-4-5',
      upstream_model: 'qwen3.5-tiny',
      rewrites: ['model_map'],
    });
  });

  it('refuses to start without a backend, naming the fix', async () => {
    const child = spawn(process.execPath, [MAIN, 'proxy'], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(stderr).toContain('give exactly one of --endpoint NAME and --base-url URL');
  });
});
