import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { callTool, emulatorConfig } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const MAIN = new URL('../../dist/cli/main.js', import.meta.url).pathname;

let emulator: Emulator;
beforeAll(async () => {
  if (!existsSync(MAIN))
    throw new Error('dist/cli/main.js is missing: run `npm run build` first (npm test does)');
  emulator = await startEmulator({ latency: { ttfbMs: 400 } });
});
afterAll(() => emulator.close());

/** `localagents ARGS…` with a config, until its listen line; stopped when the test ends. */
async function startServer(
  args: string[],
  pattern: RegExp,
  options: { token?: boolean } = {},
): Promise<{
  stateDir: string;
  url: string;
  token: string;
  headers: Record<string, string>;
  server: ChildProcess;
  stdout: () => string;
  stderr: () => string;
}> {
  const configDir = await tempDir(
    { 'models.yaml': emulatorConfig(emulator.url) },
    'localagents-config-',
  );
  const stateDir = await tempDir({}, 'localagents-state-');
  const env = await isolatedClaudeEnv({ LOCALAGENTS_STATE_DIR: stateDir });
  const server = spawn(
    process.execPath,
    [MAIN, ...args, '--config', join(configDir, 'models.yaml')],
    { env, cwd: configDir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  onTestFinished(() => {
    if (server.exitCode === null) server.kill('SIGKILL');
  });
  let stderr = '';
  let stdout = '';
  server.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  server.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const url = await waitFor(() => pattern.exec(stderr)?.[1], { what: 'the listen line' });
  // Printed once, with the claude mcp add line that uses it, when serve made the token.
  const token =
    options.token === false
      ? ''
      : await waitFor(() => /Authorization: Bearer ([\w-]+)"/.exec(stderr)?.[1], {
          what: 'the token line',
        });
  const headers = { Authorization: `Bearer ${token}` };
  return { stateDir, url, token, headers, server, stdout: () => stdout, stderr: () => stderr };
}

describe('localagents serve --http', () => {
  it('serves MCP over streamable HTTP on 127.0.0.1, sends wait_job progress, and stops on SIGTERM', async () => {
    const { url, headers, server, stdout } = await startServer(
      ['serve', '--http', '0'],
      /(http:\/\/127\.0\.0\.1:\d+\/mcp)/,
    );

    const client = new Client({ name: 'http-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
    );
    onTestFinished(() => client.close());
    const models = await callTool(client, 'list_models');
    expect(models.endpoints).toEqual([expect.objectContaining({ name: 'emu', up: true })]);

    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
    });
    const progress: string[] = [];
    const result = await client.callTool(
      { name: 'wait_job', arguments: { job_id: started.id } },
      undefined,
      {
        onprogress: (update) => progress.push(update.message ?? ''),
        resetTimeoutOnProgress: true,
      },
    );
    expect(result.structuredContent).toMatchObject({ id: started.id, status: 'succeeded' });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.some((message) => /^running: turn \d+/.test(message))).toBe(true);
    // Each notification carries the job's last activity once there is one.
    expect(progress).toContainEqual(
      expect.stringMatching(/^running: turn \d+, \d+ tool calls, (tool \w+\(|says: |thinking)/),
    );

    server.kill('SIGTERM');
    const [code] = (await once(server, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(stdout()).toBe('');
  });
});

describe('localagents --transport (the Python original’s flag)', () => {
  it('serves streamable HTTP with --transport streamable-http --port', async () => {
    const { url, headers } = await startServer(
      ['--transport', 'streamable-http', '--port', '0'],
      /(http:\/\/127\.0\.0\.1:\d+\/mcp)/,
    );
    const client = new Client({ name: 'transport-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
    );
    onTestFinished(() => client.close());
    expect((await callTool(client, 'list_models')).endpoints).toEqual([
      expect.objectContaining({ name: 'emu', up: true }),
    ]);
  });

  it('serves the legacy SSE transport with --transport sse', async () => {
    const { url, headers } = await startServer(
      ['--transport', 'sse', '--port', '0'],
      /(http:\/\/127\.0\.0\.1:\d+\/sse)/,
    );
    const client = new Client({ name: 'sse-test', version: '0.0.0' });
    await client.connect(
      new SSEClientTransport(new URL(url), {
        requestInit: { headers },
        eventSourceInit: {
          fetch: (input, init) =>
            fetch(input, {
              ...init,
              headers: { ...(init?.headers as Record<string, string>), ...headers },
            }),
        },
      }),
    );
    onTestFinished(() => client.close());
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain('request_model');
    expect(await callTool(client, 'request_model', { model: 'tiny-qwen3' })).toMatchObject({
      available: true,
      endpoint: 'emu',
    });
  });

  it('refuses a request without the token, and one from a web page, whatever its token', async () => {
    const { url, headers } = await startServer(
      ['serve', '--http', '0'],
      /(http:\/\/127\.0\.0\.1:\d+\/mcp)/,
    );
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 't', version: '0' },
      },
    });
    const post = (extra: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...extra,
        },
        body: initialize,
      });
    const anonymous = await post({});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toContain('Bearer');
    expect(await anonymous.text()).toContain('--header \\"Authorization: Bearer <token>\\"');
    expect((await post({ Authorization: 'Bearer not-the-token-at-all' })).status).toBe(401);
    const fromPage = await post({ ...headers, Origin: 'https://evil.example' });
    expect(fromPage.status).toBe(403);
    expect((await post({ ...headers, Origin: 'http://localhost:3000' })).status).toBe(200);
  });

  it('keeps the token in a 0600 file it reuses, and warns when told to listen beyond this machine', async () => {
    const dir = await tempDir();
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'a-token-the-user-chose-1234\n');
    const { url, stderr } = await startServer(
      ['serve', '--http', '0', '--host', '0.0.0.0', '--token-file', tokenFile],
      /(http:\/\/0\.0\.0\.0:\d+\/mcp)/,
      { token: false },
    );
    expect(stderr()).toContain('warning: listening on 0.0.0.0, not only on this machine');
    expect(stderr()).not.toContain('a-token-the-user-chose-1234');
    expect(stderr()).toContain(`its bearer token is in ${tokenFile}`);
    const local = url.replace('0.0.0.0', '127.0.0.1');
    const client = new Client({ name: 'token-file-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(local), {
        requestInit: { headers: { Authorization: 'Bearer a-token-the-user-chose-1234' } },
      }),
    );
    onTestFinished(() => client.close());
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);

    const { stateDir } = await startServer(
      ['serve', '--http', '0'],
      /(http:\/\/127\.0\.0\.1:\d+\/mcp)/,
    );
    expect((await stat(join(stateDir, 'serve-token'))).mode & 0o777).toBe(0o600);
  });

  it('refuses a transport it does not know, naming the ones it does', async () => {
    const run = spawn(process.execPath, [MAIN, '--transport', 'websocket'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(run, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(stderr).toContain('use one of stdio, streamable-http, sse');
  });
});
