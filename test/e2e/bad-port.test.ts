/**
 * A backend on a port the Fetch spec calls "bad" (6000, 6665–6669, 10080…): node:http reaches it, fetch
 * refuses it before any byte is sent. Every byte localagents sends a backend goes through node:http (the
 * prober, the shim, local_complete's route, the job's /metrics figures), so all of them work there.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { gitRepo } from '../support/git-repo.js';
import { callTool, emulatorConfig, startTestApp } from '../support/mcp-client.js';

const BAD_PORTS = [6000, 6665, 6666, 6667, 6668, 6669, 10080];

let emulator: Emulator;
beforeAll(async () => {
  const tried: string[] = [];
  for (const port of BAD_PORTS) {
    try {
      emulator = await startEmulator({ port, metrics: true });
      return;
    } catch (error) {
      tried.push(`${port}: ${String(error)}`);
    }
  }
  throw new Error(`no bad port was free: ${tried.join('; ')}`);
});
afterAll(() => emulator.close());

describe('a backend on a port fetch refuses', () => {
  it('is one fetch itself cannot reach (the premise)', async () => {
    await expect(fetch(`${emulator.url}/health`)).rejects.toThrow();
  });

  it('answers local_complete through the shim, logged under the state dir', async () => {
    const { client, stateDir } = await startTestApp(emulatorConfig(emulator.url));
    const answer = await callTool(client, 'local_complete', { prompt: 'Say hello.' });
    expect(answer).toMatchObject({ status: 'completed', text: 'Hello from the emulator.' });
    const log = await readFile(join(stateDir, 'complete', 'requests.jsonl'), 'utf8');
    const line = JSON.parse(log.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    expect(line).toMatchObject({ kind: 'request', path: '/v1/messages', status: 200 });
  });

  it('runs a job whose record has the backend speeds from /metrics', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const repo = await gitRepo({ 'README.md': '# demo\n' });
    const started = await callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd: repo });
    const done = await callTool(client, 'wait_job', { job_id: String(started.id) });
    expect(done.status).toBe('succeeded');
    const record = await app.store.read(String(started.id));
    expect(record.backend?.speed_scope).toBe('job');
    expect(record.backend?.generation_tokens_per_s).toBeGreaterThan(0);
  });
});
