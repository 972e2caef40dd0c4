/**
 * `localagents serve` on stdio, cold: spawn → the `initialize` answer, and spawn → the `tools/list` answer,
 * over 10 cold starts each, against `node -e 0`-class baselines measured in the same run (a node that
 * answers the same line at once, and one that only loads the MCP SDK first). Claude Code (`claude -p`)
 * sends its first model request about a second after it starts its stdio servers; a server that has not
 * answered by then is invisible for that turn. Target: initialize within 300 ms p50.
 * Needs `dist/` (`npm run bench` builds it first).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, bench, describe } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const RUNS = 10;
const TARGET_MS = 300;
const dir = await mkdtemp(join(tmpdir(), 'localagents-bench-init-'));

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'bench', version: '1' },
  },
})}\n${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n${JSON.stringify({
  jsonrpc: '2.0',
  id: 2,
  method: 'tools/list',
})}\n`;

/** Answers id 1 and id 2 as soon as its stdin has the lines: the cost of starting node at all. */
const BARE_NODE = `process.stdin.once('data', () => process.stdout.write('{"id":1}\\n{"id":2}\\n'))`;
/** The same after importing the MCP SDK's server: the floor for any MCP server built on it. */
const SDK_ONLY = `Promise.all([import('@modelcontextprotocol/sdk/server/mcp.js'), import('@modelcontextprotocol/sdk/server/stdio.js')]).then(() => ${BARE_NODE})`;

interface Start {
  initializeMs: number;
  toolsMs: number;
}

/** One cold start: the time from spawn to the answer of `initialize` (id 1) and of `tools/list` (id 2). */
function coldStart(args: string[]): Promise<Start> {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: { PATH: process.env.PATH ?? '', HOME: dir, LOCALAGENTS_STATE_DIR: join(dir, 'state') },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  child.stdin.write(INITIALIZE);
  return new Promise((resolve, reject) => {
    let buffered = '';
    let initializeMs: number | undefined;
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`exited with ${code} before answering`)));
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      initializeMs ??= buffered.includes('"id":1') ? performance.now() - started : undefined;
      if (initializeMs !== undefined && buffered.includes('"id":2')) {
        const answered = { initializeMs, toolsMs: performance.now() - started };
        child.removeAllListeners('exit');
        child.once('exit', () => resolve(answered));
        child.kill();
      }
    });
  });
}

const starts: Record<string, Start[]> = { bare: [], sdk: [], serve: [] };

// Check before timing: the server's answers are the real ones.
const first = await coldStart([MAIN, 'serve']);
if (first.initializeMs <= 0) throw new Error('serve did not answer initialize');

describe(`localagents serve: cold start to the MCP handshake (${RUNS} starts each)`, () => {
  bench(
    'node answering at once (baseline)',
    async () => {
      starts.bare?.push(await coldStart(['-e', BARE_NODE]));
    },
    { iterations: RUNS, time: 0 },
  );

  bench(
    'node after importing the MCP SDK server (floor)',
    async () => {
      starts.sdk?.push(await coldStart(['--input-type=module', '-e', SDK_ONLY]));
    },
    { iterations: RUNS, time: 0 },
  );

  bench(
    'localagents serve',
    async () => {
      starts.serve?.push(await coldStart([MAIN, 'serve']));
    },
    { iterations: RUNS, time: 0 },
  );
});

afterAll(async () => {
  const p50 = (values: number[]): number =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
  const bare = p50((starts.bare ?? []).map((s) => s.initializeMs));
  const sdk = p50((starts.sdk ?? []).map((s) => s.initializeMs));
  const init = p50((starts.serve ?? []).map((s) => s.initializeMs));
  const tools = p50((starts.serve ?? []).map((s) => s.toolsMs));
  process.stdout.write(
    `\nserve cold start, p50 of ${RUNS}:\n` +
      `  node answering at once:        ${bare.toFixed(0)} ms (baseline)\n` +
      `  node + MCP SDK import:         ${sdk.toFixed(0)} ms (${(sdk / bare).toFixed(2)}× baseline)\n` +
      `  serve → initialize answered:   ${init.toFixed(0)} ms (${(init / bare).toFixed(2)}× baseline, ${(init / sdk).toFixed(2)}× the SDK floor; target ≤ ${TARGET_MS} ms: ${init <= TARGET_MS ? 'met' : 'NOT met'})\n` +
      `  serve → tools/list answered:   ${tools.toFixed(0)} ms\n`,
  );
  await rm(dir, { recursive: true, force: true });
});
