import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import type { JobRecord } from '../../src/jobs/job.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { CLI_MAIN as MAIN } from '../support/cli.js';
import { gitRepo } from '../support/git-repo.js';
import { emulatorConfig } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * `localagents dashboard` in a real browser: Debian's Chromium driven by playwright-core (no browser download).
 * Two jobs run by other processes (`localagents run`) on the emulator; the page must show them, a status change
 * arriving live, the timeline chart with one point per logged request, and the endpoint. A screenshot is kept.
 */
const CHROMIUM = process.env.LOCALAGENTS_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
// CI installs Chromium (.ci/run): there a missing browser is a failure, never a silent skip.
const mustRun = process.env.CI !== undefined && process.env.CI !== '';
if (!haveChromium && !mustRun) {
  process.stderr.write(
    `dashboard browser test skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set LOCALAGENTS_CHROMIUM)\n`,
  );
}

let emulator: Emulator;
let vllm: Emulator;
let browser: Browser | undefined;
beforeAll(async () => {
  emulator = await startEmulator({ metrics: true });
  vllm = await startEmulator({ backend: 'vllm', servedNames: ['qwen-vllm'] });
  if (!haveChromium) {
    if (mustRun) {
      throw new Error(
        `Chromium is not installed at ${CHROMIUM}: the dashboard cannot be tested. .ci/run installs Debian's chromium package; install it (apt-get install chromium) or point LOCALAGENTS_CHROMIUM at one`,
      );
    }
    return;
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Offline machine: no background fetches (each one refused, many at a time), no sandbox as root in CI.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await emulator?.close();
  await vllm?.close();
});

/** The llama.cpp emulator (`emu`, where the jobs run) and a vLLM one (`vl`, for its KV cache figure). */
const twoEndpoints = () =>
  emulatorConfig(emulator.url, `  vl:\n    base_url: ${vllm.url}\n    backend: vllm\n`);

function cliProcess(args: string[], env: Record<string, string>, cwd: string): ChildProcess {
  return spawn(process.execPath, [MAIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    if (!child.stdout) return reject(new Error('no stdout'));
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve(line));
    child.once('exit', (code) => reject(new Error(`exited ${code} before a line: ${stderr}`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

async function requestLines(stateDir: string, id: string): Promise<number> {
  const text = await readFile(join(stateDir, 'jobs', id, 'requests.jsonl'), 'utf8');
  return text.split('\n').filter((line) => line.includes('"kind":"request"')).length;
}

const jobRow = (page: Page, id: string, status?: string) =>
  page.locator(`#jobs tbody tr[data-job-id="${id}"]${status ? `[data-status="${status}"]` : ''}`);

describe.skipIf(!haveChromium && !mustRun)('localagents dashboard in Chromium', () => {
  it('shows two jobs run by other processes live: rows, a status change, the request timeline and the endpoint', async () => {
    if (!browser) throw new Error('no browser');
    const configDir = await tempDir({ 'models.yaml': twoEndpoints() }, 'localagents-config-');
    const stateDir = await tempDir({}, 'localagents-state-');
    const env = await isolatedClaudeEnv({
      LOCALAGENTS_STATE_DIR: stateDir,
      LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
    });
    const dashboard = cliProcess(['dashboard', '--port', '0'], env, configDir);
    try {
      const url = await firstLine(dashboard);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/[\w-]{22}\/$/);
      expect((await readFile(join(stateDir, 'dashboard.url'), 'utf8')).trim()).toBe(url);
      expect((await stat(join(stateDir, 'dashboard.url'))).mode & 0o777).toBe(0o600);

      const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
      let transferred = 0;
      page.on('response', (response) => {
        const length = Number(response.headers()['content-length'] ?? 0);
        if (response.url().startsWith(url)) transferred += length;
      });
      await page.goto(url);
      await page.locator('#connection[data-state="open"]').waitFor();
      await page.locator('#no-jobs').waitFor();
      const endpoint = page.locator('.endpoint[data-endpoint="emu"][data-up="true"]');
      await endpoint.waitFor();
      expect(await endpoint.textContent()).toContain('qwen');
      expect(await endpoint.textContent()).toMatch(/slots: 0 busy, 4 free of 4/);
      const vllmCard = page.locator('.endpoint[data-endpoint="vl"][data-up="true"]');
      await vllmCard.waitFor();
      expect(await vllmCard.textContent()).toMatch(/qwen-vllm · window [\d,]+ tokens/);
      expect(await vllmCard.textContent()).toMatch(/KV cache \d+\.\d % · 0 running, 0 waiting/);
      // Everything the page needs, as the browser fetched it (gzip): a light page.
      process.stdout.write(`dashboard page transfer: ${transferred} bytes\n`);
      expect(transferred).toBeGreaterThan(10_000);
      expect(transferred).toBeLessThan(60_000);

      // Job A: its first model request is held by the emulator until the test lets it go.
      emulator.injectFaults([{ kind: 'hold', count: 1 }]);
      const repoA = await gitRepo();
      const jobA = cliProcess(
        ['run', 'Write hello.txt and show it.', '--cwd', repoA, '--json'],
        env,
        configDir,
      );
      const jobAOut: Buffer[] = [];
      jobA.stdout?.on('data', (chunk: Buffer) => jobAOut.push(chunk));
      await waitFor(() => emulator.heldRequests() === 1, { timeoutMs: 60_000, what: 'job A held' });
      const rowA = page.locator('#jobs tbody tr[data-status="running"]');
      await rowA.waitFor();
      const idA = (await rowA.getAttribute('data-job-id')) ?? '';
      expect(idA).not.toBe('');
      // The first job selects itself; its transcript streams as it grows.
      await page.locator('#detail-id', { hasText: idA }).waitFor();
      await page.locator('#transcript', { hasText: '=== job' }).waitFor();

      // Job B runs to the end while A waits.
      const repoB = await gitRepo();
      // B works in a worktree and is verified: the page shows its diffstat and verification.
      const jobB = cliProcess(
        [
          'run',
          'Write hello.txt and show it.',
          '--cwd',
          repoB,
          '--isolation',
          'worktree',
          '--verify',
          'test -f hello.txt',
          '--json',
        ],
        env,
        configDir,
      );
      const jobBOut: Buffer[] = [];
      jobB.stdout?.on('data', (chunk: Buffer) => jobBOut.push(chunk));
      expect(await exited(jobB)).toBe(0);
      const recordB = JSON.parse(Buffer.concat(jobBOut).toString()) as JobRecord;
      await jobRow(page, recordB.id, 'succeeded').waitFor();
      await expect(page.locator('#jobs tbody tr').count()).resolves.toBe(2);
      expect(await jobRow(page, idA, 'running').count()).toBe(1);

      // A's status changes live, on the same page, without a reload.
      const navigations: string[] = [];
      page.on('framenavigated', (frame) => navigations.push(frame.url()));
      expect(emulator.releaseHolds()).toBe(1);
      expect(await exited(jobA)).toBe(0);
      expect((JSON.parse(Buffer.concat(jobAOut).toString()) as JobRecord).id).toBe(idA);
      await jobRow(page, idA, 'succeeded').waitFor();
      await page.locator('#detail-status', { hasText: 'succeeded' }).waitFor();
      await page.locator('#transcript', { hasText: '=== done: succeeded' }).waitFor();
      expect(navigations.filter((frame) => !frame.includes('#'))).toEqual([]);

      // The timeline has one point per request the shim logged for the job, drawn by uPlot.
      const requests = await requestLines(stateDir, idA);
      expect(requests).toBeGreaterThanOrEqual(2);
      await page.locator(`#chart-time[data-points="${requests}"]`).waitFor();
      await page.locator(`#chart-tokens[data-points="${requests}"]`).waitFor();
      expect(await page.locator('#chart-time canvas').count()).toBe(1);
      expect(await page.locator('#requests tbody tr').count()).toBe(requests);
      expect(await page.locator('#requests tbody tr').first().textContent()).toContain(
        '/v1/messages',
      );

      // Selecting the other job switches the detail and its chart to that job's own requests.
      await jobRow(page, recordB.id).click();
      await page.locator('#detail-id', { hasText: recordB.id }).waitFor();
      const requestsB = await requestLines(stateDir, recordB.id);
      await page.locator(`#chart-time[data-points="${requestsB}"]`).waitFor();
      expect(await page.locator('#detail-facts').textContent()).toContain('qwen');
      await page.locator('#detail-diffstat', { hasText: 'Changes: 1 files, +1' }).waitFor();
      expect(await page.locator('#diffstat').textContent()).toContain('hello.txt');
      expect(await page.locator('#detail-verification').textContent()).toContain(
        'Verification passed: test -f hello.txt (exit 0',
      );

      // Slots over time: the endpoint's chart has accumulated probes.
      await waitFor(
        async () =>
          Number(
            await page
              .locator('.endpoint[data-endpoint="emu"] .sparkline')
              .getAttribute('data-points'),
          ) >= 2,
        { timeoutMs: 20_000, what: 'two endpoint samples' },
      );

      const shots = await mkdtemp(join(tmpdir(), 'localagents-dashboard-screens-'));
      const shot = join(shots, 'dashboard.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect((await stat(shot)).size).toBeGreaterThan(10_000);
      process.stdout.write(`dashboard screenshot: ${shot}\n`);
    } finally {
      dashboard.kill('SIGTERM');
      await exited(dashboard);
    }
    // The URL note is removed with the dashboard that wrote it.
    expect(existsSync(join(stateDir, 'dashboard.url'))).toBe(false);
  });
});

describe('localagents dashboard over HTTP', () => {
  it('answers nothing without the token, and only to loopback Host names', async () => {
    const stateDir = await tempDir({}, 'localagents-state-');
    const configDir = await tempDir({ 'models.yaml': twoEndpoints() }, 'localagents-config-');
    const env = await isolatedClaudeEnv({
      LOCALAGENTS_STATE_DIR: stateDir,
      LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
    });
    const dashboard = cliProcess(['dashboard'], env, configDir);
    try {
      const url = new URL(await firstLine(dashboard));
      const base = `http://127.0.0.1:${url.port}`;
      expect((await fetch(`${base}/`)).status).toBe(404);
      expect((await fetch(`${base}/d/not-the-token/`)).status).toBe(404);
      expect((await fetch(`${base}/d/not-the-token/events`)).status).toBe(404);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      // A page on another name that resolves here (DNS rebinding) gets nothing.
      const rebound = await new Promise<number>((resolve, reject) => {
        import('node:http')
          .then(({ get }) =>
            get(url, { headers: { host: `evil.example:${url.port}` } }, (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            }).on('error', reject),
          )
          .catch(reject);
      });
      expect(rebound).toBe(404);
      // A job id that is not one is refused before any path is built.
      expect((await fetch(new URL('jobs/..%2F..%2Fetc/events', url))).status).toBe(404);
    } finally {
      dashboard.kill('SIGTERM');
      await exited(dashboard);
    }
  });

  it('says what is wrong with models.yaml, with the fix, instead of endpoints', async () => {
    const stateDir = await tempDir({}, 'localagents-state-');
    const configDir = await tempDir(
      { 'models.yaml': 'endpoints:\n  box:\n    base_url: not a url\n' },
      'localagents-config-',
    );
    const env = await isolatedClaudeEnv({
      LOCALAGENTS_STATE_DIR: stateDir,
      LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
    });
    const dashboard = cliProcess(['dashboard'], env, configDir);
    try {
      const url = await firstLine(dashboard);
      const events = await fetch(new URL('events', url));
      const reader = events.body?.getReader();
      let text = '';
      while (!text.includes('event: endpoints\n')) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        text += Buffer.from(chunk.value).toString();
      }
      await reader?.cancel();
      const data = /event: endpoints\ndata: (.*)\n/.exec(text)?.[1] ?? '{}';
      const sample = JSON.parse(data) as { endpoints: unknown[]; config_problems: string[] };
      expect(sample.endpoints).toEqual([]);
      expect(sample.config_problems.join('\n')).toMatch(
        /models\.yaml:3 endpoints\.box\.base_url: .*\n {2}fix: /,
      );
    } finally {
      dashboard.kill('SIGTERM');
      await exited(dashboard);
    }
  });

  it('starts beside the MCP server with serve --dashboard: URL on stderr and in the state directory', async () => {
    const stateDir = await tempDir({}, 'localagents-state-');
    const configDir = await tempDir({ 'models.yaml': twoEndpoints() }, 'localagents-config-');
    const env = await isolatedClaudeEnv({
      LOCALAGENTS_STATE_DIR: stateDir,
      LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
    });
    const serve = spawn(process.execPath, [MAIN, 'serve', '--dashboard'], {
      env,
      cwd: configDir,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      serve.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const lines = createInterface({ input: serve.stderr });
      const url = await new Promise<string>((resolve, reject) => {
        lines.on('line', (line) => {
          const found = /dashboard at (\S+)/.exec(line);
          if (found?.[1]) resolve(found[1]);
        });
        serve.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
      });
      expect((await readFile(join(stateDir, 'dashboard.url'), 'utf8')).trim()).toBe(url);
      const events = await fetch(new URL('events', url));
      expect(events.headers.get('content-type')).toContain('text/event-stream');
      const reader = events.body?.getReader();
      const first = await reader?.read();
      expect(Buffer.from(first?.value ?? new Uint8Array()).toString()).toContain('event: hello');
      await reader?.cancel();
      // stdout is JSON-RPC's alone: nothing was written there without a request.
      expect(stdout).toBe('');
    } finally {
      serve.stdin.end();
      await exited(serve);
    }
    expect(existsSync(join(stateDir, 'dashboard.url'))).toBe(false);
  });
});
