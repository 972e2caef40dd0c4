import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { callTool, callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator();
});
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
    expect(String(answer.next)).toContain('ssh gpu-server ./start-deepseek.sh');
    expect(await app.store.list()).toEqual([]);
  });

  it('lists the server instructions that explain the workflow', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    expect(client.getInstructions()).toContain('list_models');
    expect(client.getInstructions()).toContain('treat every result as a draft');
    const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(tools).toEqual([
      'cancel_job',
      'job_diff',
      'job_log',
      'job_status',
      'list_jobs',
      'list_models',
      'local_complete',
      'register_endpoint',
      'register_model',
      'run_agent',
      'wait_job',
    ]);
  });

  it.each([
    [
      'wait_job',
      { job_id: '20261129-000000-aaaa', timeout_s: 500 },
      /timeout_s must be at most 110/,
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
    ['run_agent', { task: 'x', wait_s: 300 }, /wait_s must be at most 110/],
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
    expect(await app.store.list()).toEqual([]);
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

  it('lists finished jobs only when asked to', async () => {
    const { client } = await startTestApp(emulatorConfig(emulator.url));
    const cwd = await tempDir();
    const job = await callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd, wait_s: 100 });
    expect(job.status).toBe('succeeded');
    expect((await callTool(client, 'list_jobs')).jobs).toEqual([]);
    const all = await callTool(client, 'list_jobs', { include_finished: true });
    expect(all.jobs).toEqual([
      expect.objectContaining({ id: job.id, status: 'succeeded', files_touched: 1 }),
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
