import { execFile } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import type { Check } from '../../src/cli/doctor-checks.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { refusedPort } from './registry-support.js';

/** `localagents doctor` against the emulator in each personality, as a user runs it. */
const MAIN = new URL('../../dist/cli/main.js', import.meta.url).pathname;

interface Report {
  backend: string;
  served_model: string | null;
  ok: boolean;
  checks: Check[];
}

async function doctor(url: string): Promise<{ code: number; report: Report; stdout: string }> {
  const env = await isolatedClaudeEnv();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'doctor', '--base-url', url, '--json'],
      { env, timeout: 100_000 },
      (error, stdout) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, report: JSON.parse(stdout) as Report });
      },
    );
  });
}

async function server(options: EmulatorOptions) {
  const emu = await startEmulator(options);
  onTestFinished(() => emu.close());
  return emu;
}

const byId = (report: Report): Record<string, Check> =>
  Object.fromEntries(report.checks.map((check) => [check.id, check]));

describe('localagents doctor', () => {
  it('passes a llama-server whose strict template needs the shim, and says the shim is needed', async () => {
    const emu = await server({ nCtx: 262144, nCtxTrain: 131072, parallel: 2, metrics: true });
    const { code, report } = await doctor(emu.url);
    expect(code).toBe(0);
    expect(report).toMatchObject({ backend: 'llama.cpp', ok: true });
    const checks = byId(report);
    expect(checks.window).toMatchObject({ result: 'pass' });
    expect(checks.window?.detail).toContain('131072 tokens per request');
    expect(checks.figures?.result).toBe('pass');
    expect(checks['system-fold']).toMatchObject({ result: 'pass' });
    expect(checks['system-fold']?.detail).toContain('System message must be at the beginning');
    expect(checks['system-fold']?.detail).toContain('the shim is needed');
    expect(checks['tool-call']?.result).toBe('pass');
    expect(checks.stream?.result).toBe('pass');
    expect(checks['count-tokens']?.result).toBe('pass');
    expect(checks.cache?.result).toBe('pass');
    expect(checks.overflow?.detail).toContain('prompt is too long');
    expect(checks.speed?.detail).toMatch(
      /^prompt \d+ tokens\/s \(\d+ uncached tokens before the first token in \d+ ms\), generation \d+ tokens\/s: /,
    );
    // Replayed what Claude Code sends: its own tools reached the server.
    const tooled = emu.requests.find((request) => request.rawBody.includes('"name":"Write"'));
    expect(tooled).toBeDefined();
  });

  it('fails a vLLM started without auto tool choice, naming the flags, and passes it with them', async () => {
    const without = await server({ backend: 'vllm', nCtx: 131072 });
    const failed = await doctor(without.url);
    expect(failed.code).toBe(1);
    expect(byId(failed.report)['tool-call']).toMatchObject({
      result: 'fail',
      fix: expect.stringContaining('--enable-auto-tool-choice') as unknown,
    });
    const withFlags = await server({ backend: 'vllm', nCtx: 131072, toolChoice: true });
    const passed = await doctor(withFlags.url);
    expect(passed.code).toBe(0);
    expect(byId(passed.report)['tool-call']?.result).toBe('pass');
  });

  it('says what Ollama cannot answer, and that its overflow is caught', async () => {
    const emu = await server({ backend: 'ollama', nCtx: 65536 });
    const { code, report } = await doctor(emu.url);
    expect(code).toBe(0);
    const checks = byId(report);
    expect(checks.figures?.result).toBe('skip');
    expect(checks.cache).toMatchObject({ result: 'warn' });
    expect(checks['count-tokens']).toMatchObject({ result: 'warn' });
    expect(checks.overflow).toMatchObject({ result: 'pass' });
    // 65536 is below the comfortable 128k: the fix names Ollama's own setting.
    expect(checks.window?.fix).toContain('OLLAMA_CONTEXT_LENGTH=131072');
  });

  it('says LM Studio needs the shim for Claude Code’s system message', async () => {
    const emu = await server({ backend: 'lmstudio', nCtx: 131072 });
    const { code, report } = await doctor(emu.url);
    expect(code).toBe(0);
    expect(byId(report)['system-fold']?.detail).toContain('Invalid discriminator value');
  });

  it('fails a window too small for a job and a server that is not there', async () => {
    const small = await server({ backend: 'ollama', nCtx: 4096 });
    const tiny = await doctor(small.url);
    expect(tiny.code).toBe(1);
    expect(byId(tiny.report).window).toMatchObject({ result: 'fail' });
    const gone = await doctor(await refusedPort());
    expect(gone.code).toBe(1);
    expect(gone.report.checks).toEqual([expect.objectContaining({ id: 'served', result: 'fail' })]);
  });
});
