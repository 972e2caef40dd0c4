import { execFile, execFileSync } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { callTool, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const MAIN = new URL('../../dist/cli/main.js', import.meta.url).pathname;

/**
 * A real, small filesystem for the state directory: a tmpfs of `size`, unmounted when the test ends. CI runs as
 * root; where mounting is refused the test fails and says why, rather than passing without having tried.
 */
async function smallDisk(size: string): Promise<string> {
  const mount = await tempDir({}, 'localagents-tmpfs-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', mount], {
      stdio: 'pipe',
    });
  } catch (error) {
    throw new Error(
      `cannot mount a ${size} tmpfs at ${mount} (the disk-full test needs root, as CI has): ${String(error)}`,
      { cause: error },
    );
  }
  onTestFinished(() => {
    execFileSync('umount', ['-l', mount]);
  });
  return mount;
}

/** Fills the filesystem at `dir`: a file written until the disk refuses more. */
async function fill(dir: string): Promise<string> {
  const filler = join(dir, 'filler');
  await writeFile(filler, Buffer.alloc(64 * 1024 * 1024)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOSPC') throw error;
  });
  return filler;
}

let emulator: Emulator;
beforeAll(async () => {
  // Slow enough that the job is still running when the disk fills.
  emulator = await startEmulator({ latency: { ttfbMs: 400 } });
});
afterAll(() => emulator.close());

describe('a state directory whose disk fills up', () => {
  it('fails the job with record_write_failed, never claims more than the disk holds, and writes it once it can', async () => {
    const state = await smallDisk('1m');
    const { client } = await startTestApp(emulatorConfig(emulator.url), { stateDir: state });
    const cwd = await tempDir();
    const started = await callTool(client, 'run_agent', { task: 'Write hello.txt.', cwd });
    const id = String(started.id);
    await waitFor(
      async () => (await callTool(client, 'job_status', { job_id: id })).status === 'running',
      { what: 'the job running' },
    );
    const filler = await fill(state);

    const done = await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({
      kind: 'record_write_failed',
      message: expect.stringMatching(/^cannot write .*job\.json: ENOSPC/) as unknown,
    });
    // Asked again, the same answer: the record the disk refused is what this server tells.
    expect(await callTool(client, 'job_status', { job_id: id })).toMatchObject({
      status: 'failed',
    });
    const jobDir = join(state, 'jobs', id);
    expect((await readdir(jobDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);

    // Room again: the next question writes the record, and the disk says what the answers said.
    await rm(filler);
    await callTool(client, 'job_status', { job_id: id });
    const onDisk = JSON.parse(await readFile(join(jobDir, 'job.json'), 'utf8')) as {
      status: string;
      error: { kind: string } | null;
    };
    expect(onDisk).toMatchObject({ status: 'failed', error: { kind: 'record_write_failed' } });
  });

  it('answers localagents run on a full disk with the path and the errno, not "this is a bug"', async () => {
    const state = await smallDisk('256k');
    await fill(state);
    const configDir = await tempDir({ 'models.yaml': emulatorConfig(emulator.url) });
    const env = await isolatedClaudeEnv({
      LOCALAGENTS_STATE_DIR: state,
      LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
    });
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [MAIN, 'run', 'Write hello.txt.', '--cwd', configDir],
        { env, cwd: configDir, timeout: 60_000 },
        (error, _stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr }),
      );
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot write .*: ENOSPC/);
    expect(result.stderr).toContain('fix: the disk that holds the state directory is full');
    expect(result.stderr).not.toContain('this is a bug');
  });
});
