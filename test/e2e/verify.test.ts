import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator } from '../../src/emulator/emulator.js';
import type { ScriptTurn } from '../../src/emulator/script.js';
import { callTool, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

/** The delegate writes check.sh (a stand-in for a test suite); the job's verify command runs it. */
const writeCheck = (body: string): ScriptTurn => ({
  toolCalls: [{ name: 'Write', input: { file_path: '${cwd}/check.sh', content: body } }],
});
const FAILING = 'echo "1 of 3 tests failed: parse_flags"\nexit 1\n';
const PASSING = 'echo "3 of 3 tests passed"\nexit 0\n';

async function setup(script: ScriptTurn[]) {
  const emu = await startEmulator({ script, nCtx: 65536, parallel: 2 });
  onTestFinished(() => emu.close());
  const app = await startTestApp(emulatorConfig(emu.url));
  return { emu, ...app };
}

describe('verify: the job checks its own work', () => {
  it('fails a job whose verify command fails, with the output in the answer', async () => {
    const { client, app } = await setup([writeCheck(FAILING), { text: 'Done: I wrote check.sh.' }]);
    const done = await callTool(client, 'run_agent', {
      task: 'Write check.sh.',
      cwd: await tempDir(),
      verify: 'sh check.sh',
      wait_s: 100,
    });
    expect(done.status).toBe('failed_verification');
    expect(done.error).toEqual({
      kind: 'verification_failed',
      message: '`sh check.sh` exited 1 after 1 round(s)',
    });
    expect(done.verification).toMatchObject({
      command: 'sh check.sh',
      exit_code: 1,
      passed: false,
      rounds: 1,
      output_tail: '1 of 3 tests failed: parse_flags\n',
    });
    expect(String(done.next)).toContain('resume_job');
    const transcript = await readFile(
      join(app.store.jobDir(String(done.id)), 'transcript.txt'),
      'utf8',
    );
    expect(transcript).toContain('=== verify, round 1: sh check.sh');
    expect(transcript).toContain('  | 1 of 3 tests failed: parse_flags');
    expect(transcript).toContain('=== verify, round 1: failed (exit 1)');
  });

  it('gives the session another round with the failure, and succeeds when it fixes it', async () => {
    const { client, app, emu } = await setup([
      writeCheck(FAILING),
      { text: 'Done: I wrote check.sh.' },
      writeCheck(PASSING),
      { text: 'Fixed parse_flags; check.sh passes now.' },
    ]);
    const cwd = await tempDir();
    const done = await callTool(client, 'run_agent', {
      task: 'Write check.sh.',
      cwd,
      verify: 'sh check.sh',
      verify_retries: 1,
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    expect(done.verification).toMatchObject({ passed: true, exit_code: 0, rounds: 2 });
    expect(await readFile(join(cwd, 'check.sh'), 'utf8')).toBe(PASSING);
    // The second round is the same session, told what failed.
    const retry = emu.requests.find((request) =>
      request.rawBody.includes('The verification command `sh check.sh` failed (exit 1)'),
    );
    expect(retry?.rawBody).toContain('1 of 3 tests failed: parse_flags');
    const transcript = await readFile(
      join(app.store.jobDir(String(done.id)), 'transcript.txt'),
      'utf8',
    );
    expect(transcript).toContain('=== verify, round 1: failed (exit 1)');
    expect(transcript).toContain('=== verify, round 2: passed');
    const record = await app.store.read(String(done.id));
    expect(record.result_text).toBe('Fixed parse_flags; check.sh passes now.');
  });

  it('takes the verify command from models.yaml when the call gives none', async () => {
    const emu = await startEmulator({
      script: [writeCheck(PASSING), { text: 'Done: I wrote check.sh.' }],
      nCtx: 65536,
      parallel: 2,
    });
    onTestFinished(() => emu.close());
    const config = emulatorConfig(emu.url).replace(
      'defaults:\n',
      'defaults:\n  verify: sh check.sh\n',
    );
    const { client } = await startTestApp(config);
    const done = await callTool(client, 'run_agent', {
      task: 'Write check.sh.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    expect(done.verification).toMatchObject({ command: 'sh check.sh', passed: true, rounds: 1 });
  });

  it('says so when the report claims work that left no trace and ran no command', async () => {
    const { client } = await setup([{ text: 'I fixed the parser and all tests pass now.' }]);
    const done = await callTool(client, 'run_agent', {
      task: 'Fix the parser.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    expect(done.possible_no_op).toBe(true);
    expect(done.warnings).toContain(
      'the report says "I fixed", yet nothing changed on disk and no command ran: check before trusting it',
    );
  });
});
