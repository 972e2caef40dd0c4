import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configFile, emulator, refusedPort } from './registry-support.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const run = promisify(execFile);

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node dist/cli/main.js …` as a user would run it; a non-zero exit is a result, not a throw. */
async function localagents(args: string[], env: Record<string, string> = {}): Promise<Result> {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

beforeAll(() => {
  if (!existsSync(fileURLToPath(new URL('../../dist/cli/models.js', import.meta.url)))) {
    throw new Error(
      'dist/cli/models.js is missing: run `npx tsc -p tsconfig.build.json` (npm test does) first',
    );
  }
});

describe('localagents models', () => {
  it('prints exactly one JSON object with endpoints, windows, slots and the menu', async () => {
    const llama = await emulator({
      nCtx: 65536,
      parallel: 2,
      metrics: true,
      apiKey: 'sk-cli-secret',
      servedNames: ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
    });
    const vllm = await emulator({
      backend: 'vllm',
      nCtx: 131072,
      servedNames: ['deepseek-v4-flash'],
      loras: [{ name: 'sql-lora', base: 'deepseek-v4-flash' }],
    });
    const paths = await configFile({
      defaults: { probe_timeout_s: 1 },
      endpoints: {
        workstation: {
          base_url: llama.url,
          backend: 'llama.cpp',
          host: 'desk',
          api_key_env: 'LLAMA_KEY',
        },
        gpu: { base_url: vllm.url, backend: 'other' },
        laptop: { base_url: await refusedPort(), backend: 'llama.cpp' },
      },
      models: {
        'qwen3.8-27b': { notes: 'default coder' },
        'glm-5': { host: 'gpu-server', notes: 'needs both GPUs' },
      },
    });
    const result = await localagents(['models', '--json', '--config', paths.user], {
      LLAMA_KEY: 'sk-cli-secret',
      LOCALAGENTS_LOG: 'debug',
    });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain('sk-cli-secret');
    expect(result.stderr).not.toContain('sk-cli-secret');
    const json = JSON.parse(result.stdout) as {
      config: { files: string[]; errors: unknown[] };
      endpoints: Record<string, Record<string, unknown>>;
      models: Record<string, Record<string, unknown>>;
    };
    expect(json.config).toMatchObject({ files: [paths.user], errors: [] });
    expect(Object.keys(json.endpoints)).toEqual(['workstation', 'gpu', 'laptop']);
    expect(json.endpoints.workstation).toMatchObject({
      base_url: llama.url,
      backend: 'llama.cpp',
      host: 'desk',
      up: true,
      status: 'ok',
      models: ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
      context: { 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL': 32768 },
      slots: { total: 2, busy: 0, free: 2 },
      metrics: true,
    });
    expect(json.endpoints.gpu).toMatchObject({
      backend: 'vllm',
      up: true,
      models: ['deepseek-v4-flash', 'sql-lora'],
      context: { 'deepseek-v4-flash': 131072, 'sql-lora': 131072 },
      vllm: { running: 0, waiting: 0 },
      metrics: true,
    });
    expect(json.endpoints.laptop).toMatchObject({
      host: null,
      up: false,
      status: 'refused',
      models: [],
      metrics: false,
    });
    expect(Object.keys(json.endpoints.laptop ?? {})).toEqual([
      'base_url',
      'backend',
      'host',
      'up',
      'status',
      'error',
      'models',
      'context',
      'metrics',
      'latency_ms',
    ]);
    expect(String(json.endpoints.laptop?.error)).toContain('connection refused');
    expect(typeof json.endpoints.laptop?.latency_ms).toBe('number');
    expect(json.models['qwen3.8-27b']).toEqual({
      notes: 'default coder',
      host: null,
      available: true,
      running: true,
      endpoint: 'workstation',
      served_model: 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
      served_as: 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
      context: 32768,
      context_source: 'probe',
    });
    expect(json.models['glm-5']).toEqual({
      notes: 'needs both GPUs',
      host: 'gpu-server',
      available: false,
      running: false,
    });
  });

  it('prints a readable table for people', async () => {
    const vllm = await emulator({ backend: 'vllm', servedNames: ['coder'] });
    const paths = await configFile({
      endpoints: { gpu: { base_url: vllm.url, backend: 'vllm' } },
      models: { coder: { notes: 'fast' } },
    });
    const result = await localagents(['models', '--config', paths.user]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^ {2}gpu +up \d+ ms +vllm +coder +32768\* +0 running, 0 waiting, kv 0% +yes$/m,
    );
    expect(result.stdout).toMatch(/^ {2}coder +running on gpu as coder +fast$/m);
  });

  it('exits 1 with the file, line, field and fix when models.yaml is invalid', async () => {
    const paths = await configFile({ endpoints: { gpu: { base_url: 'localhost:8080' } } });
    const human = await localagents(['models', '--config', paths.user]);
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain(
      `${paths.user}:3 endpoints.gpu.base_url: expected an http(s) URL such as http://127.0.0.1:8080`,
    );
    const json = await localagents(['models', '--json', '--config', paths.user]);
    expect(json.code).toBe(1);
    const parsed = JSON.parse(json.stdout) as {
      config: { files: string[]; errors: { path: string; line: number }[] };
    };
    expect(parsed.config.errors[0]).toMatchObject({ path: 'endpoints.gpu.base_url', line: 3 });
    expect(parsed.config.files).toEqual([paths.user]);
  });

  it('adds an endpoint and a model to models.local.yaml only', async () => {
    const vllm = await emulator({ backend: 'vllm', servedNames: ['late-model'] });
    const paths = await configFile({ endpoints: { first: { base_url: 'http://127.0.0.1:9' } } });
    const before = await readFile(paths.user, 'utf8');
    const endpoint = await localagents([
      'models',
      'add-endpoint',
      'gpu',
      '--base-url',
      vllm.url,
      '--backend',
      'vllm',
      '--host',
      'box',
      '--env',
      'CUDA_VISIBLE_DEVICES=0',
      '--env',
      'EXTRA=a=b',
      '--config',
      paths.user,
    ]);
    expect(endpoint).toMatchObject({
      code: 0,
      stdout: `added endpoints.gpu in ${join(paths.user, '..', 'models.local.yaml')}\n`,
    });
    const model = await localagents([
      'models',
      'add-model',
      'late',
      '--endpoint',
      'gpu',
      '--context',
      '65536',
      '--notes',
      'added later',
      '--config',
      paths.user,
    ]);
    expect(model.code).toBe(0);
    const bad = await localagents([
      'models',
      'add-model',
      'x',
      '--endpoint',
      'nowhere',
      '--config',
      paths.user,
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('no endpoint is named "nowhere"');
    expect(await readFile(paths.user, 'utf8')).toBe(before);
    const json = JSON.parse(
      (await localagents(['models', '--json', '--config', paths.user])).stdout,
    ) as {
      config: { files: string[] };
      models: Record<string, { running: boolean; served_as?: string }>;
    };
    expect(json.config.files).toEqual([paths.user, paths.sidecar]);
    expect(json.models.late).toMatchObject({ running: true, served_as: 'late-model' });
    const sidecar = parse(await readFile(paths.sidecar, 'utf8')) as {
      endpoints: Record<string, { env?: Record<string, string> }>;
    };
    expect(sidecar.endpoints.gpu?.env).toEqual({ CUDA_VISIBLE_DEVICES: '0', EXTRA: 'a=b' });
    const badEnv = await localagents([
      'models',
      'add-endpoint',
      'x',
      '--base-url',
      vllm.url,
      '--env',
      'NOEQUALS',
      '--config',
      paths.user,
    ]);
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain('--env takes NAME=VALUE (got "NOEQUALS")');
  });

  it('keeps every entry when several processes add models to the sidecar at once', async () => {
    const paths = await configFile({ endpoints: { first: { base_url: 'http://127.0.0.1:9' } } });
    const names = Array.from({ length: 6 }, (_, index) => `model-${index}`);
    const results = await Promise.all(
      names.map((name) =>
        localagents(['models', 'add-model', name, '--notes', name, '--config', paths.user]),
      ),
    );
    expect(results.map((result) => result.code)).toEqual(names.map(() => 0));
    const sidecar = parse(await readFile(paths.sidecar, 'utf8')) as {
      models: Record<string, { notes: string }>;
    };
    expect(Object.keys(sidecar.models).sort()).toEqual(names);
    expect(
      Object.values(sidecar.models)
        .map((entry) => entry.notes)
        .sort(),
    ).toEqual(names);
    expect(await readdir(join(paths.sidecar, '..'))).toEqual(['models.local.yaml', 'models.yaml']);
  });
});
