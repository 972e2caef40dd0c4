import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { callTool, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

const KEY = 'sk-backend-secret-4242';
const URL_PASSWORD = 'pw-in-the-url-9191';

let emulator: Emulator;
beforeAll(async () => {
  // A key-guarded llama-server whose model dumps its environment into the repository, then stops.
  emulator = await startEmulator({
    apiKey: KEY,
    script: [
      { toolCalls: [{ name: 'Bash', input: { command: 'env > env.txt' } }] },
      { text: 'Done: wrote env.txt.' },
    ],
  });
});
afterAll(() => emulator.close());

describe('secrets stay with the shim', () => {
  it('keeps the backend key out of the delegate and a URL password out of every answer', async () => {
    const withPassword = emulator.url.replace('http://', `http://me:${URL_PASSWORD}@`);
    const config = [
      'endpoints:',
      '  guarded:',
      `    base_url: ${withPassword}`,
      '    backend: llama.cpp',
      '    api_key_env: LOCAL_LLM_KEY',
      '  other:',
      `    base_url: ${emulator.url}`,
      '    api_key_env: OTHER_LLM_KEY',
      '',
    ].join('\n');
    const cwd = await tempDir();
    const { client, app } = await startTestApp(config, {
      cwd,
      env: { LOCAL_LLM_KEY: KEY, OTHER_LLM_KEY: 'sk-other-7777' },
    });

    const listed = JSON.stringify(await callTool(client, 'list_models'));
    expect(listed).not.toContain(URL_PASSWORD);
    expect(listed).toContain('http://***@127.0.0.1:');

    const started = await callTool(client, 'run_agent', {
      task: 'Show your environment.',
      endpoint: 'guarded',
      cwd,
    });
    const done = await callTool(client, 'wait_job', { job_id: started.id, timeout_s: 100 });
    // The shim sent the key: the guarded backend answered every request.
    expect(done.status).toBe('succeeded');
    const dumped = await readFile(`${cwd}/env.txt`, 'utf8');
    expect(dumped).toContain('ANTHROPIC_BASE_URL=');
    for (const secret of [KEY, 'LOCAL_LLM_KEY', 'OTHER_LLM_KEY', 'sk-other-7777', URL_PASSWORD])
      expect(dumped, secret).not.toContain(secret);

    const record = await app.store.read(String(started.id));
    expect(record.base_url).toBe(withPassword.replace(`me:${URL_PASSWORD}`, '***'));
    expect(
      JSON.stringify(await callTool(client, 'job_status', { job_id: started.id })),
    ).not.toContain(URL_PASSWORD);
  });
});
