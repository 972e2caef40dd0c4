import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

type Child = ChildProcessByStdio<null, Readable, Readable>;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error('dist/cli/main.js is missing: run `npm run build` first');
});

/** `node dist/cli/main.js emulate …`, killed when the test ends; `stderr` collects as it arrives. */
function emulate(args: string[]): { child: Child; stderr: () => string } {
  const child = spawn(process.execPath, [MAIN, 'emulate', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '' },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, stderr: () => stderr };
}

async function firstLine(child: Child): Promise<string> {
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  lines.close();
  return line;
}

const TOOLS = [{ name: 'Bash', description: 'run', input_schema: { type: 'object' } }];

async function ask(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      max_tokens: 64,
      tools: TOOLS,
      messages: [{ role: 'user', content: 'go' }],
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('localagents emulate', () => {
  it('prints the base URL of a free port as its first stdout line and exits 0 on SIGTERM', async () => {
    const { child } = emulate(['--port', '0', '--n-ctx', '16384', '--parallel', '2']);
    const url = await firstLine(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toBe('http://127.0.0.1:0');
    const props = (await (await fetch(`${url}/props`)).json()) as {
      default_generation_settings: { n_ctx: number };
      total_slots: number;
    };
    expect([props.default_generation_settings.n_ctx, props.total_slots]).toEqual([8192, 2]);
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });

  it('plays a YAML --script and answers the queued --fault first', async () => {
    const dir = await tempDir({
      'script.yaml': '- text: first scripted turn\n- text: second turn\n',
    });
    const { child } = emulate([
      '--port',
      '0',
      '--script',
      join(dir, 'script.yaml'),
      '--fault',
      '{"kind":"status","status":500}',
    ]);
    const url = await firstLine(child);
    const failed = await ask(url);
    expect(failed.status).toBe(500);
    const played = await ask(url);
    expect(played.status).toBe(200);
    expect(played.body.content).toEqual([{ type: 'text', text: 'first scripted turn' }]);
  });

  it.each([
    [['--fault', '{"kind":"melt"}'], '--fault {"kind":"melt"} is not a fault at kind'],
    [['--fault', 'nope'], '--fault nope is not a fault'],
    [['--backend', 'tgi'], '--backend must be llama.cpp, vllm, ollama or lmstudio (got "tgi")'],
    [['--decode-tokens-per-s', 'fast'], '--decode-tokens-per-s must be a non-negative number'],
  ])('rejects %j with exit code 2 and the reason on stderr', async (args, reason) => {
    const { child, stderr } = emulate(['--port', '0', ...args]);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr()).toContain(`localagents emulate: ${reason}`);
  });
});
