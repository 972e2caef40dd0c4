/**
 * The real `claude` as the top-level client, the way a user runs it: localagents registered with
 * `claude mcp add` (README), a scripted Anthropic backend playing the orchestrating model, which loads
 * our deferred tools with ToolSearch, calls run_agent, then wait_job until the job is final, and answers.
 * The job runs on the emulator through a second, headless `claude` (the delegate). Proves: our tools and
 * instructions are on the orchestrator's first request, the file lands in the worktree, the result reaches
 * the orchestrator, and the delegate neither starts nor sees localagents while keeping the user's other
 * MCP servers (on the wire and by counting the processes started).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import {
  startAnthropicBackend,
  toolExchanges,
  type AnthropicBackend,
  type MessagesBody,
  type Turn,
} from '../support/anthropic-backend.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { git, gitRepo } from '../support/git-repo.js';
import { emulatorConfig } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
const CLAUDE = join(ROOT, 'node_modules', '@anthropic-ai', 'claude-agent-sdk-linux-x64', 'claude');
const ECHO_SERVER = join(ROOT, 'test', 'support', 'echo-mcp-server.js');
const FINAL = /^(succeeded|failed|timeout|cancelled|interrupted)$/;
type Isolation = 'worktree' | 'none';

/** The orchestrator: what a capable model does with our tools, decided from the conversation so far. */
function orchestrate(
  server: string,
  repo: string,
  isolation: Isolation,
): (body: MessagesBody) => Turn {
  const tool = (name: string): string => `mcp__${server}__${name}`;
  return (body) => {
    if (!body.tools?.length) return { text: 'Delegating a file' }; // title-style requests
    const calls = toolExchanges(body);
    const last = calls.at(-1);
    if (!last)
      return {
        tool: 'ToolSearch',
        input: { query: `select:${tool('run_agent')},${tool('wait_job')}` },
      };
    if (last.name === 'ToolSearch')
      return {
        tool: tool('run_agent'),
        input: { task: 'Write hello.txt and show it.', cwd: repo, isolation },
      };
    const summary = JSON.parse(last.result) as { id: string; status: string; result_text?: string };
    if (last.name === tool('run_agent') || !FINAL.test(summary.status))
      return { tool: tool('wait_job'), input: { job_id: summary.id } };
    return { text: `ORCHESTRATOR DONE ${summary.id} ${summary.status}: ${summary.result_text}` };
  };
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs?: number },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { ...options, timeout: options.timeoutMs ?? 100_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          stdout,
          stderr,
        }),
    );
  });
}

interface Rig {
  emulator: Emulator;
  backend: AnthropicBackend;
  repo: string;
  env: Record<string, string>;
  configFile: string;
  starts: string;
  stateDir: string;
}

/**
 * A user's machine in miniature: a temp HOME, localagents on PATH as `localagents` (a wrapper that logs
 * every start, then runs the built dist/), the emulator as the local model, and another MCP server.
 */
async function rig(server: string, isolation: Isolation): Promise<Rig> {
  const emulator = await startEmulator();
  const repo = await gitRepo({ 'README.md': '# demo\n' });
  const bin = await tempDir({}, 'localagents-bin-');
  const starts = join(bin, 'starts.log');
  await writeFile(starts, '');
  await writeFile(
    join(bin, 'localagents'),
    `#!/bin/sh\necho "$$ delegate=\${LOCALAGENTS_DELEGATE:-no} $*" >> '${starts}'\nexec '${process.execPath}' '${MAIN}' "$@"\n`,
  );
  await chmod(join(bin, 'localagents'), 0o755);
  const stateDir = await tempDir({}, 'localagents-state-');
  const configDir = await tempDir(
    { 'models.yaml': emulatorConfig(emulator.url) },
    'localagents-config-',
  );
  const backend = await startAnthropicBackend(orchestrate(server, repo, isolation));
  const env = await isolatedClaudeEnv({
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    LOCALAGENTS_STATE_DIR: stateDir,
    ANTHROPIC_BASE_URL: backend.url,
    ANTHROPIC_API_KEY: 'sk-test-orchestrator',
    // By default Claude Code connects MCP servers in the background and sends its first request without waiting
    // (2.1.332: MCP_CONNECTION_NONBLOCKING unless set false), so whether our tools are on that request is a race
    // between its start and serve's, which a loaded CI machine lost. Blocking, it waits up to MCP_CONNECT_TIMEOUT_MS
    // for the handshake: this test checks what Claude Code is given; how fast serve answers is
    // bench/serve-initialize's and the architecture test's (nothing heavy loads before the handshake).
    MCP_CONNECTION_NONBLOCKING: 'false',
    MCP_CONNECT_TIMEOUT_MS: '30000',
  });
  const echo = await run(
    CLAUDE,
    ['mcp', 'add', '--scope', 'user', 'other', '--', process.execPath, ECHO_SERVER],
    { cwd: repo, env },
  );
  expect(echo.code, echo.stderr).toBe(0);
  return {
    emulator,
    backend,
    repo,
    env,
    configFile: join(configDir, 'models.yaml'),
    starts,
    stateDir,
  };
}

/** `claude -p` as a user would run it, allowed to use our tools. */
async function orchestrator(r: Rig, server: string): Promise<string> {
  const result = await run(
    CLAUDE,
    ['-p', 'Delegate writing hello.txt to the local model.', '--allowedTools', `mcp__${server}`],
    { cwd: r.repo, env: r.env, timeoutMs: 110_000 },
  );
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
  return result.stdout;
}

/** What must hold whichever transport carried the MCP traffic. */
async function expectDelegation(
  r: Rig,
  server: string,
  isolation: Isolation,
  stdout: string,
): Promise<void> {
  const main = r.backend.requests.filter((request) => request.body.tools?.length);
  expect(main.length).toBeGreaterThanOrEqual(4);
  // Our tools (deferred, by name) and instructions were there on the orchestrator's first request.
  const first = main[0]?.raw ?? '';
  expect(first).toContain(`mcp__${server}__run_agent`);
  expect(first).toContain(`mcp__${server}__wait_job`);
  expect(first).toContain('localagents hands routine coding work');
  // The last request carries the finished job's result, and the orchestrator said it.
  const last = main.at(-1)?.body;
  const finalCall = last ? toolExchanges(last).at(-1) : undefined;
  expect(finalCall?.name).toBe(`mcp__${server}__wait_job`);
  const summary = JSON.parse(finalCall?.result ?? '{}') as {
    id: string;
    status: string;
    result_text: string;
    worktree?: { path: string; branch: string };
  };
  expect(summary.status).toBe('succeeded');
  expect(summary.result_text).toContain('hello.txt');
  expect(stdout).toContain(`ORCHESTRATOR DONE ${summary.id} succeeded`);
  if (isolation === 'worktree') {
    // The delegate's file is in the worktree, not in the user's tree.
    const worktree = summary.worktree ?? { path: '/nonexistent', branch: '' };
    expect(await readFile(join(worktree.path, 'hello.txt'), 'utf8')).toBe(
      'hello from the local model\n',
    );
    expect(worktree.branch).toBe(`local-agent/${summary.id}`);
    expect(await git(r.repo, 'status', '--porcelain')).toBe('');
  } else {
    expect(summary.worktree).toBeUndefined();
    expect(await readFile(join(r.repo, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
  }
  // The delegate kept the user's other MCP server and never saw localagents.
  const delegate = r.emulator.requests.filter((request) => request.path.startsWith('/v1/messages'));
  expect(delegate.length).toBeGreaterThanOrEqual(3);
  const delegateWire = delegate.map((request) => JSON.stringify(request.body)).join('\n');
  expect(delegateWire).toContain('mcp__other__echo');
  expect(delegateWire).not.toContain(`mcp__${server}__`);
  expect(delegateWire).not.toContain('localagents hands routine coding work');
}

describe('the real claude as the top-level client of localagents', () => {
  let r: Rig | undefined;
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill();
    await r?.backend.close();
    await r?.emulator.close();
    r = undefined;
  });

  it('stdio, registered with `claude mcp add … -- localagents --config …`: delegates, waits, gets the result', async () => {
    r = await rig('local', 'worktree');
    const add = await run(
      CLAUDE,
      ['mcp', 'add', '--scope', 'user', 'local', '--', 'localagents', '--config', r.configFile],
      { cwd: r.repo, env: r.env },
    );
    expect(add.code, add.stderr).toBe(0);
    const stdout = await orchestrator(r, 'local');
    await expectDelegation(r, 'local', 'worktree', stdout);
    // Exactly one localagents process ever started: the orchestrator's. None under the delegate.
    const started = (await readFile(r.starts, 'utf8')).trim().split('\n');
    expect(started).toEqual([expect.stringMatching(/^\d+ delegate=no --config /)]);
  });

  // Local scope (claude mcp add's default) and isolation none: the delegate runs in the very project whose
  // configuration names this server, so Claude Code itself would connect it; deniedMcpServers stops that.
  it('streamable HTTP at local scope, isolation none: the same, and no delegate connects back', async () => {
    r = await rig('local', 'none');
    const serve = spawn('localagents', ['serve', '--http', '0', '--config', r.configFile], {
      cwd: r.repo,
      env: r.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(serve);
    // serve prints its URL and, on first start, the bearer token every request must carry.
    const [mcpUrl, token] = await new Promise<[string, string]>((resolve, reject) => {
      let text = '';
      serve.stderr?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const url = /MCP over streamable HTTP at (\S+)/.exec(text)?.[1];
        const secret = /Authorization: Bearer ([\w-]+)"/.exec(text)?.[1];
        if (url && secret) resolve([url, secret]);
      });
      serve.once('exit', (code) => reject(new Error(`serve exited ${code}: ${text}`)));
    });
    const add = await run(
      CLAUDE,
      [
        'mcp',
        'add',
        '--transport',
        'http',
        'local',
        mcpUrl,
        '--header',
        `Authorization: Bearer ${token}`,
      ],
      { cwd: r.repo, env: r.env },
    );
    expect(add.code, add.stderr).toBe(0);
    const stdout = await orchestrator(r, 'local');
    await expectDelegation(r, 'local', 'none', stdout);
    const started = (await readFile(r.starts, 'utf8')).trim().split('\n');
    expect(started).toEqual([expect.stringMatching(/^\d+ delegate=no serve --http 0/)]);
  });
});

describe('a localagents serve started inside a delegate', () => {
  it('refuses to run, saying why and what to do', async () => {
    const dir = await tempDir();
    const result = await run(process.execPath, [MAIN, 'serve'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: dir, LOCALAGENTS_DELEGATE: '1' },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('not starting inside a localagents job');
    expect(result.stderr).toContain('delegate_mcp');
  });
});
