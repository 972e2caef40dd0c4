import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { configPaths, loadRegistryConfig } from './config.js';
import { registerEndpoint, registerModel } from './sidecar.js';

const USER_YAML =
  '# my own file\nendpoints:\n  gpu:\n    base_url: http://127.0.0.1:8080 # the box under the desk\n';

async function setup() {
  const dir = await tempDir({ 'cfg/models.yaml': USER_YAML });
  return configPaths({
    configFlag: join(dir, 'cfg/models.yaml'),
    cwd: join(dir, 'project'),
    env: {},
  });
}

describe('registerEndpoint and registerModel', () => {
  it('write only models.local.yaml, and the merged config sees the entries', async () => {
    const paths = await setup();
    const endpoint = await registerEndpoint(paths, {
      name: 'vllm',
      base_url: 'http://10.0.0.2:8000/v1',
      backend: 'vllm',
      host: 'gpu-server',
      api_key_env: 'VLLM_KEY',
    });
    expect(endpoint).toEqual({
      kind: 'written',
      file: paths.sidecar,
      section: 'endpoints',
      name: 'vllm',
      replaced: false,
      // The /v1 suffix is dropped before writing.
      entry: {
        base_url: 'http://10.0.0.2:8000',
        backend: 'vllm',
        host: 'gpu-server',
        api_key_env: 'VLLM_KEY',
      },
    });
    const model = await registerModel(paths, {
      name: 'deepseek-v4-flash',
      endpoint: 'vllm',
      context: 131072,
      notes: 'big',
    });
    expect(model).toMatchObject({ kind: 'written', replaced: false });
    expect(await readFile(paths.user, 'utf8')).toBe(USER_YAML);
    const result = await loadRegistryConfig(paths);
    if (!result.ok) throw new Error('config invalid');
    expect(result.config.endpoints.map((e) => [e.name, e.base_url, e.backend])).toEqual([
      ['gpu', 'http://127.0.0.1:8080', 'other'],
      ['vllm', 'http://10.0.0.2:8000', 'vllm'],
    ]);
    expect(result.config.models).toEqual([
      { name: 'deepseek-v4-flash', notes: 'big', endpoint: 'vllm', context: 131072 },
    ]);
  });

  it('keeps readable YAML with a header and the user comments of the sidecar', async () => {
    const paths = await setup();
    await registerModel(paths, { name: 'a', notes: 'first' });
    const withComment = (await readFile(paths.sidecar, 'utf8')).replace(
      'models:',
      '# mine, keep me\nmodels:',
    );
    await writeFile(paths.sidecar, withComment);
    const again = await registerModel(paths, { name: 'a', notes: 'second', host: 'box' });
    expect(again).toMatchObject({ kind: 'written', replaced: true });
    expect(await readFile(paths.sidecar, 'utf8')).toMatchInlineSnapshot(`
      "# Written by \`localagents models add-endpoint|add-model\` and the register_* tools.
      # Entries here replace same-named entries of models.yaml; edit or delete them freely.

      # mine, keep me
      models:
        a:
          notes: second
          host: box
      "
    `);
  });

  it('rejects invalid input with the same messages as models.yaml and writes nothing', async () => {
    const paths = await setup();
    const result = await registerEndpoint(paths, {
      name: 'bad name',
      base_url: 'localhost:8080',
      api_key_env: 'sk-123',
    });
    expect(result.kind).toBe('invalid');
    expect(result.kind === 'invalid' && result.message).toMatchInlineSnapshot(`
      "register_endpoint endpoints.bad name.base_url: expected an http(s) URL such as http://127.0.0.1:8080
        fix: write the scheme, host and port of the server, without /v1
      register_endpoint endpoints.bad name.api_key_env: expected the name of an environment variable such as LLAMA_API_KEY
        fix: put the key itself in that variable (export LLAMA_API_KEY=…), never in models.yaml
      register_endpoint name: expected a name of letters, digits and . _ : / @ + - starting with a letter or digit"
    `);
    await expect(readFile(paths.sidecar, 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('refuses a model pinned to an endpoint that no layer defines', async () => {
    const paths = await setup();
    const result = await registerModel(paths, { name: 'a', endpoint: 'nowhere' });
    expect(result.kind === 'invalid' && result.message).toBe(
      'register_model endpoint: no endpoint is named "nowhere"\n  fix: use one of: gpu, or register the endpoint first',
    );
  });

  it('refuses to overwrite a sidecar that is not valid YAML', async () => {
    const paths = await setup();
    await writeFile(paths.sidecar, 'models: [\n');
    const result = await registerModel(paths, { name: 'a' });
    expect(result.kind).toBe('invalid');
    expect(result.kind === 'invalid' && result.message.replaceAll(paths.sidecar, '<sidecar>'))
      .toMatchInlineSnapshot(`
      "<sidecar>: not valid YAML (Flow sequence in block collection must be sufficiently indented and end with a ] at line 2, column 1:); not overwriting it
        fix: fix or delete the file, then register again"
    `);
    expect(await readFile(paths.sidecar, 'utf8')).toBe('models: [\n');
  });

  it('never loses or corrupts entries when many writers register at once', async () => {
    const paths = await setup();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        index % 2 === 0
          ? registerModel(paths, { name: `model-${index}`, notes: `n${index}` })
          : registerEndpoint(paths, {
              name: `ep-${index}`,
              base_url: `http://127.0.0.1:${9000 + index}`,
            }),
      ),
    );
    expect(results.every((result) => result.kind === 'written')).toBe(true);
    const written = parse(await readFile(paths.sidecar, 'utf8')) as {
      models: object;
      endpoints: object;
    };
    expect(Object.keys(written.models)).toHaveLength(10);
    expect(Object.keys(written.endpoints)).toHaveLength(10);
  });
});
