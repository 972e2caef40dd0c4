/**
 * What the benchmarks share: the environment a benchmark's `claude` gets, and for the shim benchmarks the emulator in its own process (a real backend is another process), a
 * bare `req.pipe()` relay as the floor of any extra HTTP hop and the shim, each in its own process too, and the
 * request bodies they send.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { normalizeRequest, type AnthropicRequest } from '../src/shim/normalize.js';

const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const RELAY = fileURLToPath(new URL('./relay-process.js', import.meta.url));

/** `localagents emulate --port 0 …flags` in a child process (`npm run build` first); its URL is the first stdout line. */
export async function emulatorProcess(
  flags: string[],
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [MAIN, 'emulate', '--port', '0', ...flags]);
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return { url: line.trim(), child };
}

export interface RelayProcess {
  url: string;
  /** CPU time (user + system) the relay's process has used so far, in milliseconds. */
  cpuMs(): Promise<number>;
  close(): void;
}

/**
 * A relay in its own process (`relay-process.js`): `pipe`, the floor for any extra HTTP hop on this machine, or
 * `shim`, one route of the built shim logging to `logDir` like a job's (`npm run build` first).
 */
export async function relayProcess(
  kind: 'pipe' | 'shim',
  backendUrl: string,
  logDir?: string,
): Promise<RelayProcess> {
  const child = spawn(
    process.execPath,
    [RELAY, kind, backendUrl, ...(logDir === undefined ? [] : [logDir])],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const next = async (): Promise<string> => ((await once(lines, 'line')) as [string])[0];
  const url = (await next()).trim();
  return {
    url,
    cpuMs: async () => {
      const answer = next();
      child.stdin.write('cpu\n');
      return Number(await answer);
    },
    close: () => child.stdin.end(),
  };
}

/** Claude Code's recorded first turn (test/fixtures/claude-code), with the given fields set. */
export function firstTurnBody(fields: Partial<AnthropicRequest> = {}): Buffer {
  const fixture = JSON.parse(
    readFileSync(
      new URL('../test/fixtures/claude-code/first-turn-request.json', import.meta.url),
      'utf8',
    ),
  ) as { body: AnthropicRequest };
  return Buffer.from(JSON.stringify({ ...fixture.body, ...fields }));
}

/** The first turn as the shim forwards it plus a tool round whose result is a ~1 MB file: nothing left to rewrite. */
export function megabyteBody(firstTurn: Buffer, servedId: string): Buffer {
  const folded = normalizeRequest(firstTurn, { backend: 'llama.cpp', servedId });
  if (folded.kind !== 'rewritten') throw new Error('the first turn should need a rewrite');
  const body = JSON.parse(folded.body.toString('utf8')) as AnthropicRequest;
  const line = 'export const value = "the quick brown fox jumps over the lazy dog";\n';
  body.messages.push(
    {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { file_path: '/w/big.ts' } }],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 't1',
          content: line.repeat(Math.ceil(1_000_000 / line.length)),
        },
      ],
    },
  );
  return Buffer.from(JSON.stringify(body));
}

/**
 * The environment of a benchmark's `claude`: this process's, minus every Anthropic and Claude Code setting (the
 * runner sets its own), with a private HOME so nothing of the user's Claude Code is read or written.
 */
export function claudeBenchEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('ANTHROPIC_') && !key.startsWith('CLAUDE'))
      env[key] = value;
  }
  return { ...env, HOME: home };
}
