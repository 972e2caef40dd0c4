import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { access, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
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
  // All lines are written at once (one pipe chunk), so readline has the rest of them by now.
  return { child, exports, stderr: () => stderr };
}

/** Stops the proxy as Ctrl-C would (which flushes its logs) and returns its exit code. */
async function stopProxy(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  child.kill('SIGINT');
  const [code] = (await once(child, 'exit')) as [number | null];
  return code;
}

/** A port nothing listens on right now, for --port. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function messages(baseUrl: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}/v1/messages?beta=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'placeholder', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

const hello = (extra: Record<string, unknown> = {}) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

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
    // The jobs' own list (claudeCodeSettings), privacy included, less what only a job has.
    expect(proxy.exports).toMatchObject({
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    });
    expect(proxy.exports.LOCALAGENTS_DELEGATE).toBeUndefined();
    expect(proxy.exports.API_TIMEOUT_MS).toBeUndefined();

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
    // The same budget a job gets: max(8192, window / 8).
    expect(proxy.exports.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBe('8192');
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

  it('listens on the --port it is given, and writes no requests_full.jsonl without --dump-requests', async () => {
    const emu = await startEmulator({ nCtx: 65536, nCtxTrain: 65536, parallel: 1 });
    onTestFinished(() => emu.close());
    const dir = await tempDir();
    const port = await freePort();
    const proxy = await startProxy(
      ['--base-url', emu.url, '--port', String(port), '--log-dir', dir],
      { ...process.env, LOCALAGENTS_STATE_DIR: dir },
    );
    const base = new URL(proxy.exports.ANTHROPIC_BASE_URL ?? '');
    expect(base.host).toBe(`127.0.0.1:${port}`);
    expect((await messages(base.href, hello())).status).toBe(200);
    expect(emu.requests.filter((r) => r.path.startsWith('/v1/messages'))).toHaveLength(1);
    expect(await stopProxy(proxy.child)).toBe(0);
    expect(await readFile(join(dir, 'requests.jsonl'), 'utf8')).toContain('"status":200');
    await expect(access(join(dir, 'requests_full.jsonl'))).rejects.toThrow(/ENOENT/);
  });

  it('writes requests_full.jsonl with the forwarded body and the auth headers redacted under --dump-requests', async () => {
    const emu = await startEmulator({ nCtx: 65536, nCtxTrain: 65536, parallel: 1 });
    onTestFinished(() => emu.close());
    const dir = await tempDir();
    const proxy = await startProxy(['--base-url', emu.url, '--log-dir', dir, '--dump-requests'], {
      ...process.env,
      LOCALAGENTS_STATE_DIR: dir,
    });
    const result = await messages(proxy.exports.ANTHROPIC_BASE_URL ?? '', hello(), {
      'x-api-key': 'sk-client-key',
      authorization: 'Bearer sk-client-bearer',
    });
    expect(result.status).toBe(200);
    expect(await stopProxy(proxy.child)).toBe(0);
    const full = await readFile(join(dir, 'requests_full.jsonl'), 'utf8');
    expect(full).not.toContain('sk-client');
    const lines = full.trim().split('\n');
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0] ?? '{}') as {
      path: string;
      headers: Record<string, string>;
      body: { model: string; messages: unknown[] };
    };
    expect(entry.path).toBe('/v1/messages?beta=true');
    expect(entry.headers).toMatchObject({ 'x-api-key': '[redacted]', authorization: '[redacted]' });
    // The body as forwarded: the model already mapped to the served id.
    expect(entry.body).toMatchObject({ model: proxy.exports.ANTHROPIC_MODEL, messages: [{}] });
  });

  it('sends no keepalive pings with --keepalive-s 0, however long the backend is silent', async () => {
    const emu = await startEmulator({ nCtx: 65536, nCtxTrain: 65536, parallel: 1 });
    onTestFinished(() => emu.close());
    const dir = await tempDir();
    const proxy = await startProxy(
      ['--base-url', emu.url, '--log-dir', dir, '--keepalive-s', '0'],
      {
        ...process.env,
        LOCALAGENTS_STATE_DIR: dir,
      },
    );
    // Headers out, then silence: a long prefill.
    emu.injectFaults([{ kind: 'stall', afterEvents: 0, ms: 300 }]);
    const result = await messages(proxy.exports.ANTHROPIC_BASE_URL ?? '', hello({ stream: true }));
    expect(result.status).toBe(200);
    expect(result.text.startsWith('event: message_start')).toBe(true);
    expect(result.text).not.toContain('event: ping');
    expect(result.text).toContain('event: message_stop');
    expect(await stopProxy(proxy.child)).toBe(0);
  });

  it('refuses a keyed server given by --base-url without --api-key-env, naming the flag', async () => {
    const emu = await startEmulator({ nCtx: 65536, nCtxTrain: 65536, apiKey: 'sk-server' });
    onTestFinished(() => emu.close());
    const child = spawn(process.execPath, [MAIN, 'proxy', '--base-url', emu.url], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(stderr).toContain(`${emu.url} wants an API key`);
    expect(stderr).toContain('--api-key-env VAR');
    // There is no models.yaml entry behind --base-url to add api_key_env to.
    expect(stderr).not.toContain('models.yaml');
  });

  it('points a 401 on a request at --api-key-env when --base-url was given without it', async () => {
    // A backend whose model list is open and whose messages route is keyed (a key added after start, or an
    // auth proxy in front): the probe passes, the request is refused.
    const backend = createServer((req, res) => {
      req.resume();
      const models = req.method === 'GET' && req.url === '/v1/models';
      res.writeHead(models ? 200 : req.url?.startsWith('/v1/messages') ? 401 : 404, {
        'content-type': 'application/json',
      });
      res.end(
        models
          ? '{"object":"list","data":[{"id":"m","object":"model"}]}'
          : '{"error":"Unauthorized"}',
      );
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => backend.close(() => resolve())));
    const address = backend.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const dir = await tempDir();
    const proxy = await startProxy(['--base-url', url, '--log-dir', dir], {
      ...process.env,
      LOCALAGENTS_STATE_DIR: dir,
    });
    const result = await messages(proxy.exports.ANTHROPIC_BASE_URL ?? '', hello());
    expect(result.status).toBe(401);
    expect(JSON.parse(result.text)).toEqual({
      type: 'error',
      error: {
        type: 'authentication_error',
        message:
          'the backend rejected the API key (Unauthorized); restart localagents proxy with --api-key-env VAR, VAR holding the key the server was started with',
      },
    });
    expect(await stopProxy(proxy.child)).toBe(0);
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
