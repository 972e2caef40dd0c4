import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { callTool, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * Failures a retry cannot fix end a job in seconds, not after Claude Code's ten retries (about three minutes);
 * a backend that is gone or keeps loading gets defaults.backend_grace_s. Each bound below is derived from that
 * configured grace, not guessed from a wall clock.
 */
const GRACE_S = 1;
/** Claude Code's first retries come within a few seconds; the job ends once the grace has run out after them. */
const SLACK_S = 20;

const emulators: Emulator[] = [];
afterEach(async () => {
  for (const emu of emulators.splice(0)) await emu.close().catch(() => undefined);
});

/** The MCP client of the last job() call, for what the server says afterwards. */
let lastClient: Awaited<ReturnType<typeof startTestApp>>['client'] | undefined;

async function job(emu: Emulator, afterStart?: () => Promise<void> | void) {
  const config = emulatorConfig(emu.url).replace(
    'defaults:\n',
    `defaults:\n  backend_grace_s: ${GRACE_S}\n`,
  );
  const { client } = await startTestApp(config);
  lastClient = client;
  const started = await callTool(client, 'run_agent', {
    task: 'Write hello.txt.',
    cwd: await tempDir(),
  });
  const id = String(started.id);
  await afterStart?.();
  const began = Date.now();
  const done = await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
  return { done, seconds: (Date.now() - began) / 1000 };
}

describe('failures Claude Code retries its way through', () => {
  it('finishes a job through a malformed event, and logs the request with it', async () => {
    const emu = await startEmulator();
    emulators.push(emu);
    emu.injectFaults([{ kind: 'malformed', afterEvents: 2 }]);
    const config = emulatorConfig(emu.url);
    const { client, app } = await startTestApp(config);
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(started.status).toBe('succeeded');
    const log = await readFile(
      join(app.store.jobDir(String(started.id)), 'requests.jsonl'),
      'utf8',
    );
    const lines = log
      .trim()
      .split('\n')
      .map((text) => JSON.parse(text) as { error?: { translated?: string } | null });
    expect(lines.some((line) => line.error?.translated?.includes('malformed event'))).toBe(true);
  });

  it('waits out a backend that stalls before its answer, and finishes', async () => {
    const emu = await startEmulator();
    emulators.push(emu);
    emu.injectFaults([{ kind: 'delay', ms: 1500 }]);
    const { client, app } = await startTestApp(emulatorConfig(emu.url));
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(started.status).toBe('succeeded');
    // Claude Code waits for a head up to API_TIMEOUT_MS, which a job sets to its timeout_s.
    const record = await app.store.read(String(started.id));
    expect(record.duration_ms).toBeGreaterThanOrEqual(1500);
  });
});

describe('failures said fast and plainly', () => {
  it('ends a job whose key the backend refuses at once, in its words with the fix', async () => {
    const emu = await startEmulator();
    emulators.push(emu);
    emu.injectFaults([{ kind: 'status', status: 401, count: 100 }]);
    const { done, seconds } = await job(emu);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({
      kind: 'backend_config',
      message: expect.stringContaining('emu') as unknown,
    });
    expect(seconds).toBeLessThan(SLACK_S);
    // list_models points at doctor for the endpoint that failed.
    const listed = lastClient ? await callTool(lastClient, 'list_models') : {};
    expect(listed.warnings).toContain(
      `the last job on emu (${String(done.id)}) failed on a backend error (backend_config): check the server with localagents doctor --endpoint emu`,
    );
  });

  it('ends a job whose backend keeps loading after the grace, as backend_down with what was tried', async () => {
    const emu = await startEmulator();
    emulators.push(emu);
    emu.injectFaults([
      {
        kind: 'status',
        status: 503,
        body: { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } },
        count: 100,
      },
    ]);
    const { done, seconds } = await job(emu);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({
      kind: 'backend_down',
      message: expect.stringMatching(
        new RegExp(
          `^endpoint emu did not answer for ${GRACE_S} s \\(\\d+ failed requests?; the last: `,
        ),
      ) as unknown,
    });
    expect(seconds).toBeGreaterThanOrEqual(GRACE_S - 0.5);
    expect(seconds).toBeLessThan(GRACE_S + SLACK_S);
  });

  it('ends a job whose backend went away after the grace, naming the endpoint and its URL', async () => {
    const emu = await startEmulator({ latency: { ttfbMs: 300 } });
    emulators.push(emu);
    const { done } = await job(emu, async () => {
      await waitFor(() => emu.requests.some((request) => request.path.startsWith('/v1/messages')), {
        what: 'the first request',
      });
      await emu.close();
    });
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ kind: 'backend_down' });
    const message = String((done.error as { message: string }).message);
    expect(message).toContain(`endpoint emu (${emu.url}) unreachable: connection refused`);
    expect(message).not.toContain('vLLM');
  });
});
