import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { resetEmulatorAfterEach } from '../support/emulator-reset.js';
import { callTool, callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
resetEmulatorAfterEach(() => emulator);
afterAll(() => emulator.close());

const MENU = `models:
  deepseek-v4-flash:
    host: gpu-server
    notes: vllm needs --enable-auto-tool-choice
    bring_up: ssh gpu-server ./start-deepseek.sh
`;

function errorText(result: Awaited<ReturnType<typeof callToolRaw>>): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
}

describe('MCP answers', () => {
  it('answers a model that is not running with the menu notes and no job, as a normal answer', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url, MENU));
    const result = await callToolRaw(client, 'run_agent', {
      task: 'Refactor x.',
      model: 'deepseek-v4-flash',
    });
    expect(result.isError).toBeFalsy();
    const answer = result.structuredContent ?? {};
    expect(answer.status).toBe('model_unavailable');
    expect(answer.model).toBe('deepseek-v4-flash');
    expect(answer.host).toBe('gpu-server');
    expect(answer.notes).toBe('vllm needs --enable-auto-tool-choice');
    expect(String(answer.next)).toMatch(
      /^Nothing was started\. Ask the user to bring up deepseek-v4-flash on gpu-server/,
    );
    expect(String(answer.next)).toContain('(notes: vllm needs --enable-auto-tool-choice)');
    expect(String(answer.next)).toContain('ssh gpu-server ./start-deepseek.sh');
    expect((await app.store.list()).records).toEqual([]);
  });

  it('lists the server instructions that explain the workflow', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const instructions = client.getInstructions() ?? '';
    for (const step of [
      '1. run_agent',
      '2. wait_job',
      '3. Review',
      'ToolSearch',
      'select:mcp__local__run_agent,mcp__local__wait_job',
      'cwd = the absolute path of the project',
      'job_diff',
      'Treat every result as a draft',
      'ask the user to start it',
      'local_complete',
    ]) {
      expect(instructions).toContain(step);
    }
    // Each tool the instructions name exists under that bare name (the suffix of mcp__<server>__<name>).
    const named = [...instructions.matchAll(/\b([a-z]+_[a-z_]+)\b/g)].map((match) => match[1]);
    const listed = new Set((await client.listTools()).tools.map((tool) => tool.name));
    const toolNames = named.filter(
      (name): name is string =>
        name !== undefined &&
        !name.startsWith('mcp__') &&
        /_(agent|job|models|log|diff|status|complete)$/.test(name),
    );
    expect(toolNames.length).toBeGreaterThan(5);
    expect(toolNames.filter((name) => !listed.has(name))).toEqual([]);
    // The default and the recommendation for isolation read the same in both places.
    const runAgent = (await client.listTools()).tools.find((tool) => tool.name === 'run_agent');
    const isolation = JSON.stringify(runAgent?.inputSchema.properties?.isolation ?? {});
    expect(isolation).toContain('recommended in a git repository');
    expect(isolation).toContain('\\"none\\" (the default)');
    expect(instructions).toContain(
      'isolation "worktree" (recommended; the default "none" edits cwd directly)',
    );
    const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(tools).toEqual([
      'cancel_job',
      'discard_job',
      'job_diff',
      'job_log',
      'job_status',
      'list_jobs',
      'list_models',
      'local_complete',
      'merge_job',
      'register_endpoint',
      'register_model',
      'request_model',
      'run_agent',
      'wait_job',
    ]);
  });

  it('answers request_model as the Python original did: up where and as what, or whom to ask', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url, MENU));
    const up = await callTool(client, 'request_model', { model: 'tiny-qwen3' });
    expect(up).toMatchObject({ available: true, endpoint: 'emu', host: 'test-box' });
    expect(String(up.served_model)).toContain('tiny-qwen3');
    expect(up.context).toBeGreaterThan(0);
    const down = await callTool(client, 'request_model', { model: 'deepseek-v4-flash' });
    expect(down).toMatchObject({ status: 'model_unavailable', host: 'gpu-server' });
    expect(String(down.next)).toContain('bring up deepseek-v4-flash on gpu-server');
  });

  it('describes every argument of every tool for Claude', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const undescribed = (await client.listTools()).tools.flatMap((tool) =>
      Object.entries(tool.inputSchema.properties ?? {})
        .filter(([, schema]) => !(schema as { description?: string }).description)
        .map(([name]) => `${tool.name}.${name}`),
    );
    expect(undescribed).toEqual([]);
    const descriptions = (await client.listTools()).tools.map((tool) => tool.description ?? '');
    expect(descriptions.every((text) => text.length > 40)).toBe(true);
  });

  it.each([
    [
      'run_agent',
      { task: 'x', max_turns: 'ten' },
      /^run_agent: invalid arguments: max_turns: Invalid input: expected number, received string\nfix: max_turns expects: Most model turns/,
    ],
    [
      'run_agent',
      { task: 'x', isolation: 'copy' },
      /isolation: Invalid option: expected one of "none"\|"worktree"\nfix: isolation expects: "worktree"/,
    ],
    [
      'run_agent',
      {},
      /task: Invalid input: expected string, received undefined\nfix: task expects: The brief/,
    ],
    [
      'job_diff',
      { job_id: '20261129-000000-aaaa', max_lines: 0 },
      /max_lines: Too small: expected number to be >=1\nfix: max_lines expects: Lines per page/,
    ],
    ['no_such_tool', {}, /there is no tool named "no_such_tool"\nfix: use one of: list_models, /],
    [
      'wait_job',
      { job_id: '20261129-000000-aaaa', timeout_s: -1 },
      /timeout_s: Too small: expected number to be >=0/,
    ],
    ['job_status', { job_id: '../../etc/passwd' }, /job_id must be a job id/],
    [
      'job_status',
      { job_id: '20261129-000000-aaaa' },
      /no job "20261129-000000-aaaa"[\s\S]*fix: list the jobs/,
    ],
    ['run_agent', { task: '' }, /task must be a non-empty brief/],
    [
      'run_agent',
      { task: 'x', cwd: '/no/such/dir' },
      /cwd "\/no\/such\/dir" is not a directory[\s\S]*fix:/,
    ],
    ['run_agent', { task: 'x', wait_s: -5 }, /wait_s: Too small: expected number to be >=0/],
    ['run_agent', { task: 'x', base_ref: 'main' }, /base_ref only applies to isolation "worktree"/],
    [
      'run_agent',
      { task: 'x', resume_job: '20261129-000000-aaaa' },
      /no job "20261129-000000-aaaa"/,
    ],
  ])(
    'answers %s with bad arguments %j with a tool error naming the argument',
    async (tool, args, message) => {
      const { client } = await startTestApp(emulatorConfig(emulator.url));
      const result = await callToolRaw(client, tool, args);
      expect(result.isError).toBe(true);
      expect(errorText(result)).toMatch(message);
      // Like every answer: structuredContent, with a code and the fix, and the text says the fix too.
      const error = (result.structuredContent as { error?: Record<string, unknown> }).error;
      expect(typeof error?.code).toBe('string');
      expect(typeof error?.message).toBe('string');
      expect(error?.fix).toEqual(expect.stringMatching(/\S/));
      expect(errorText(result)).toMatch(/\nfix: \S/);
    },
  );

  it('refuses a worktree job outside a git repository before anything starts', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const plain = await tempDir({ 'a.txt': 'a' });
    const result = await callToolRaw(client, 'run_agent', {
      task: 'x',
      cwd: plain,
      isolation: 'worktree',
    });
    expect(result.isError).toBe(true);
    expect(errorText(result)).toMatch(/isolation "worktree" needs a git repository[\s\S]*fix: /);
    expect((await app.store.list()).records).toEqual([]);
  });

  it('registers a model and an endpoint that later answers and list_models use', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const model = await callTool(client, 'register_model', {
      name: 'big-coder',
      host: 'gpu-box',
      notes: 'needs both GPUs',
      bring_up: 'ssh gpu-box ./big.sh',
      tags: ['coding', 'large'],
    });
    expect(model).toMatchObject({
      ok: true,
      model: 'big-coder',
      entry: { tags: ['coding', 'large'] },
    });
    expect(String(model.next)).toContain('list_models');
    const endpoint = await callTool(client, 'register_endpoint', {
      name: 'spare',
      base_url: 'http://127.0.0.1:9',
      backend: 'llama.cpp',
    });
    // Probed right after writing, like the Python original.
    expect(endpoint).toMatchObject({
      ok: true,
      endpoint: 'spare',
      probe: { name: 'spare', up: false, status: 'refused' },
    });
    expect(String(endpoint.next)).toContain('list_models');
    const live = await callTool(client, 'register_endpoint', {
      name: 'again',
      base_url: emulator.url,
    });
    expect(live).toMatchObject({ probe: { up: true, backend: 'llama.cpp' } });
    const models = await callTool(client, 'list_models');
    expect(models.endpoints).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'emu', up: true }),
        expect.objectContaining({ name: 'spare', up: false }),
      ]),
    );
    expect(models.models).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'big-coder', tags: ['coding', 'large'], available: false }),
      ]),
    );
    const answer = await callTool(client, 'run_agent', { task: 'x', model: 'big-coder' });
    expect(answer).toMatchObject({
      status: 'model_unavailable',
      host: 'gpu-box',
      notes: 'needs both GPUs',
      bring_up: 'ssh gpu-box ./big.sh',
    });
  });

  it('answers an invalid registration with a tool error that names the field', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const result = await callToolRaw(client, 'register_endpoint', {
      name: 'bad',
      base_url: 'not a url',
    });
    expect(result.isError).toBe(true);
    expect(errorText(result)).toMatch(/base_url/);
  });

  it('probes backend: ollama (the original’s spelling) by Ollama’s own routes, and says when they are missing', async () => {
    const { client } = await startTestApp(
      emulatorConfig(emulator.url).replace('backend: llama.cpp', 'backend: ollama'),
    );
    const models = await callTool(client, 'list_models');
    expect(models.endpoints).toEqual([
      expect.objectContaining({
        name: 'emu',
        up: false,
        backend: 'ollama',
        error:
          'GET /api/ps did not answer like Ollama (HTTP 404): is this an Ollama server (v0.9.7 or later)?',
      }),
    ]);
    expect(JSON.stringify(models.config)).not.toContain('probed like other');
  });

  it('completes one prompt with local_complete', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const answer = await callTool(client, 'local_complete', {
      prompt: 'Say hello.',
      max_tokens: 64,
    });
    expect(answer.status).toBe('completed');
    expect(answer.text).toBe('Hello from the emulator.');
    expect(answer.endpoint).toBe('emu');
  });

  it('answers local_complete for a model that is not running, and a backend error as a tool error', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url, MENU));
    const unavailable = await callToolRaw(client, 'local_complete', {
      prompt: 'Say hello.',
      model: 'deepseek-v4-flash',
    });
    expect(unavailable.isError).toBeFalsy();
    expect(unavailable.structuredContent).toMatchObject({
      status: 'model_unavailable',
      host: 'gpu-server',
    });
    const noEndpoint = await callToolRaw(client, 'local_complete', {
      prompt: 'Say hello.',
      endpoint: 'nowhere',
    });
    expect(noEndpoint.isError).toBeFalsy();
    // A wrong endpoint argument is said to be one, with the names that exist; nothing to bring up.
    expect(noEndpoint.structuredContent).toMatchObject({
      status: 'unknown_endpoint',
      endpoint: 'nowhere',
      known_endpoints: ['emu'],
    });
    expect(String(noEndpoint.structuredContent?.next)).not.toContain('bring up');
    emulator.injectFaults([{ kind: 'status', status: 500, count: 1 }]);
    const failed = await callToolRaw(client, 'local_complete', { prompt: 'Say hello.' });
    expect(failed.isError).toBe(true);
    expect(errorText(failed)).toContain('emu answered HTTP 500');
    // The cause, not a generic guess: a server that is loading says so, with what to do.
    emulator.injectFaults([
      {
        kind: 'status',
        status: 503,
        body: { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } },
        count: 1,
      },
    ]);
    const loading = await callToolRaw(client, 'local_complete', { prompt: 'Say hello.' });
    expect(loading.isError).toBe(true);
    expect(errorText(loading)).toContain('Loading model');
    expect(errorText(loading)).toContain('fix: the server is loading a model or has no free slot');
  });

  it('says a llama.cpp KV cache is unified once the traffic proved it, and not before', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const before = await callTool(client, 'list_models');
    expect(before.endpoints).toEqual([expect.not.objectContaining({ kvUnified: true })]);
    // The captured answer of a unified cache whose shared cells ran out (fixture C14).
    emulator.injectFaults([
      {
        kind: 'status',
        status: 500,
        body: {
          error: { code: 500, message: 'Context size has been exceeded.', type: 'server_error' },
        },
      },
    ]);
    const job = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(job.status).toBe('succeeded');
    const after = await callTool(client, 'list_models');
    expect(after.endpoints).toEqual([expect.objectContaining({ name: 'emu', kvUnified: true })]);
  });

  it('lists finished jobs unless asked not to, as the Python original did', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const cwd = await tempDir();
    const job = await callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd, wait_s: 100 });
    expect(job.status).toBe('succeeded');
    expect((await callTool(client, 'list_jobs')).jobs).toEqual([
      expect.objectContaining({ id: job.id, status: 'succeeded', files_touched: 1 }),
    ]);
    expect((await callTool(client, 'list_jobs', { include_finished: false })).jobs).toEqual([]);
  });

  it('answers a damaged job record as damaged, naming the job, the file and the fix, and lists the others', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const job = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    const bad = '20261129-000001-bbbb';
    await app.store.write(bad, 'job.json', '');
    const status = await callToolRaw(client, 'job_status', { job_id: bad });
    expect(status.isError).toBe(true);
    expect(status.structuredContent).toMatchObject({
      error: {
        code: 'RECORD_DAMAGED',
        message: expect.stringContaining(`job ${bad}: `) as unknown,
        fix: expect.stringContaining('.damaged') as unknown,
      },
    });
    const listed = await callTool(client, 'list_jobs');
    expect(listed.jobs).toEqual([expect.objectContaining({ id: job.id })]);
    expect(listed.damaged).toEqual([
      expect.objectContaining({
        id: bad,
        problem: expect.stringContaining('it is empty') as unknown,
      }),
    ]);
  });

  it('flags a job that ends with no edits and no real report as a possible no-op', async () => {
    const lazy = await startEmulator({ script: [{ text: 'Done.' }] });
    try {
      const { client } = await startTestApp(emulatorConfig(lazy.url));
      const summary = await callTool(client, 'run_agent', {
        task: 'Fix the bug.',
        cwd: await tempDir(),
        wait_s: 100,
      });
      expect(summary.status).toBe('succeeded');
      expect(summary.possible_no_op).toBe(true);
      expect(String(summary.next)).toMatch(/may have done nothing/);
    } finally {
      await lazy.close();
    }
  });
});
