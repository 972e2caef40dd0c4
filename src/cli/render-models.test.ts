import { describe, expect, it } from 'vitest';
import { builtinDefaults } from '../registry/config-defaults.js';
import type { RegistrySnapshot } from '../registry/registry.js';
import type { EndpointProbe } from '../registry/probe.js';
import { modelsJson, renderModels } from './render-models.js';

const llama: EndpointProbe = {
  name: 'workstation',
  base_url: 'http://127.0.0.1:8080',
  backend: 'llama.cpp',
  host: 'desk',
  up: true,
  status: 'ok',
  models: ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
  context: { 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL': 65536 },
  slots: { total: 4, busy: 1, free: 3, source: 'slots' },
  metrics: true,
  latency_ms: 3,
};
const vllm: EndpointProbe = {
  name: 'gpu-server',
  base_url: 'http://10.0.0.2:8000',
  backend: 'vllm',
  up: true,
  status: 'ok',
  models: ['deepseek-v4-flash', 'sql-lora'],
  context: { 'deepseek-v4-flash': 131072, 'sql-lora': 131072 },
  vllm: { running: 2, waiting: 0, kvCacheUsage: 0.25 },
  metrics: true,
  latency_ms: 12,
};
const down: EndpointProbe = {
  name: 'laptop',
  base_url: 'http://127.0.0.1:8081',
  backend: 'llama.cpp',
  up: false,
  status: 'refused',
  error:
    'connection refused at 127.0.0.1:8081: the host is up but nothing listens on that port (not started yet, or the wrong port)',
  models: [],
  context: {},
  metrics: false,
  latency_ms: 1,
};

const snapshot: RegistrySnapshot = {
  config: {
    ok: true,
    config: {
      defaults: builtinDefaults(),
      endpoints: [],
      models: [],
      agents: [],
      files: ['/home/u/.config/localagents/models.yaml'],
    },
    warnings: [
      {
        file: '/home/u/.config/localagents/models.yaml',
        line: 7,
        path: 'endpoints.laptop.baseurl',
        message: 'unknown key, ignored',
        fix: 'did you mean base_url?',
      },
    ],
  },
  endpoints: [llama, vllm, down],
  models: [
    {
      name: 'qwen3.8-27b',
      notes: 'default coder',
      available: true,
      running: true,
      served_as: 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
      endpoint: 'workstation',
    },
    {
      name: 'glm-5',
      host: 'gpu-server',
      notes: 'needs both GPUs',
      available: false,
      running: false,
    },
    {
      name: 'deepseek',
      available: true,
      running: true,
      served_as: 'deepseek-v4-flash',
      endpoint: 'gpu-server',
      context: 65536,
      context_source: 'menu',
    },
  ],
};

describe('renderModels', () => {
  it('prints endpoints, reasons for the down ones, and the menu', () => {
    expect(renderModels(snapshot)).toMatchInlineSnapshot(`
      "Endpoints
        NAME         STATE          BACKEND    SERVED                               WINDOW  SLOTS                         METRICS
        workstation  up 3 ms        llama.cpp  unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL  65536*  1 busy, 3 free                yes
        gpu-server   up 12 ms       vllm       deepseek-v4-flash                    131072  2 running, 0 waiting, kv 25%  yes
                                               sql-lora                             131072
        laptop       down: refused  llama.cpp  -                                    -       -                             no
        laptop: connection refused at 127.0.0.1:8081: the host is up but nothing listens on that port (not started yet, or the wrong port)
        * under 128k tokens: Claude Code will compact early or hit "prompt is too long"

      Menu
        qwen3.8-27b  running on workstation as unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL                             default coder
        glm-5        not running (host gpu-server)                                                             needs both GPUs
        deepseek     running on gpu-server as deepseek-v4-flash, window 65536 (set by context in models.yaml)

      Config: /home/u/.config/localagents/models.yaml
        warning: /home/u/.config/localagents/models.yaml:7 endpoints.laptop.baseurl: unknown key, ignored
          fix: did you mean base_url?"
    `);
  });

  it('prints the config errors when models.yaml is invalid', () => {
    const broken: RegistrySnapshot = {
      config: {
        ok: false,
        issues: [
          {
            file: 'models.yaml',
            line: 14,
            path: 'endpoints.gpu.base_url',
            message: 'expected an http(s) URL such as http://127.0.0.1:8080',
          },
        ],
        warnings: [],
        files: ['models.yaml'],
      },
      endpoints: [],
      models: [],
    };
    // --json still says which layers were read.
    expect(modelsJson(broken).config.files).toEqual(['models.yaml']);
    expect(renderModels(broken)).toMatchInlineSnapshot(`
      "models.yaml is invalid:
        models.yaml:14 endpoints.gpu.base_url: expected an http(s) URL such as http://127.0.0.1:8080"
    `);
  });
});

describe('renderModels on a narrow screen', () => {
  it('fits both tables to 80 columns, the load and notes cut first, and shows the config under ~', () => {
    const text = renderModels(snapshot, { width: 80, paths: { cwd: '/srv', home: '/home/u' } });
    const lines = text.split('\n');
    const tables = [...lines.slice(1, 6), ...lines.slice(10, 13)];
    expect(tables).toMatchInlineSnapshot(`
      [
        "  NAME         STATE     BACKEND    SERVED             WINDOW  SLOTS     METRICS",
        "  workstation  up 3 ms   llama.cpp  unsloth/…-Q4_K_XL  65536*  1 busy,…  yes",
        "  gpu-server   up 12 ms  vllm       deepseek-v4-flash  131072  2 runni…  yes",
        "                                    sql-lora           131072",
        "  laptop       down: r…  llama.cpp  -                  -       -         no",
        "  qwen3.8-27b  running on workstation as unsloth/Qwen3.8-27B-GGUF:U…  default c…",
        "  glm-5        not running (host gpu-server)                          needs bot…",
        "  deepseek     running on gpu-server as deepseek-v4-flash, window 6…",
      ]
    `);
    for (const line of tables) expect(line.length).toBeLessThanOrEqual(80);
    expect(text).toContain('Config: ~/.config/localagents/models.yaml');
    // --wide cuts nothing.
    expect(renderModels(snapshot, { width: 80, wide: true })).toContain(
      '2 running, 0 waiting, kv 25%',
    );
  });
});

describe('modelsJson', () => {
  it('keys endpoints and models by name with the documented fields', () => {
    const json = modelsJson(snapshot);
    expect(json.config.files).toEqual(['/home/u/.config/localagents/models.yaml']);
    expect(json.config.errors).toEqual([]);
    expect(json.endpoints.workstation).toEqual({
      base_url: 'http://127.0.0.1:8080',
      backend: 'llama.cpp',
      host: 'desk',
      up: true,
      status: 'ok',
      models: ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
      context: { 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL': 65536 },
      slots: { total: 4, busy: 1, free: 3, source: 'slots' },
      metrics: true,
      latency_ms: 3,
    });
    expect(json.endpoints.laptop).toEqual({
      base_url: 'http://127.0.0.1:8081',
      backend: 'llama.cpp',
      host: null,
      up: false,
      status: 'refused',
      error: down.error,
      models: [],
      context: {},
      metrics: false,
      latency_ms: 1,
    });
    expect(json.models['glm-5']).toEqual({
      notes: 'needs both GPUs',
      host: 'gpu-server',
      available: false,
      running: false,
    });
    expect(json.models['qwen3.8-27b']).toEqual({
      notes: 'default coder',
      host: null,
      available: true,
      running: true,
      served_as: 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
      endpoint: 'workstation',
    });
  });

  it('carries the window a job would get, and where it comes from', () => {
    expect(modelsJson(snapshot).models.deepseek).toEqual({
      notes: null,
      host: null,
      available: true,
      running: true,
      served_as: 'deepseek-v4-flash',
      endpoint: 'gpu-server',
      context: 65536,
      context_source: 'menu',
    });
  });

  it('never carries the API key', () => {
    const keyed = { ...llama };
    Object.defineProperty(keyed, 'apiKey', { value: 'sk-secret', enumerable: true });
    expect(JSON.stringify(modelsJson({ ...snapshot, endpoints: [keyed] }))).not.toContain(
      'sk-secret',
    );
  });
});
