import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, readFile, readdir, realpath, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { npmCacheDir, startLocalRegistry } from '../support/local-registry.js';
import { tempDir } from '../support/temp-dir.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLAUDE = createRequire(import.meta.url).resolve(
  '@anthropic-ai/claude-agent-sdk-linux-x64/claude',
);

interface Step {
  command: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The first ```sh block of the README's "## Install for Claude Code" section, one command per line. */
function installCommands(readme: string): string[] {
  const section = readme
    .split(/^## /m)
    .find((part) => part.startsWith('Install for Claude Code\n'));
  const block = section === undefined ? undefined : /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1];
  if (block === undefined)
    throw new Error('README.md: no ```sh block under ## Install for Claude Code');
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
}

/** Runs one command with bash in `cwd`; resolves with its exit code and output, whatever the code. */
function bash(
  command: string,
  options: { cwd: string; env: Record<string, string>; timeoutMs: number },
): Promise<Step> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `set -euo pipefail\n${command}`], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ command, code: signal === null ? code : null, stdout, stderr }),
    );
  });
}

/** A step's output for an assertion message. */
function show(step: Step): string {
  return `$ ${step.command}\nexit ${step.code ?? 'killed (timeout)'}\n--- stdout\n${step.stdout.slice(-4000)}\n--- stderr\n${step.stderr.slice(-8000)}`;
}

/** The repository as a fresh clone would have it, with the uncommitted work: tracked plus untracked, not ignored. */
async function copyWorkingTree(to: string): Promise<void> {
  const { stdout } = await run('git', ['ls-files', '-coz', '--exclude-standard'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  for (const file of new Set(stdout.split('\0'))) {
    // A tarball an earlier `npm pack` left in the checkout is no part of a clone.
    if (file === '' || /^localagents-.*\.tgz$/.test(file)) continue;
    await mkdir(dirname(join(to, file)), { recursive: true });
    await copyFile(join(ROOT, file), join(to, file)).catch((error: unknown) => {
      // Tracked but deleted in the working tree: a clone of this work would not have it either.
      if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
    });
  }
}

async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/** The files the tarball would ship with: dist/ (no tests), the manifest, README, example config, licence. */
function unexpectedInTarball(entries: string[]): string[] {
  return entries.filter(
    (entry) =>
      !/^package\/(package\.json|README\.md|models\.example\.yaml|LICEN[CS]E(\.md|\.txt)?)$/.test(
        entry,
      ) &&
      // Claude Code's captured first request, which localagents doctor replays.
      entry !== 'package/assets/claude-code-first-turn.json' &&
      // The dashboard's page, served as is.
      !/^package\/assets\/dashboard\/(index\.html|app\.js|style\.css)$/.test(entry) &&
      !(/^package\/dist\/.+\.js(\.map)?$/.test(entry) && !/\.test\.js(\.map)?$/.test(entry)),
  );
}

/**
 * A bash script: `server` in the background, its first stdout line (a URL) read from `file` into $url, then
 * `body`, which sets $code on a failure; the server is stopped and the script exits with $code.
 */
function besideServer(server: string, file: string, body: string[]): string {
  return [
    `${server} > ${file} &`,
    'pid=$!',
    `until [ -s ${file} ]; do sleep 0.05; done`,
    `url=$(head -1 ${file})`,
    'code=0',
    ...body,
    'kill "$pid"',
    'exit "$code"',
  ].join('\n');
}

describe('installed like a real package', () => {
  it('runs the README install lines in a copy, then --version, --help and demo from the global prefix', async () => {
    const work = await tempDir({}, 'localagents-pack-');
    const clone = join(work, 'clone');
    const prefix = join(work, 'prefix');
    const tools = join(work, 'tools');
    await mkdir(tools, { recursive: true });
    await symlink(CLAUDE, join(tools, 'claude'));
    await copyWorkingTree(clone);

    const registry = await startLocalRegistry({
      lockfilePath: join(clone, 'package-lock.json'),
      cacheDir: await npmCacheDir(),
    });
    try {
      const isolated = await isolatedClaudeEnv();
      const env: Record<string, string> = {
        // A user's shell: none of the npm_* variables `npm test` sets for its children.
        ...Object.fromEntries(
          Object.entries(isolated).filter(
            ([key]) => !/^npm_/i.test(key) && key !== 'INIT_CWD' && key !== 'NODE',
          ),
        ),
        ...registry.npmEnv,
        // npm's debug logs would otherwise go to <cache>/_logs.
        npm_config_logs_dir: join(isolated.HOME ?? work, '.npm', '_logs'),
        npm_config_prefix: prefix,
        PATH: [join(prefix, 'bin'), tools, dirname(process.execPath), isolated.PATH ?? ''].join(
          ':',
        ),
      };
      const home = env.HOME ?? '';
      const steps: Step[] = [];
      const runStep = async (command: string, timeoutMs = 240_000): Promise<Step> => {
        const step = await bash(command, { cwd: clone, env, timeoutMs });
        steps.push(step);
        expect(step.code, show(step)).toBe(0);
        return step;
      };

      const readme = await readFile(join(clone, 'README.md'), 'utf8');
      const commands = installCommands(readme);
      expect(commands.join('\n')).toMatch(/npm pack[\s\S]*npm install -g [\s\S]*claude mcp add/);
      for (const command of commands) await runStep(command);

      // Every request went to the local registry, and npm never asked for something it lacks.
      expect(registry.outside).toEqual([]);
      expect(registry.requests.filter((request) => request.status !== 200)).toEqual([]);
      expect(registry.requests.map((request) => decodeURIComponent(request.url))).toContain(
        '/@anthropic-ai/claude-agent-sdk',
      );

      const { version } = JSON.parse(await readFile(join(clone, 'package.json'), 'utf8')) as {
        version: string;
      };
      const tarball = join(clone, `localagents-${version}.tgz`);
      const { stdout: listing } = await run('tar', ['-tzf', tarball], {
        maxBuffer: 16 * 1024 * 1024,
      });
      const entries = listing.split('\n').filter((line) => line !== '');
      expect(unexpectedInTarball(entries)).toEqual([]);
      const sources = (await listFiles(join(clone, 'src'))).filter(
        (file) => file.endsWith('.ts') && !file.endsWith('.test.ts'),
      );
      const missing = sources
        .map((file) => `package/dist/${file.replace(/\.ts$/, '.js')}`)
        .filter((file) => !entries.includes(file));
      expect(missing).toEqual([]);

      const versionStep = steps.find((step) => step.command.trim() === 'localagents --version');
      expect(versionStep?.stdout).toBe(`localagents ${version}\n`);

      const installed = join(prefix, 'lib', 'node_modules', 'localagents');
      // Of the SDK's platform binaries only this platform's was installed (the others are not in the cache).
      const platforms = await readdir(join(installed, 'node_modules', '@anthropic-ai'));
      expect(platforms.filter((name) => name.startsWith('claude-agent-sdk-'))).toEqual([
        'claude-agent-sdk-linux-x64',
      ]);
      const which = await runStep('command -v localagents');
      expect(which.stdout.trim()).toBe(join(prefix, 'bin', 'localagents'));
      expect(await realpath(which.stdout.trim())).toBe(join(installed, 'dist', 'cli', 'main.js'));

      const help = await runStep('localagents --help');
      for (const command of ['serve', 'models', 'run', 'jobs', 'proxy', 'emulate', 'demo'])
        expect(help.stdout, show(help)).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));

      const claudeJson = JSON.parse(await readFile(join(home, '.claude.json'), 'utf8')) as {
        mcpServers?: Record<string, { command?: string; args?: string[] }>;
      };
      expect(claudeJson.mcpServers?.local).toMatchObject({
        command: 'localagents',
        args: ['--config', join(home, '.config', 'localagents', 'models.yaml')],
      });

      // The demo from the installed copy, outside the clone and without the test's `claude` on PATH: the
      // installed package's own claude binary and dependencies.
      const demo = await bash('localagents demo', {
        cwd: work,
        env: { ...env, PATH: env.PATH?.replace(`${tools}:`, '') ?? '' },
        timeoutMs: 180_000,
      });
      expect(demo.code, show(demo)).toBe(0);
      expect(demo.stdout, show(demo)).toMatch(/^demo succeeded in [\d.]+ s$/m);
      expect(demo.stdout, show(demo)).toMatch(/^ {2}hello\.txt \| \+\d+ -0 \(new file\)$/m);
      expect(demo.stdout, show(demo)).toMatch(/^your repository .*: untouched \(clean\)$/m);

      // doctor from the installed copy finds the request it replays, against a server the installed copy emulates.
      const doctor = await bash(
        besideServer('localagents emulate --port 0', 'emu.url', [
          'localagents doctor --base-url "$url" --json || code=$?',
        ]),
        { cwd: work, env, timeoutMs: 60_000 },
      );
      expect(doctor.code, show(doctor)).toBe(0);
      expect(JSON.parse(doctor.stdout)).toMatchObject({ ok: true, backend: 'llama.cpp' });

      // The dashboard from the installed copy serves its page and uPlot from the package's own dependencies.
      const page = await bash(
        besideServer('localagents dashboard', 'dash.url', [
          'for file in "" app.js style.css uplot.js uplot.css; do',
          '  printf "%s %s\\n" "$(node -e "fetch(process.argv[1]).then(r => console.log(r.status))" "$url$file")" "$file" || code=1',
          'done',
        ]),
        { cwd: work, env, timeoutMs: 60_000 },
      );
      expect(page.code, show(page)).toBe(0);
      expect(page.stdout.trim().split('\n'), show(page)).toEqual([
        '200 ',
        '200 app.js',
        '200 style.css',
        '200 uplot.js',
        '200 uplot.css',
      ]);
    } finally {
      await registry.close();
    }
  }, 300_000);
});
