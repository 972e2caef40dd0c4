import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/cli.js';
import { COMMANDS } from '../src/cli/commands.js';

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk));
  stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const code = await runCli(argv, {
    stdout,
    stderr,
    env: {},
    cwd: process.cwd(),
    signal: new AbortController().signal,
  });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

describe('runCli', () => {
  it('lists every command in the top-level help', async () => {
    const { code, stdout } = await cli('--help');
    expect(code).toBe(0);
    for (const command of COMMANDS) expect(stdout).toContain(`  ${command.name} `);
  });

  it.each(COMMANDS.map((command) => command.name))(
    'prints the usage of `%s --help` on stdout without running it',
    async (name) => {
      const { code, stdout, stderr } = await cli(name, '--help');
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toMatch(new RegExp(`^localagents \\[?${name}\\b`));
    },
  );

  it('prints the version from package.json, the one place it is written', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-v']) {
      const { code, stdout } = await cli(flag);
      expect(code).toBe(0);
      expect(stdout).toBe(`localagents ${pkg.version}\n`);
    }
  });

  it('answers an unknown command with exit code 2 and the fix on stderr', async () => {
    const { code, stdout, stderr } = await cli('frobnicate');
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('unknown command "frobnicate"');
    expect(stderr).toContain('localagents --help');
  });

  it('answers an unknown option with exit code 2, naming the command and its --help', async () => {
    const { code, stdout, stderr } = await cli('emulate', '--no-such-flag');
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('localagents emulate:');
    expect(stderr).toContain('--no-such-flag');
    expect(stderr).toContain('localagents emulate --help');
  });
});
