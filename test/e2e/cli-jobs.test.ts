import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stripAnsi } from '../../src/cli/text-width.js';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { resetEmulatorAfterEach } from '../support/emulator-reset.js';
import type { JobRecord } from '../../src/jobs/job.js';
import { newJobRecord } from '../../src/jobs/record.js';
import { createJobStore } from '../../src/jobs/store.js';
import { isolatedClaudeEnv } from '../support/claude-env.js';
import { gitRepo } from '../support/git-repo.js';
import { emulatorConfig, runningClaudePids } from '../support/mcp-client.js';
import { CLI_MAIN as MAIN, runCliProcess as cli, type CliResult } from '../support/cli.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

let emulator: Emulator;
beforeAll(async () => {
  if (!existsSync(MAIN))
    throw new Error('dist/cli/main.js is missing: run `npm run build` first (npm test does)');
  emulator = await startEmulator();
});
resetEmulatorAfterEach(() => emulator);
afterAll(() => emulator.close());

async function setup(extraConfig = '') {
  const configDir = await tempDir(
    { 'models.yaml': emulatorConfig(emulator.url, extraConfig) },
    'localagents-config-',
  );
  const stateDir = await tempDir({}, 'localagents-state-');
  const env = await isolatedClaudeEnv({
    LOCALAGENTS_STATE_DIR: stateDir,
    LOCALAGENTS_CONFIG: join(configDir, 'models.yaml'),
  });
  return { env, stateDir, cwd: configDir };
}

describe('localagents run / jobs / show / log / diff', () => {
  it('runs a worktree job with --json as the only stdout, then shows, logs and diffs it', async () => {
    const { env, cwd } = await setup();
    const repo = await gitRepo();
    const run = await cli(
      ['run', 'Write hello.txt and show it.', '--cwd', repo, '--isolation', 'worktree', '--json'],
      { env, cwd },
    );
    expect(run.code).toBe(0);
    const record = JSON.parse(run.stdout) as JobRecord;
    expect(record.status).toBe('succeeded');
    expect(record.files_touched).toEqual(['hello.txt']);
    expect(run.stderr).toContain(`job ${record.id} started`);
    expect(run.stderr).toMatch(/\[\d+\.\ds\] running · turn \d+ · tool Bash\(cat hello.txt\)/);

    const jobs = await cli(['jobs'], { env, cwd });
    expect(jobs.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+MODEL\s+TIME\s+FILES\s+TASK$/);
    expect(jobs.stdout).toMatch(new RegExp(`${record.id}\\s+succeeded`));
    const listed = JSON.parse((await cli(['jobs', '--json'], { env, cwd })).stdout) as JobRecord[];
    expect(listed.map((job) => job.id)).toEqual([record.id]);

    const show = await cli(['show', record.id], { env, cwd });
    expect(show.stdout).toContain(`job ${record.id}: succeeded`);
    expect(show.stdout).toContain('files touched: hello.txt');
    expect(show.stdout).toContain(
      `merge:  localagents merge ${record.id} [--strategy squash|cherry-pick] (into main)`,
    );

    const log = await cli(['log', record.id], { env, cwd });
    expect(log.stdout).toMatch(/^=== job /);
    expect(log.stdout).toContain('=== done: succeeded');
    const tail = await cli(['log', record.id, '-n', '1'], { env, cwd });
    expect(tail.stdout).toMatch(/^=== done: succeeded[^\n]*\n$/);

    const diff = await cli(['diff', record.id], { env, cwd });
    expect(diff.stdout).toContain('+++ b/hello.txt');
    expect(diff.stdout).toContain('+hello from the local model');

    const badStrategy = await cli(['merge', record.id, '--strategy', 'rebase'], { env, cwd });
    expect(badStrategy.code).toBe(2);
    expect(badStrategy.stderr).toContain('--strategy must be merge, squash or cherry-pick');
    const merge = await cli(['merge', record.id, '--strategy', 'squash'], { env, cwd });
    expect(merge.stdout).toMatch(
      new RegExp(
        `^job ${record.id}: merged into main \\(squash, now [0-9a-f]{12}\\); worktree and branch removed\n$`,
      ),
    );
    expect(await readFile(join(repo, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
    const discard = await cli(['discard', record.id], { env, cwd });
    expect(discard.code).toBe(1);
    expect(discard.stderr).toContain('worktree is merged: there is nothing left to merge');
  });

  // util-linux `script` gives the command a pseudo-terminal, so stderr is a TTY as in a user's shell.
  it.skipIf(!existsSync('/usr/bin/script'))(
    'shows a rewritten status line with elapsed time, turn and last tool on a TTY',
    async () => {
      const { env, cwd } = await setup();
      const command = [process.execPath, MAIN, 'run', "'Write hello.txt.'", '--cwd', cwd].join(' ');
      const run = await new Promise<CliResult>((resolve) => {
        execFile(
          '/usr/bin/script',
          ['-qefc', command, '/dev/null'],
          { env, cwd, timeout: 100_000 },
          (error, stdout, stderr) =>
            resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      });
      expect(run.code).toBe(0);
      // Each redraw returns to the line start and clears it (CR, ESC [K) before the new status; the
      // status word is coloured on a terminal.
      const redraws = run.stdout.split('\r\u001b[K').slice(1).map(stripAnsi);
      expect(run.stdout).toContain('\u001b[36mrunning\u001b[39m');
      expect(redraws.length).toBeGreaterThan(2);
      expect(redraws).toContainEqual(
        expect.stringMatching(/^\[\d+\.\ds\] running · turn \d+ · tool Bash\(cat hello\.txt\)$/),
      );
      // The last clear leaves the line empty for the summary.
      expect(redraws.at(-1)).toMatch(/^job \S+: succeeded\r?\n/);
    },
  );

  it('prints the summary on stdout without --json and exits 1 when the job fails', async () => {
    const { env, cwd } = await setup();
    // The default script needs three turns: one allowed turn ends in error_max_turns.
    const run = await cli(['run', 'Write hello.txt.', '--cwd', cwd, '--max-turns', '1'], {
      env,
      cwd,
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^job \S+: failed\n/);
    expect(run.stdout).toContain('error (max_turns):');
  });

  it('answers a model that is not running with exit 1 and the menu notes', async () => {
    const { env, cwd } = await setup(
      'models:\n  big:\n    host: gpu-box\n    notes: start it with ./big.sh\n',
    );
    const run = await cli(['run', 'x', '--model', 'big'], { env, cwd });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('big');
    expect(run.stderr).toContain('gpu-box');
  });

  it('rejects a missing task and a bad job id with exit 2', async () => {
    const { env, cwd } = await setup();
    const noTask = await cli(['run'], { env, cwd });
    expect(noTask.code).toBe(2);
    expect(noTask.stderr).toContain('the task is missing');
    const badId = await cli(['show', '../etc'], { env, cwd });
    expect(badId.code).toBe(2);
    expect(badId.stderr).toContain('is not a job id');
    // A zero timeout or turn budget could never succeed: refused like the MCP tool refuses it.
    for (const flag of ['--timeout', '--max-turns']) {
      const zero = await cli(['run', 'x', '--cwd', cwd, flag, '0'], { env, cwd });
      expect(zero.code).toBe(2);
      expect(zero.stderr).toContain(`${flag} must be a whole number of at least 1 (got "0")`);
    }
  });

  it('names a damaged job.json with its fix in show and jobs, and still lists the other jobs', async () => {
    const { env, cwd, stateDir } = await setup();
    const store = createJobStore(stateDir);
    const good = '20261129-000000-aaaa';
    const bad = '20261129-000001-bbbb';
    await store.save({
      ...newJobRecord({
        id: good,
        task: 'an intact job',
        cwd,
        isolation: 'none',
        permissionMode: 'acceptEdits',
        maxTurns: 5,
        timeoutS: 60,
      }),
      status: 'succeeded',
    });
    await store.write(bad, 'job.json', '{"version": 1, "id": "20261129-0000');

    const show = await cli(['show', bad], { env, cwd });
    expect(show.code).toBe(1);
    expect(show.stderr).toMatch(new RegExp(`^job ${bad}: .*job\\.json is damaged: it is not JSON`));
    expect(show.stderr).toContain(`fix: the job's other files`);
    expect(show.stderr).not.toContain('this is a bug');

    const jobs = await cli(['jobs', '--all'], { env, cwd });
    expect(jobs.code).toBe(0);
    expect(jobs.stdout).toContain(good);
    expect(jobs.stderr).toContain(`damaged: job ${bad}:`);
  });

  it('detaches a job, follows its log to the end, and cancels a detached job from another process', async () => {
    const { env, cwd, stateDir } = await setup();
    const detached = await cli(['run', 'Write hello.txt.', '--cwd', cwd, '--detach'], { env, cwd });
    expect(detached.code).toBe(0);
    const id = detached.stdout.trim();
    expect(id).toMatch(/^\d{8}-\d{6}-[0-9a-z]{4}$/);
    const follow = await cli(['log', id, '-f'], { env, cwd });
    expect(follow.stdout).toContain('=== done: succeeded');

    emulator.injectFaults([{ kind: 'hold' }]);
    const before = emulator.requests.length;
    const hanging = (
      await cli(['run', 'Write hello.txt.', '--cwd', cwd, '--detach'], { env, cwd })
    ).stdout.trim();
    const store = createJobStore(stateDir);
    const pid = await waitFor(async () => (await store.read(hanging)).claude_pid ?? undefined, {
      timeoutMs: 30_000,
    });
    await emulator.waitForRequest(
      (request) => request.id > before && request.path.startsWith('/v1/messages'),
      30_000,
    );
    const cancel = await cli(['cancel', hanging], { env, cwd });
    expect(cancel.stdout).toBe(`job ${hanging}: cancelled\n`);
    expect(cancel.code).toBe(0);
    expect(await runningClaudePids()).not.toContain(pid);
  });
});

describe('localagents agents', () => {
  it('lists the subagents a job in a directory can run as, with the model each would use', async () => {
    const root = await tempDir({
      '.claude/agents/reviewer.md':
        '---\ndescription: Reads and reports.\ntools: Read, Grep\nlocalagents:\n  model: qwen-x\n---\nReview.\n',
    });
    const { env } = await setup();
    const json = await cli(['agents', '--cwd', root, '--json'], { env, cwd: root });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        name: 'reviewer',
        scope: 'project',
        file: join(root, '.claude', 'agents', 'reviewer.md'),
        description: 'Reads and reports.',
        tools: ['Read', 'Grep'],
        model: 'qwen-x',
        verify: null,
        isolation: null,
      },
    ]);
    const table = await cli(['agents', '--cwd', root], { env, cwd: root });
    expect(table.stdout).toMatch(/^reviewer +qwen-x +Read,Grep +project +Reads and reports\.$/m);
  });
});

describe('localagents demo', () => {
  it('runs the whole pipeline and prints a succeeded job, transcript, request log and diffstat', async () => {
    const env = await isolatedClaudeEnv();
    const started = Date.now();
    const demo = await cli(['demo'], { env, cwd: await tempDir() });
    expect(demo.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(demo.stdout).toContain('the model is a scripted emulator');
    expect(demo.stdout).toMatch(/job \S+: succeeded/);
    expect(demo.stdout).toContain('── transcript (last lines)');
    expect(demo.stdout).toMatch(/\n {2}\[\d+\.\ds\] running · turn \d+ · tool Write\(/);
    expect(demo.stdout).toContain('── request log (requests.jsonl');
    expect(demo.stdout).toMatch(/prefix: \d+ prompts extended the previous one/);
    expect(demo.stdout).toMatch(/rewrites: fold_system ×\d+/);
    expect(demo.stdout).toMatch(/cached \d+ \(cache hit rate \d+%\)/);
    // Each summary is printed once: the request log and the diffstat have their own sections.
    expect(demo.stdout.match(/requests: \d+ \(\d+ failed\)/g)).toHaveLength(1);
    expect(demo.stdout.match(/changed, \+1 -0/g)).toEqual(['changed, +1 -0']);
    expect(demo.stdout).toContain('1 file changed, +1 -0 on local-agent/');
    expect(demo.stdout).toContain('hello.txt | +1 -0 (new file)');
    expect(demo.stdout).toContain('untouched (clean)');
    expect(demo.stdout).toMatch(/demo succeeded in \d+\.\d s/);
  });

  it.each([
    ['ollama', 'Ollama', 'cache: not reported by the backend'],
    ['lmstudio', 'LM Studio', 'prompt tokens:'],
  ])('runs on the %s look-alike with --backend', async (backend, label, figures) => {
    const demo = await cli(['demo', '--backend', backend], {
      env: await isolatedClaudeEnv(),
      cwd: await tempDir(),
    });
    expect(demo.code).toBe(0);
    expect(demo.stdout).toContain(`(${label} look-alike`);
    expect(demo.stdout).toMatch(/rewrites: fold_system ×\d+/);
    expect(demo.stdout).toContain(figures);
    expect(demo.stdout).toMatch(/demo succeeded in \d+\.\d s/);
  });

  it('refuses a backend it cannot play, naming the four it can', async () => {
    const demo = await cli(['demo', '--backend', 'tgi'], {
      env: await isolatedClaudeEnv(),
      cwd: await tempDir(),
    });
    expect(demo.code).toBe(2);
    expect(demo.stderr).toContain(
      '--backend must be llama.cpp, vllm, ollama or lmstudio (got "tgi")',
    );
  });
});
