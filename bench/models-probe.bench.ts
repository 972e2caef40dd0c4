/**
 * `localagents models --json`: three live emulators (llama.cpp ×2, vLLM) with and without one
 * black-holed endpoint (accepts, never answers), both in process and as the real command
 * (`node dist/cli/main.js models --json`, process start included). The black hole must cost at most
 * probe_timeout_s plus a small constant, never more: the elapsed times are printed next to the timeout.
 * The command needs `dist/` (`npm run bench` builds it first).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, bench, describe } from 'vitest';
import { stringify } from 'yaml';
import { modelsJson } from '../src/cli/render-models.js';
import { startEmulator } from '../src/emulator/emulator.js';
import { configPaths } from '../src/registry/config.js';
import { createRegistry, type Registry } from '../src/registry/registry.js';

const PROBE_TIMEOUT_S = 0.5;

const emulators = await Promise.all([
  startEmulator({ nCtx: 16384, parallel: 2, metrics: true }),
  startEmulator({ nCtx: 32768, metrics: true, servedNames: ['qwen3.8-27b'] }),
  startEmulator({
    backend: 'vllm',
    servedNames: ['deepseek-v4-flash'],
    loras: [{ name: 'sql', base: 'deepseek-v4-flash' }],
  }),
]);
const held = new Set<Socket>();
const hole = createServer((socket) => {
  held.add(socket);
  socket.on('error', () => undefined);
});
await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
const holeAddress = hole.address();
if (holeAddress === null || typeof holeAddress === 'string') throw new Error('no port');
const holePort = holeAddress.port;
const dir = await mkdtemp(join(tmpdir(), 'localagents-bench-'));

const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

async function configFile(name: string, withHole: boolean): Promise<string> {
  const endpoints: Record<string, { base_url: string; backend: string }> = {
    a: { base_url: emulators[0]?.url ?? '', backend: 'llama.cpp' },
    b: { base_url: emulators[1]?.url ?? '', backend: 'other' },
    c: { base_url: emulators[2]?.url ?? '', backend: 'vllm' },
  };
  if (withHole) endpoints.hole = { base_url: `http://127.0.0.1:${holePort}`, backend: 'other' };
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, stringify({ defaults: { probe_timeout_s: PROBE_TIMEOUT_S }, endpoints }));
  return file;
}

function registryFor(file: string): Registry {
  return createRegistry({ paths: configPaths({ configFlag: file, cwd: dir, env: {} }), env: {} });
}

const liveFile = await configFile('live', false);
const holeFile = await configFile('hole', true);
const live = registryFor(liveFile);
const withHole = registryFor(holeFile);

/** The real command as a user runs it; its stdout is exactly one JSON object. */
function commandOnce(file: string): Promise<{ ms: number; json: ReturnType<typeof modelsJson> }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [MAIN, 'models', '--json', '--config', file],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir } },
      (error, stdout) => {
        if (error)
          return reject(new Error(`models --json failed: ${error.message}`, { cause: error }));
        resolve({
          ms: performance.now() - started,
          json: JSON.parse(stdout) as ReturnType<typeof modelsJson>,
        });
      },
    );
  });
}

async function modelsJsonOnce(
  subject: Registry,
): Promise<{ ms: number; json: ReturnType<typeof modelsJson> }> {
  const started = performance.now();
  const json = modelsJson(await subject.snapshot());
  return { ms: performance.now() - started, json };
}

// Check before timing: the live endpoints answer the same with or without the black hole.
const check = [await modelsJsonOnce(live), await modelsJsonOnce(withHole)] as const;
for (const name of ['a', 'b', 'c']) {
  const plain = JSON.stringify({ ...check[0].json.endpoints[name], latency_ms: 0 });
  const mixed = JSON.stringify({ ...check[1].json.endpoints[name], latency_ms: 0 });
  if (plain !== mixed || check[0].json.endpoints[name]?.status !== 'ok')
    throw new Error(`endpoint ${name} differs: ${plain} vs ${mixed}`);
}
if (check[1].json.endpoints.hole?.status !== 'timeout')
  throw new Error('the black hole was not reported as a timeout');
const commandCheck = await commandOnce(holeFile);
if (
  commandCheck.json.endpoints.hole?.status !== 'timeout' ||
  commandCheck.json.endpoints.a?.up !== true
)
  throw new Error('the command does not report the same endpoints');

const timings: Record<string, number[]> = { live: [], hole: [], commandLive: [], commandHole: [] };

describe(`models --json (probe_timeout_s ${PROBE_TIMEOUT_S})`, () => {
  bench(
    'three live endpoints (baseline)',
    async () => {
      timings.live?.push((await modelsJsonOnce(live)).ms);
    },
    { iterations: 10, time: 0 },
  );

  bench(
    'three live endpoints + one black-holed',
    async () => {
      timings.hole?.push((await modelsJsonOnce(withHole)).ms);
    },
    { iterations: 10, time: 0 },
  );

  bench(
    'the command: three live endpoints (baseline)',
    async () => {
      timings.commandLive?.push((await commandOnce(liveFile)).ms);
    },
    { iterations: 6, time: 0 },
  );

  bench(
    'the command: three live endpoints + one black-holed',
    async () => {
      timings.commandHole?.push((await commandOnce(holeFile)).ms);
    },
    { iterations: 6, time: 0 },
  );
});

afterAll(async () => {
  const summary = (values: number[]): string => {
    const sorted = [...values].sort((a, b) => a - b);
    return `median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms`;
  };
  process.stdout.write(
    `\nmodels --json with probe_timeout_s = ${PROBE_TIMEOUT_S * 1000} ms:\n` +
      `  three live endpoints:                  ${summary(timings.live ?? [])}\n` +
      `  three live + one black-holed endpoint: ${summary(timings.hole ?? [])} (bound: ${PROBE_TIMEOUT_S * 1000} ms + a small constant)\n` +
      `  the command, three live:               ${summary(timings.commandLive ?? [])} (process start included)\n` +
      `  the command, + one black-holed:        ${summary(timings.commandHole ?? [])} (bound: ${PROBE_TIMEOUT_S * 1000} ms + the command's start above)\n`,
  );
  for (const socket of held) socket.destroy();
  await new Promise<void>((resolve) => hole.close(() => resolve()));
  await Promise.all(emulators.map((emu) => emu.close()));
  await rm(dir, { recursive: true, force: true });
});
