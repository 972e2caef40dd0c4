import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { onTestFinished } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { silentDiagnostics } from '../../src/diagnostics.js';
import { configPaths } from '../../src/registry/config.js';
import { isolatedClaudeEnv } from './claude-env.js';
import { tempDir } from './temp-dir.js';

/** models.yaml naming one endpoint (the emulator) called `emu`, plus optional extra YAML. */
export function emulatorConfig(url: string, extra = ''): string {
  return `defaults:\n  timeout_s: 300\n  max_turns: 20\nendpoints:\n  emu:\n    base_url: ${url}\n    backend: llama.cpp\n    host: test-box\n${extra}`;
}

export interface TestApp {
  app: App;
  client: Client;
  stateDir: string;
  env: Record<string, string>;
  configFile: string;
}

/** A real app (temp state dir, isolated HOME for `claude`) and a real MCP Client over an in-memory pair. */
export async function startTestApp(
  config: string,
  options: {
    stateDir?: string;
    cwd?: string;
    claudePath?: string;
    /** More of the server's environment (a backend key's variable). */
    env?: Record<string, string>;
  } = {},
): Promise<TestApp> {
  const configDir = await tempDir({ 'models.yaml': config }, 'localagents-config-');
  const stateDir = options.stateDir ?? (await tempDir({}, 'localagents-state-'));
  const env = await isolatedClaudeEnv(options.env);
  const configFile = join(configDir, 'models.yaml');
  const app = createApp({
    stateDir,
    configPaths: configPaths({ configFlag: configFile, cwd: configDir, env }),
    env,
    diagnostics: silentDiagnostics,
    cwd: options.cwd ?? configDir,
    claudePath: options.claudePath,
  });
  onTestFinished(() => app.close());
  await app.recovered;
  const client = await connectClient(app);
  return { app, client, stateDir, env, configFile };
}

export async function connectClient(app: App): Promise<Client> {
  const server = app.createMcpServer();
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'localagents-test', version: '0.0.0' });
  await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
  onTestFinished(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

/** A Client talking to `node dist/cli/main.js serve` over stdio, as `claude mcp add` would run it. */
export async function connectStdioClient(options: {
  args: string[];
  env: Record<string, string>;
  cwd: string;
}): Promise<{ client: Client; transport: StdioClientTransport }> {
  const main = new URL('../../dist/cli/main.js', import.meta.url).pathname;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [main, ...options.args],
    env: options.env,
    cwd: options.cwd,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'localagents-stdio-test', version: '0.0.0' });
  await client.connect(transport);
  onTestFinished(() => client.close());
  return { client, transport };
}

/** structuredContent of a tool answer, failing loudly when the tool answered an error. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
  if (result.isError) throw new Error(`${name} answered an error: ${text}`);
  if (!result.structuredContent)
    throw new Error(`${name} answered without structuredContent: ${text}`);
  expectSameText(result.structuredContent, text);
  return result.structuredContent;
}

/** The raw answer, for tests that expect isError. */
export async function callToolRaw(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function expectSameText(structured: Record<string, unknown>, text: string): void {
  if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(structured)) {
    throw new Error('the text content differs from structuredContent');
  }
}

/** Live processes whose command line runs `claude` in stream-json mode (the SDK's child), from the process table. */
export async function runningClaudePids(): Promise<number[]> {
  const { readdir, readFile } = await import('node:fs/promises');
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // State Z (zombie) has exited: it only waits to be reaped by its parent.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (cmdline.includes('claude') && cmdline.includes('stream-json') && state !== 'Z')
      pids.push(Number(entry));
  }
  return pids;
}
