import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';
import { git, gitRepo } from '../support/git-repo.js';
import { callTool, callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ metrics: true });
});
afterAll(() => emulator.close());

describe('run_agent over MCP', () => {
  it('runs a worktree job through the real claude and keeps the worktree with the written file', async () => {
    const { client, app } = await startTestApp(emulatorConfig(emulator.url));
    const repo = await gitRepo({ 'README.md': '# demo\n' });

    const models = await callTool(client, 'list_models');
    expect(models.endpoints).toEqual([expect.objectContaining({ name: 'emu', up: true })]);

    const before = emulator.requests.length;
    const started = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      cwd: repo,
      isolation: 'worktree',
    });
    expect(started.status).toMatch(/queued|running/);
    const id = String(started.id);

    let summary = await callTool(client, 'wait_job', { job_id: id, timeout_s: 100 });
    expect(summary.status).toBe('succeeded');
    expect(summary.files_touched).toEqual(['hello.txt']);
    expect(summary.possible_no_op).toBeUndefined();

    // Every answer costs the caller's context: a finished worktree job fits in 700 characters, each
    // path once, nothing null.
    const answered = await callToolRaw(client, 'wait_job', { job_id: id, timeout_s: 0 });
    const text = answered.content
      .map((block) => (block.type === 'text' ? block.text : ''))
      .join('');
    expect(JSON.parse(text)).toEqual(answered.structuredContent);
    expect(text.length, text).toBeLessThanOrEqual(700);
    expect(text).not.toContain('null');
    const worktreePath = String((summary.worktree as { path?: unknown } | undefined)?.path);
    const ours = text.replace(JSON.stringify(summary.result_text), '');
    expect(ours.split(worktreePath).length - 1).toBe(1);

    const record = await app.store.read(id);
    expect(record.worktree?.state).toBe('kept');
    expect(record.worktree?.branch).toBe(`local-agent/${id}`);
    const worktreeFile = join(record.worktree?.path ?? '/nonexistent', 'hello.txt');
    expect(await readFile(worktreeFile, 'utf8')).toBe('hello from the local model\n');
    expect(existsSync(join(repo, 'hello.txt'))).toBe(false);
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    expect(record.worktree?.diffstat?.files).toEqual([
      { path: 'hello.txt', insertions: 1, deletions: 0, untracked: true },
    ]);
    expect(record.served_model).toBeTruthy();
    expect(record.requested_model).toBeNull();
    expect(record.endpoint).toBe('emu');
    expect(record.base_url).toBe(emulator.url);
    expect(record.context_tokens).toBeGreaterThan(0);
    expect(record.context_source).toBe('probe');
    expect(record.cwd).toBe(repo);
    expect(record.run_cwd).toBe(record.worktree?.path);
    expect(record.isolation).toBe('worktree');
    expect(record.worktree?.base_ref).toBe('HEAD');
    expect(record.worktree?.review?.merge).toContain(`merge_job(job_id: "${id}"`);
    for (const time of [record.created_at, record.started_at, record.finished_at]) {
      expect(Date.parse(time ?? '')).toBeGreaterThan(0);
    }
    expect(record.duration_ms).toBeGreaterThan(0);
    expect(record.last_activity?.text).toMatch(/^says: Done/);
    expect(record.error).toBeNull();
    expect(record.terminal_reason).toBe('completed');
    expect(record.usage?.input_tokens).toBeGreaterThan(0);
    expect(record.usage?.output_tokens).toBeGreaterThan(0);
    expect(record.backend?.prompt_tokens).toBeGreaterThan(0);
    expect(record.backend?.cached_tokens).toBeGreaterThan(0);
    expect(record.backend?.cache_hit_rate).toBeGreaterThan(0);
    expect(record.backend?.generated_tokens).toBeGreaterThan(0);
    expect(record.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(record.turns).toBeGreaterThanOrEqual(3);
    expect(record.tool_calls).toBe(2);
    expect(record.result_text).toContain('Done: I wrote hello.txt');
    expect(record.backend?.requests).toBeGreaterThanOrEqual(3);
    expect(record.backend?.speed_scope).toBe('job');
    expect(record.backend?.generation_tokens_per_s).toBeGreaterThan(0);
    expect(record.claude_pid).toBeGreaterThan(0);

    // What the child was started with, as seen on the wire by the backend.
    // Non-essential traffic off: no `HEAD /api/hello`, and no title request (the one POST without tools).
    expect(emulator.requests.slice(before).filter((request) => request.method === 'HEAD')).toEqual(
      [],
    );
    const sent = emulator.requests
      .slice(before)
      .filter((request) => request.path.startsWith('/v1/messages'));
    expect(
      sent.map((request) => Array.isArray((request.body as { tools?: unknown }).tools)),
    ).toEqual(sent.map(() => true));
    const first = sent[0]?.body as { tools?: { name: string }[]; system?: { text: string }[] };
    const tools = (first.tools ?? []).map((tool) => tool.name);
    expect(tools).toEqual(expect.arrayContaining(['Write', 'Bash']));
    for (const forbidden of ['Agent', 'Task', 'Workflow', 'ListAgents', 'ScheduleWakeup']) {
      expect(tools).not.toContain(forbidden);
    }
    const system = (first.system ?? []).map((block) => block.text).join('\n');
    expect(system).toContain('You are a delegate');
    expect(system).not.toContain('x-anthropic-billing-header');
    // Deferred tools are listed one per line in a system message (contract §2.3); forbidden ones are not.
    const deferred = /deferred tools[^]*?\n\n/.exec(
      JSON.stringify((sent[0]?.body as { messages?: unknown }).messages ?? []).replace(
        /\\n/g,
        '\n',
      ),
    )?.[0];
    expect(deferred).toContain('\nWebFetch\n');
    for (const forbidden of ['EnterWorktree', 'ExitWorktree', 'SendMessage', 'CronCreate']) {
      expect(deferred).not.toContain(`\n${forbidden}\n`);
    }
    // API_TIMEOUT_MS from timeout_s (300 in emulatorConfig) reaches claude, which sends it in seconds.
    expect(sent[0]?.headers['x-stainless-timeout']).toBe('300');

    const dir = app.store.jobDir(id);
    const transcript = await readFile(join(dir, 'transcript.txt'), 'utf8');
    expect(transcript).toMatch(
      /^=== job .* start: endpoint emu, model .*, window \d+ tokens \(probe\), cwd /,
    );
    expect(transcript).toContain('tool Write(');
    expect(transcript).toContain('tool Bash(cat hello.txt)');
    expect(transcript).toContain('thinking: I will write the file first.');
    expect(transcript).toContain('assistant: I will create hello.txt.');
    expect(transcript).toMatch(/\nresult:\n {4}hello from the local model\n/);
    expect(transcript).toContain('stderr: [claude-code:unrecognized_model]');
    expect(transcript).toMatch(
      /=== done: succeeded after \d+ turns, 2 tool calls, \d+\.\d s; \d+ requests, \d+ prompt tokens/,
    );
    const events = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            kind: string;
            message: { modelUsage?: Record<string, { contextWindow: number }> };
          },
      );
    expect(events[0]?.kind).toBe('system/init');
    expect(events.at(-1)?.kind).toBe('result/success');
    // CLAUDE_CODE_MAX_CONTEXT_TOKENS took effect: claude reports the registry's window as its own.
    const modelUsage = Object.values(events.at(-1)?.message.modelUsage ?? {});
    expect(modelUsage.map((usage) => usage.contextWindow)).toContain(record.context_tokens);
    // The brief as given, as the Python original kept it.
    expect(await readFile(join(dir, 'task.txt'), 'utf8')).toBe('Write hello.txt and show it.\n');
    const requests = (await readFile(join(dir, 'requests.jsonl'), 'utf8')).trim().split('\n');
    expect(requests.length).toBe(record.backend?.requests);
    // The figures come from the shim's own counts; the file, written from the same lines, agrees.
    const usages = requests.map(
      (line) =>
        (JSON.parse(line) as { usage: { output_tokens: number; cache_read_input_tokens: number } })
          .usage,
    );
    expect(usages.reduce((sum, usage) => sum + usage.output_tokens, 0)).toBe(
      record.backend?.generated_tokens,
    );
    expect(usages.reduce((sum, usage) => sum + usage.cache_read_input_tokens, 0)).toBe(
      record.backend?.cached_tokens,
    );

    const diff = await callTool(client, 'job_diff', { job_id: id });
    expect(diff.diff).toContain('+hello from the local model');
    expect(diff.next_offset).toBeNull();
    const page = await callTool(client, 'job_diff', { job_id: id, offset: 1, max_lines: 2 });
    expect(page.diff).toBe(String(diff.diff).split('\n').slice(1, 3).join('\n'));
    expect(page.next_offset).toBe(3);
    expect(page.total_lines).toBe(diff.total_lines);
    const log = await callTool(client, 'job_log', { job_id: id, tail_lines: 3 });
    expect(String(log.transcript)).toContain('=== done: succeeded');
    expect(log).toMatchObject({ job_id: id, log_dir: app.store.jobDir(id) });
    summary = await callTool(client, 'job_status', { job_id: id });
    expect(summary.status).toBe('succeeded');
  });

  it('runs a worktree job in the same subdirectory of the worktree as the cwd it was given', async () => {
    const config = emulatorConfig(emulator.url).replace(
      'defaults:\n',
      'defaults:\n  dump_requests: true\n',
    );
    const { client, app } = await startTestApp(config);
    const repo = await gitRepo({ 'README.md': '# r\n', 'pkg/lib/a.txt': 'a\n' });
    const summary = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      cwd: join(repo, 'pkg', 'lib'),
      isolation: 'worktree',
      wait_s: 100,
    });
    expect(summary.status).toBe('succeeded');
    const record = await app.store.read(String(summary.id));
    const worktree = record.worktree?.path ?? '/nonexistent';
    expect(record.run_cwd).toBe(join(worktree, 'pkg', 'lib'));
    expect(await readFile(join(worktree, 'pkg', 'lib', 'hello.txt'), 'utf8')).toBe(
      'hello from the local model\n',
    );
    expect(record.worktree?.diffstat?.files.map((file) => file.path)).toEqual([
      'pkg/lib/hello.txt',
    ]);
    expect(existsSync(join(repo, 'pkg', 'lib', 'hello.txt'))).toBe(false);
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    // dump_requests: the shim's full request log sits beside requests.jsonl, one line per request.
    const full = await readFile(join(app.store.jobDir(record.id), 'requests_full.jsonl'), 'utf8');
    expect(full.trim().split('\n')).toHaveLength(record.backend?.requests ?? -1);
  });

  it('points absolute paths into the user tree at the worktree, so the user tree stays untouched', async () => {
    // The task is an absolute path into the user's repository, as Claude's briefs usually are; the
    // scripted model writes exactly the path the task names.
    const scripted = await startEmulator({
      script: [
        { toolCalls: [{ name: 'Write', input: { file_path: '${task}', content: 'draft\n' } }] },
        { text: 'Done: wrote the notes.' },
      ],
    });
    try {
      const { client, app } = await startTestApp(emulatorConfig(scripted.url));
      const repo = await gitRepo({ 'README.md': '# r\n' });
      const before = scripted.requests.length;
      const summary = await callTool(client, 'run_agent', {
        task: join(repo, 'notes.txt'),
        cwd: repo,
        isolation: 'worktree',
        wait_s: 100,
      });
      expect(summary.status).toBe('succeeded');
      const record = await app.store.read(String(summary.id));
      const worktree = record.worktree?.path ?? '/nonexistent';
      expect(await readFile(join(worktree, 'notes.txt'), 'utf8')).toBe('draft\n');
      expect(existsSync(join(repo, 'notes.txt'))).toBe(false);
      expect(await git(repo, 'status', '--porcelain')).toBe('');
      expect(record.task).toBe(join(repo, 'notes.txt'));
      const first = scripted.requests
        .slice(before)
        .find((request) => request.path.startsWith('/v1/messages'))?.body as {
        system?: { text: string }[];
      };
      const system = (first.system ?? []).map((block) => block.text).join('\n');
      expect(system).toContain(`isolated git worktree at ${worktree}`);
    } finally {
      await scripted.close();
    }
  });

  it('removes the worktree and branch of a worktree job that changed nothing', async () => {
    const quiet = await startEmulator({
      script: [{ text: 'Nothing needed changing; the README is already correct.' }],
    });
    try {
      const { client, app } = await startTestApp(emulatorConfig(quiet.url));
      const repo = await gitRepo();
      const started = await callTool(client, 'run_agent', {
        task: 'Check the README.',
        cwd: repo,
        isolation: 'worktree',
      });
      const summary = await callTool(client, 'wait_job', { job_id: String(started.id) });
      expect(summary.status).toBe('succeeded');
      const record = await app.store.read(String(started.id));
      expect(record.worktree?.state).toBe('removed');
      expect(existsSync(record.worktree?.path ?? '/')).toBe(false);
      expect(await git(repo, 'branch', '--list', 'local-agent/*')).toBe('');
      expect(await git(repo, 'worktree', 'list')).not.toContain(record.id);
    } finally {
      await quiet.close();
    }
  });
});
