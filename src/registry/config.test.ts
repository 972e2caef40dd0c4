import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { formatConfigIssue } from './config-messages.js';
import { parseLayer } from './config-parse.js';
import { mergeLayers } from './config-rules.js';
import { KNOWN_KEYS } from './config-schema.js';
import { createRegistry } from './registry.js';
import {
  configPaths,
  createConfigCache,
  EXAMPLE_CONFIG_PATH,
  loadRegistryConfig,
  MAX_CONFIG_BYTES,
} from './config.js';

const ENDPOINT = 'endpoints:\n  gpu:\n    base_url: http://127.0.0.1:8080\n';

/** Parse one file named models.yaml and render its errors and warnings the way the CLI prints them. */
function render(yaml: string): string {
  const parsed = parseLayer(yaml, 'models.yaml');
  const merged =
    parsed.errors.length === 0
      ? mergeLayers([parsed], '/pkg/models.example.yaml', '/home/u/.config/localagents/models.yaml')
      : undefined;
  const errors = [...parsed.errors, ...(merged?.errors ?? [])];
  const warnings = [...parsed.warnings, ...(merged?.warnings ?? [])];
  return [
    ...errors.map(formatConfigIssue),
    ...warnings.map((w) => `warning: ${formatConfigIssue(w)}`),
  ].join('\n');
}

describe('parseLayer', () => {
  it('renders every field error with file, line, field and fix', () => {
    const cases = [
      `${ENDPOINT}  bad:\n    base_url: localhost:8080\n`,
      'endpoints:\n  gpu:\n    backend: vllm\n',
      'endpoints:\n  gpu: http://127.0.0.1:8080\n',
      `endpoints:\n  gpu:\n    base_url: http://h:1\n    backend: [llama.cpp]\n`,
      `endpoints:\n  gpu:\n    base_url: http://h:1\n    api_key_env: sk-secret-value\n`,
      `endpoints:\n  gpu:\n    base_url: http://h:1\n    env: { "BAD NAME": x }\n`,
      `endpoints:\n  "bad name":\n    base_url: http://h:1\n`,
      `endpoints:\n  gpu:\n    base_url: http://h:1\n    host: [a]\n    notes: 3\n`,
      `${ENDPOINT}defaults:\n  permission_mode: yolo\n  max_turns: 0\n  timeout_s: -1\n  probe_timeout_s: 100\n  dump_requests: maybe\n  keepalive_s: -2\n`,
      `${ENDPOINT}defaults:\n  allowed_tools: Read\n  disallowed_tools: [1]\n  setting_sources: [global]\n  system_prompt_append: [x]\n  model: ""\n`,
      `${ENDPOINT}models:\n  qwen:\n    context: 12.5\n  tiny:\n    context: 100\n  other:\n    served_name: ""\n    bring_up: [x]\n`,
      `${ENDPOINT}models:\n  - qwen\n`,
      `defaults: [1]\nendpoints: [2]\n`,
      `endpoints:\n  gpu:\n    base_url: http://h:1\n    env: [x]\n`,
      `endpoints:\n  gpu:\n    base_url: http://h:1\n    env: { A: [1] }\n`,
      `${ENDPOINT}models:\n  "bad name!":\n    notes: x\n  q:\n    - x\n`,
      `${ENDPOINT}models:\n  q:\n    notes: [x]\n    host: 3\n    endpoint: [gpu]\n`,
      `${ENDPOINT}models: [`,
      `${ENDPOINT}${ENDPOINT}`,
      '- just a list\n',
    ];
    expect(cases.map((yaml) => render(yaml)).join('\n---\n')).toMatchInlineSnapshot(`
      "models.yaml:5 endpoints.bad.base_url: expected an http(s) URL such as http://127.0.0.1:8080
        fix: write the scheme, host and port of the server, without /v1
      ---
      models.yaml:2 endpoints.gpu.base_url: missing; expected an http(s) URL such as http://127.0.0.1:8080
        fix: write the scheme, host and port of the server, without /v1
      ---
      models.yaml:2 endpoints.gpu: expected a mapping with at least base_url, such as {base_url: http://127.0.0.1:8080}
      ---
      models.yaml:4 endpoints.gpu.backend: expected one of llama.cpp, vllm, ollama, lmstudio, other
        fix: use other to have the backend detected
      ---
      models.yaml:4 endpoints.gpu.api_key_env: expected the name of an environment variable such as LLAMA_API_KEY
        fix: put the key itself in that variable (export LLAMA_API_KEY=…), never in models.yaml
      ---
      models.yaml:4 endpoints.gpu.env.BAD NAME: not a valid name; expected an environment variable name such as CUDA_VISIBLE_DEVICES
      ---
      models.yaml:2 endpoints.bad name: not a valid name; expected a name of letters, digits and . _ : / @ + - starting with a letter or digit
      ---
      models.yaml:4 endpoints.gpu.host: expected text naming the machine, such as workstation
      models.yaml:5 endpoints.gpu.notes: expected text
      ---
      models.yaml:5 defaults.permission_mode: expected one of default, acceptEdits, bypassPermissions, plan, dontAsk
        fix: acceptEdits lets the delegate edit files without asking
      models.yaml:6 defaults.max_turns: expected a whole number of at least 1, such as 60
      models.yaml:7 defaults.timeout_s: expected a number of seconds above 0, such as 1800
      models.yaml:8 defaults.probe_timeout_s: expected a number of seconds from 0.05 to 60, such as 2.5
      models.yaml:9 defaults.dump_requests: expected true or false
      models.yaml:10 defaults.keepalive_s: expected a number of seconds of at least 0, such as 15
      ---
      models.yaml:5 defaults.allowed_tools: expected a list of tool names such as [Read, Edit, Write, Bash]
      models.yaml:6 defaults.disallowed_tools[0]: expected a list of tool names such as [Agent, Task]
      models.yaml:7 defaults.setting_sources[0]: expected a list drawn from user, project, local
      models.yaml:8 defaults.system_prompt_append: expected text (use \`|\` for several lines)
      models.yaml:9 defaults.model: expected a model name, glob or part of a served id, such as qwen3.8-27b
      ---
      models.yaml:6 models.qwen.context: expected a whole number of tokens of at least 256, such as 65536
        fix: leave it out to use the window the server reports
      models.yaml:8 models.tiny.context: expected a whole number of tokens of at least 256, such as 65536
        fix: leave it out to use the window the server reports
      models.yaml:10 models.other.served_name: expected a served id or a glob such as "unsloth/Qwen3*"
      models.yaml:11 models.other.bring_up: expected text telling the user how to start the model
      ---
      models.yaml:4 models: expected a mapping of model names to settings
      ---
      models.yaml:1 defaults: expected a mapping of settings such as max_turns: 60
      models.yaml:2 endpoints: expected a mapping of endpoint names to settings
      ---
      models.yaml:4 endpoints.gpu.env: expected a mapping of environment variable names to values
      ---
      models.yaml:4 endpoints.gpu.env.A: expected a text value
      ---
      models.yaml:5 models.bad name!: not a valid name; expected a name of letters, digits and . _ : / @ + - starting with a letter or digit
      models.yaml:7 models.q: expected a mapping such as {notes: …, host: …}, or just the notes as text
      ---
      models.yaml:6 models.q.notes: expected text
      models.yaml:7 models.q.host: expected text naming the machine, such as gpu-server
      models.yaml:8 models.q.endpoint: expected the name of an endpoint defined under endpoints
      ---
      models.yaml:4: not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]
        fix: check the indentation and quoting on that line
      ---
      models.yaml:4: not valid YAML: Map keys must be unique
        fix: check the indentation and quoting on that line
      ---
      models.yaml:1: expected a mapping with defaults, endpoints and models"
    `);
  });

  it('renders rule errors and warnings after merging', () => {
    const cases = [
      `${ENDPOINT}models:\n  qwen:\n    endpoint: cpu\n`,
      `models:\n  qwen:\n    endpoint: cpu\n`,
      `endpoints:\n  gpu:\n    base_url: http://127.0.0.1:8080/v1/\n`,
      `${ENDPOINT}  gpu2:\n    base_url: http://127.0.0.1:8080\n`,
      `${ENDPOINT}    baseurl: x\n  cpu:\n    base_url: http://h:2\n    colour: red\nmodel:\n  x: 1\n`,
      'defaults:\n  max_turns: 5\n',
    ];
    expect(cases.map((yaml) => render(yaml)).join('\n---\n')).toMatchInlineSnapshot(`
      "warning: models.yaml:6 models.qwen.endpoint: no endpoint is named "cpu"; every endpoint is searched
        fix: use one of: gpu
      ---
      models.yaml endpoints: no endpoint is defined in any layer
        fix: copy the example and point base_url at your llama-server or vLLM: mkdir -p "/home/u/.config/localagents" && cp "/pkg/models.example.yaml" "/home/u/.config/localagents/models.yaml"
      warning: models.yaml:3 models.qwen.endpoint: no endpoint is named "cpu"; every endpoint is searched
        fix: define it under endpoints first
      ---
      warning: models.yaml:3 endpoints.gpu.base_url: the /v1 suffix is ignored; using http://127.0.0.1:8080
        fix: write the server root, e.g. http://127.0.0.1:8080
      ---
      warning: models.yaml:5 endpoints.gpu2.base_url: same base_url as endpoint gpu
      ---
      warning: models.yaml:4 endpoints.gpu.baseurl: unknown key, ignored
        fix: did you mean base_url?
      warning: models.yaml:7 endpoints.cpu.colour: unknown key, ignored
        fix: known keys here: base_url, backend, host, notes, api_key_env, max_concurrent, env
      warning: models.yaml:8 model: unknown key, ignored
        fix: did you mean models?
      ---
      models.yaml endpoints: no endpoint is defined in any layer
        fix: copy the example and point base_url at your llama-server or vLLM: mkdir -p "/home/u/.config/localagents" && cp "/pkg/models.example.yaml" "/home/u/.config/localagents/models.yaml""
    `);
  });

  it('accepts every backend spelling the Python original did, and only warns about one it does not know', () => {
    const yaml = [
      'endpoints:',
      ...[
        ['a', 'llama.cpp'],
        ['b', 'llamacpp'],
        ['c', 'llama-cpp'],
        ['d', 'vLLM'],
        ['e', 'ollama'],
        ['f', 'tgi'],
        ['g', 'other'],
        ['h', 'LM Studio'],
      ].map(
        ([name, backend]) => `  ${name}:\n    base_url: http://${name}:1\n    backend: ${backend}`,
      ),
      '',
    ].join('\n');
    const parsed = parseLayer(yaml, 'models.yaml');
    expect(parsed.errors).toEqual([]);
    const merged = mergeLayers([parsed], '/pkg/models.example.yaml', '/u/models.yaml');
    expect(merged.config.endpoints.map((endpoint) => endpoint.backend)).toEqual([
      'llama.cpp',
      'llama.cpp',
      'llama.cpp',
      'vllm',
      'ollama',
      'other',
      'other',
      'lmstudio',
    ]);
    expect(render(yaml)).toMatchInlineSnapshot(`
      "warning: models.yaml:19 endpoints.f.backend: unknown backend "tgi"; probed as other (its kind is detected)
        fix: write one of llama.cpp, vllm, ollama, lmstudio, other"
    `);
  });

  it('says to use api_key_env for a key written into the file, without repeating it', () => {
    const text = render(`${ENDPOINT}    api_key: sk-do-not-echo\n`);
    expect(text).toContain(
      'endpoints.gpu.api_key: a key written into models.yaml is ignored (and should not be in the file at all)',
    );
    expect(text).toContain(
      'fix: export it in an environment variable and name that variable here: api_key_env: LLAMA_API_KEY',
    );
    expect(text).not.toContain('sk-do-not-echo');
  });

  it('accepts a menu entry written as null or as its notes', () => {
    const parsed = parseLayer(`${ENDPOINT}models:\n  a:\n  b: fast coder\n`, 'models.yaml');
    expect(parsed.errors).toEqual([]);
    expect(parsed.layer?.models).toEqual({ a: {}, b: { notes: 'fast coder' } });
  });

  it('turns numeric and boolean env values into strings', () => {
    const parsed = parseLayer(
      'endpoints:\n  gpu:\n    base_url: http://h:1\n    env: { PORT: 8080, DEBUG: true }\n',
      'models.yaml',
    );
    expect(parsed.layer?.endpoints?.gpu?.env).toEqual({ PORT: '8080', DEBUG: 'true' });
  });
});

describe('LOCALAGENTS_DUMP_REQUESTS (the Python original’s switch)', () => {
  it('turns dump_requests on in the defaults a job reads, and only when set', async () => {
    const dir = await tempDir({ 'models.yaml': ENDPOINT });
    const paths = configPaths({ configFlag: join(dir, 'models.yaml'), cwd: dir, env: {} });
    const off = createRegistry({ paths, env: {} });
    const on = createRegistry({ paths, env: { LOCALAGENTS_DUMP_REQUESTS: '1' } });
    expect((await off.defaults()).dump_requests).toBe(false);
    expect((await on.defaults()).dump_requests).toBe(true);
  });
});

/** Loads DIR/user/models.yaml (named with --config) under DIR/project (its ./models.yaml); fails on errors. */
async function loadUserAndProject(dir: string) {
  const paths = configPaths({
    configFlag: join(dir, 'user/models.yaml'),
    cwd: join(dir, 'project'),
    env: {},
  });
  const result = await loadRegistryConfig(paths);
  if (!result.ok) throw new Error(result.issues.map(formatConfigIssue).join('\n'));
  return { paths, config: result.config, warnings: result.warnings };
}

describe('loadRegistryConfig', () => {
  it('merges layers: endpoints and models entry by entry, defaults key by key', async () => {
    const dir = await tempDir({
      'user/models.yaml':
        'defaults:\n  max_turns: 10\n  timeout_s: 99\nendpoints:\n  a:\n    base_url: http://h:1\n    host: one\n  b:\n    base_url: http://h:2\nmodels:\n  m1:\n    notes: user\n',
      'project/models.yaml':
        'defaults:\n  max_turns: 20\nendpoints:\n  b:\n    base_url: http://h:3\n    backend: vllm\n',
      'user/models.local.yaml':
        'endpoints:\n  c:\n    base_url: http://h:4\nmodels:\n  m1:\n    host: side\n',
    });
    const { paths, config } = await loadUserAndProject(dir);
    expect(config.defaults.max_turns).toBe(20);
    expect(config.defaults.timeout_s).toBe(99);
    expect(config.defaults.probe_timeout_s).toBe(2.5);
    expect(config.endpoints.map((e) => [e.name, e.base_url, e.backend])).toEqual([
      ['a', 'http://h:1', 'other'],
      ['b', 'http://h:3', 'vllm'],
      ['c', 'http://h:4', 'other'],
    ]);
    expect(config.models).toEqual([{ name: 'm1', host: 'side' }]);
    expect(config.files).toEqual([paths.user, paths.project, paths.sidecar]);
  });

  it.each([
    ['an ML model list', 'models:\n  - name: bert-base\n    layers: 12\n'],
    ['another tool’s mapping', 'models:\n  bert:\n    layers: 12\n    heads: 8\n'],
    ['no section of ours', 'model_list:\n  - gpt2\n'],
    ['a list at the top', '- one\n- two\n'],
    ['broken YAML', 'models: [\n'],
  ])(
    'leaves out a project models.yaml that is not ours (%s), with a warning, and keeps the user file',
    async (_what, project) => {
      const dir = await tempDir({
        'user/models.yaml': `${ENDPOINT}models:\n  m1:\n    notes: user\n`,
        'project/models.yaml': project,
      });
      const { paths, config, warnings } = await loadUserAndProject(dir);
      expect(config.files).toEqual([paths.user]);
      expect(config.models).toEqual([{ name: 'm1', notes: 'user' }]);
      expect(warnings.map(formatConfigIssue)).toEqual([
        expect.stringMatching(
          new RegExp(`^${paths.project ?? ''}: not a localagents models.yaml \\(.+\\); ignored`),
        ),
      ]);
    },
  );

  it('still refuses a broken user file: it is named as ours', async () => {
    const dir = await tempDir({ 'user/models.yaml': 'models:\n  - name: bert\n' });
    const result = await loadRegistryConfig(
      configPaths({ configFlag: join(dir, 'user/models.yaml'), cwd: dir, env: {} }),
    );
    expect(result.ok).toBe(false);
  });

  it('accepts a missing user file when another layer defines endpoints', async () => {
    const dir = await tempDir({ 'project/models.yaml': ENDPOINT });
    const paths = configPaths({
      configFlag: join(dir, 'nowhere/models.yaml'),
      cwd: join(dir, 'project'),
      env: {},
    });
    const result = await loadRegistryConfig(paths);
    expect(result.ok).toBe(true);
    // The file was named with --config, so its absence is a warning (likely a typo), not silence.
    const text = result.warnings.map(formatConfigIssue).join('\n').replaceAll(dir, '<tmp>');
    expect(text.replace(/"[^"]*models\.example\.yaml"/, '"<pkg>/models.example.yaml"'))
      .toMatchInlineSnapshot(`
        "<tmp>/nowhere/models.yaml: not found; using the other layers only
          fix: check the path, or start from the example: cp "<pkg>/models.example.yaml" "<tmp>/nowhere/models.yaml""
      `);
  });

  it('says nothing of a missing default user file when another layer defines endpoints', async () => {
    const dir = await tempDir({ 'project/models.yaml': ENDPOINT });
    const paths = configPaths({ cwd: join(dir, 'project'), env: { XDG_CONFIG_HOME: dir } });
    const result = await loadRegistryConfig(paths);
    expect(result.ok && result.warnings).toEqual([]);
  });

  it('bounds what a config can cost: an alias bomb, an oversized file and a device are config errors', async () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      ...Array.from({ length: 8 }, (_, level) => {
        const name = String.fromCharCode(98 + level);
        const previous = String.fromCharCode(97 + level);
        return `${name}: &${name} [${Array(9).fill(`*${previous}`).join(',')}]`;
      }),
      'endpoints:\n  gpu:\n    base_url: http://127.0.0.1:8080',
      '',
    ].join('\n');
    const dir = await tempDir({
      'bomb.yaml': bomb,
      'huge.yaml': `${ENDPOINT}# ${'x'.repeat(MAX_CONFIG_BYTES)}\n`,
    });
    const outcomes: Array<[string, RegExp]> = [
      ['bomb.yaml', /too many YAML aliases/],
      ['huge.yaml', /over the 1048576-byte limit/],
      // A device never ends: it is refused before a byte is read.
      ['/dev/zero', /not a regular file/],
    ];
    for (const [name, message] of outcomes) {
      const result = await loadRegistryConfig(
        configPaths({
          configFlag: name.startsWith('/') ? name : join(dir, name),
          cwd: join(dir, 'elsewhere'),
          env: {},
        }),
      );
      expect(result.ok, name).toBe(false);
      if (result.ok) continue;
      expect(result.issues.map(formatConfigIssue).join('\n'), name).toMatch(message);
    }
  });

  it('reports a layer it cannot read (a directory where the file should be)', async () => {
    const dir = await tempDir({ 'models.yaml/inside': '' });
    const result = await loadRegistryConfig(
      configPaths({ configFlag: join(dir, 'models.yaml'), cwd: join(dir, 'x'), env: {} }),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map(formatConfigIssue).join('\n').replaceAll(dir, '<tmp>'))
      .toMatchInlineSnapshot(`
        "<tmp>/models.yaml: cannot read the file (EISDIR)
          fix: check that it is a readable file, not a directory"
      `);
  });

  it('names the example to copy when nothing defines an endpoint', async () => {
    const dir = await tempDir();
    const paths = configPaths({ cwd: dir, env: { XDG_CONFIG_HOME: join(dir, 'cfg') } });
    const result = await loadRegistryConfig(paths);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const text = result.issues.map(formatConfigIssue).join('\n').replaceAll(dir, '<tmp>');
    expect(text.replace(/"[^"]*models\.example\.yaml"/, '"<pkg>/models.example.yaml"'))
      .toMatchInlineSnapshot(`
      "<tmp>/cfg/localagents/models.yaml endpoints: no models.yaml found (nothing defines an endpoint)
        fix: copy the example and point base_url at your llama-server or vLLM: mkdir -p "<tmp>/cfg/localagents" && cp "<pkg>/models.example.yaml" "<tmp>/cfg/localagents/models.yaml""
    `);
  });

  it('re-reads a file when it changes and reuses the parse while it does not', async () => {
    const dir = await tempDir({ 'models.yaml': ENDPOINT });
    const paths = configPaths({
      configFlag: join(dir, 'models.yaml'),
      cwd: join(dir, 'elsewhere'),
      env: {},
    });
    const cache = createConfigCache();
    const first = await loadRegistryConfig(paths, cache);
    const parsedBefore = cache.get(paths.user)?.parsed;
    const second = await loadRegistryConfig(paths, cache);
    expect(cache.get(paths.user)?.parsed).toBe(parsedBefore);
    expect(first.ok && second.ok).toBe(true);
    await writeFile(paths.user, `${ENDPOINT}    backend: vllm   # changed size\n`);
    const third = await loadRegistryConfig(paths, cache);
    expect(third.ok && third.config.endpoints[0]?.backend).toBe('vllm');
  });

  it('reports a broken file instead of throwing', async () => {
    const dir = await tempDir({ 'models.yaml': 'endpoints:\n  gpu:\n    base_url: nope\n' });
    const result = await loadRegistryConfig(
      configPaths({ configFlag: join(dir, 'models.yaml'), cwd: dir, env: {} }),
    );
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues[0]).toMatchObject({
      line: 3,
      path: 'endpoints.gpu.base_url',
    });
  });
});

describe('configPaths', () => {
  it.each([
    [
      { configFlag: '/x/flag.yaml', env: { LOCALAGENTS_CONFIG: '/y/env.yaml' } },
      '/x/flag.yaml',
      '/x/models.local.yaml',
      true,
    ],
    [
      { env: { LOCALAGENTS_CONFIG: '/y/env.yaml', XDG_CONFIG_HOME: '/z' } },
      '/y/env.yaml',
      '/y/models.local.yaml',
      true,
    ],
    [
      { env: { XDG_CONFIG_HOME: '/z' } },
      '/z/localagents/models.yaml',
      '/z/localagents/models.local.yaml',
      false,
    ],
  ])('resolves %o to the user file and its sidecar', (options, user, sidecar, named) => {
    const paths = configPaths({ cwd: '/work/project', ...options });
    expect(paths).toEqual({
      user,
      project: '/work/project/models.yaml',
      sidecar,
      ...(named ? { userNamed: true } : {}),
    });
  });
});

describe('models.example.yaml', () => {
  it('parses without errors or warnings', async () => {
    const parsed = parseLayer(await readFile(EXAMPLE_CONFIG_PATH, 'utf8'), 'models.example.yaml');
    expect(parsed.errors).toEqual([]);
    expect(parsed.warnings).toEqual([]);
  });

  it('mentions every key models.yaml accepts', async () => {
    const text = await readFile(EXAMPLE_CONFIG_PATH, 'utf8');
    const keys = [
      ...KNOWN_KEYS.top,
      ...KNOWN_KEYS.defaults,
      ...KNOWN_KEYS.endpoint,
      ...KNOWN_KEYS.model,
    ];
    expect(keys.filter((key) => !new RegExp(`^\\s*#?\\s*${key}:`, 'm').test(text))).toEqual([]);
  });
});
