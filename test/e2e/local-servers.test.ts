import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { TRUNCATED_PROMPT_REPLY } from '../../src/emulator/script.js';
import type { RequestLogLine } from '../../src/shim/log.js';
import { callTool, startTestApp } from '../support/mcp-client.js';
import { tempDir } from '../support/temp-dir.js';

/**
 * Ollama and LM Studio with the real claude (docs/backends.md): a whole job on each, a window too small answered
 * like a model that is not running, and Ollama's silent truncation never reaching the model's answer to Claude Code.
 */
async function server(options: EmulatorOptions) {
  const emu = await startEmulator(options);
  onTestFinished(() => emu.close());
  return emu;
}

function config(url: string, backend: string, extra = ''): string {
  return `defaults:\n  timeout_s: 120\n  max_turns: 20\nendpoints:\n  local:\n    base_url: ${url}\n    backend: ${backend}\n    host: laptop\n${extra}`;
}

async function requestLog(dir: string): Promise<RequestLogLine[]> {
  const text = await readFile(join(dir, 'requests.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RequestLogLine);
}

describe.each([
  ['ollama', 'qwen3-coder:30b'],
  ['lmstudio', 'qwen/qwen3-coder-30b'],
] as const)('a job on %s', (backend, served) => {
  it('runs through the real claude, folded and logged, with the window the server reports', async () => {
    const emu = await server({ backend, nCtx: 65536 });
    const { client, app } = await startTestApp(config(emu.url, backend));
    const listed = await callTool(client, 'list_models');
    expect(listed.endpoints).toEqual([
      expect.objectContaining({
        backend,
        up: true,
        models: [served],
        context: { [served]: 65536 },
      }),
    ]);
    const cwd = await tempDir();
    const done = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      model: 'qwen3-coder',
      cwd,
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    expect(await readFile(join(cwd, 'hello.txt'), 'utf8')).toBe('hello from the local model\n');
    const record = await app.store.read(String(done.id));
    expect(record).toMatchObject({
      served_model: served,
      context_tokens: 65536,
      context_source: 'probe',
    });
    const lines = await requestLog(app.store.jobDir(record.id));
    const messages = lines.filter(
      (line) => line.path.startsWith('/v1/messages') && !line.path.includes('count'),
    );
    expect(messages.every((line) => line.status === 200)).toBe(true);
    // Claude Code's mid-conversation system messages are folded: LM Studio rejects them, old Ollama renderers 500.
    expect(messages.some((line) => line.rewrites.includes('fold_system'))).toBe(true);
    for (const request of emu.requests.filter((r) => r.path === '/v1/messages')) {
      const sent = request.body as { messages: { role: string }[] };
      expect(sent.messages.every((message) => message.role !== 'system')).toBe(true);
    }
    if (backend === 'ollama') {
      // Ollama's message_start has a four-characters estimate: claude is told the guard's count instead.
      expect(messages.some((line) => line.rewrites.includes('count_prompt_tokens'))).toBe(true);
      // Ollama reports no cache figures: the record says so instead of 0 %.
      expect(record.backend?.cache_reported).toBe(false);
      expect(record.backend?.cache_hit_rate).toBeNull();
    }
  });

  it('answers a window too small like a model that is not running, with the numbers, and sends nothing', async () => {
    const emu = await server({ backend, nCtx: 4096, jitContext: 4096 });
    const { client } = await startTestApp(config(emu.url, backend));
    const answer = await callTool(client, 'run_agent', {
      task: 'Write hello.txt.',
      model: 'qwen3-coder',
      cwd: await tempDir(),
    });
    expect(answer).toMatchObject({ status: 'model_unavailable', error: 'model_unavailable' });
    const message = String(answer.message);
    expect(message).toContain(
      `${served} on local has a 4096-token window, too small for Claude Code`,
    );
    expect(message).toContain('a job needs at least 20480');
    expect(message).toContain(
      backend === 'ollama'
        ? 'OLLAMA_CONTEXT_LENGTH=65536'
        : `lms load ${served} --context-length 65536`,
    );
    expect(emu.requests.filter((r) => r.path.startsWith('/v1/messages'))).toEqual([]);
  });
});

describe('finding them', () => {
  it('detects Ollama and LM Studio behind backend: other by their own routes', async () => {
    const ollama = await server({ backend: 'ollama', nCtx: 65536 });
    const lmstudio = await server({ backend: 'lmstudio', nCtx: 65536 });
    const { client } = await startTestApp(
      `endpoints:\n  a:\n    base_url: ${ollama.url}\n    backend: other\n  b:\n    base_url: ${lmstudio.url}\n`,
    );
    const listed = await callTool(client, 'list_models');
    expect(listed.endpoints).toEqual([
      expect.objectContaining({
        name: 'a',
        up: true,
        backend: 'ollama',
        models: ['qwen3-coder:30b'],
      }),
      expect.objectContaining({
        name: 'b',
        up: true,
        backend: 'lmstudio',
        models: ['qwen/qwen3-coder-30b'],
        capacity: { total: 4, source: 'backend' },
      }),
    ]);
  });

  it('sends LM Studio its key (Require Authentication) and says which variable is missing', async () => {
    const emu = await server({ backend: 'lmstudio', nCtx: 65536, apiKey: 'sk-lms-secret' });
    const withKey = config(emu.url, 'lmstudio', '    api_key_env: LMS_KEY\n');
    const locked = await startTestApp(withKey);
    const listed = await callTool(locked.client, 'list_models');
    expect(listed.endpoints).toEqual([
      expect.objectContaining({
        up: false,
        status: 'unauthorized',
        error: expect.stringContaining('LMS_KEY is not set in this environment') as unknown,
      }),
    ]);
    const { client } = await startTestApp(withKey, { env: { LMS_KEY: 'sk-lms-secret' } });
    const done = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    const sent = emu.requests.filter((r) => r.path.startsWith('/v1/messages'));
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((r) => r.headers.authorization === 'Bearer sk-lms-secret')).toBe(true);
  });
});

describe('models installed but not loaded', () => {
  it('lists them with the window they will load with, runs one whose Modelfile says it, asks for the rest', async () => {
    const emu = await server({
      backend: 'ollama',
      servedNames: ['qwen3-coder:30b', 'devstral:24b'],
      loadedNames: [],
      numCtxParameter: 65536,
      jitLoadMs: 50,
    });
    const { client, app } = await startTestApp(
      config(emu.url, 'ollama', 'models:\n  devstral:\n    notes: the small coder\n'),
    );
    const listed = await callTool(client, 'list_models');
    const [endpoint] = listed.endpoints as { models: string[]; installed: unknown[] }[];
    expect(endpoint?.models).toEqual([]);
    expect(endpoint?.installed).toEqual([
      expect.objectContaining({ id: 'qwen3-coder:30b', state: 'not_loaded', context: 65536 }),
      expect.objectContaining({ id: 'devstral:24b', state: 'not_loaded', context: 65536 }),
    ]);
    expect(listed.models).toEqual([
      expect.objectContaining({
        name: 'devstral',
        available: true,
        running: false,
        loaded: false,
        served_model: 'devstral:24b',
        context: 65536,
        context_source: 'predicted',
      }),
    ]);
    const cwd = await tempDir();
    const done = await callTool(client, 'run_agent', {
      task: 'Write hello.txt and show it.',
      model: 'devstral',
      cwd,
      wait_s: 100,
    });
    expect(done.status).toBe('succeeded');
    const record = await app.store.read(String(done.id));
    expect(record).toMatchObject({ context_tokens: 65536, context_source: 'predicted' });
    expect(record.warnings.join(' ')).toContain('first request loads it');
    // The first request loaded it: Ollama lists it as loaded now.
    const after = await callTool(client, 'list_models');
    expect((after.endpoints as { models: string[] }[])[0]?.models).toContain('devstral:24b');
  });

  it('asks for a load when the window a model would load with is unknown (no num_ctx; LM Studio)', async () => {
    for (const backend of ['ollama', 'lmstudio'] as const) {
      const emu = await server({ backend, loadedNames: [] });
      const { client } = await startTestApp(config(emu.url, backend));
      const answer = await callTool(client, 'run_agent', {
        task: 'Write hello.txt.',
        model: 'qwen3-coder',
        cwd: await tempDir(),
      });
      expect(answer.status).toBe('model_unavailable');
      expect(String(answer.message)).toContain(
        'is installed on local but not loaded, and the window it would get is unknown until it loads',
      );
      expect(String(answer.message)).toContain(
        backend === 'ollama' ? 'OLLAMA_CONTEXT_LENGTH=65536' : '--context-length 65536',
      );
      expect(emu.requests.filter((r) => r.path.startsWith('/v1/messages'))).toEqual([]);
    }
  });
});

describe('Ollama’s silent truncation', () => {
  it('never lets an answer to a cut prompt reach claude: the job fails with prompt is too long, logged', async () => {
    // Digits are a token each in the emulator's rule (and dense in real tokenizers), four times what Claude Code's
    // own four-characters-a-token estimate says: Claude Code sends a first prompt about 1.2 times the 20480-token
    // window, which Ollama would cut to half the window and answer 200. CLAUDE_CODE_MAX_CONTEXT_TOKENS is raised
    // for the delegate (an endpoint env, as a user may set) so that Claude Code's own check does not stop it first.
    const emu = await server({ backend: 'ollama', nCtx: 20480 });
    const { client, app } = await startTestApp(
      config(emu.url, 'ollama', '    env:\n      CLAUDE_CODE_MAX_CONTEXT_TOKENS: "200000"\n'),
    );
    const done = await callTool(client, 'run_agent', {
      task: `Sum these numbers: ${'7 '.repeat(7000)}`,
      model: 'qwen3-coder',
      cwd: await tempDir(),
      wait_s: 100,
    });
    expect(done.status).toBe('failed');
    expect(JSON.stringify(done)).toContain('Prompt is too long');
    // The emulator did cut it, as Ollama does: the first 4 tokens and the last (limit - 4), limit = 20480 - 10238.
    const cut = emu.requests.find((r) => r.truncatedTo !== undefined);
    expect(cut?.truncatedTo).toBe(20480 - Math.floor((20480 - 4) / 2));
    expect(cut?.promptTokens).toBeGreaterThan(20480);
    const dir = app.store.jobDir(String(done.id));
    const lines = await requestLog(dir);
    const guarded = lines.find((line) => line.rewrites.includes('truncated_by_backend'));
    // Near enough to the window to be held: nothing of the answer went out before Ollama's count, then a 400.
    expect(guarded).toMatchObject({
      status: 400,
      upstream_status: 200,
      usage: { input_tokens: 10242 },
    });
    expect(guarded?.error?.translated).toMatch(/^prompt is too long: \d+ tokens > 20480 maximum$/);
    expect(String(done.result_text)).toContain(
      'A single-exchange conversation cannot be compacted',
    );
    // What the model said without its instructions never reached claude.
    const transcript = await readFile(join(dir, 'transcript.txt'), 'utf8');
    expect(transcript).not.toContain(TRUNCATED_PROMPT_REPLY.text ?? 'unset');
    expect(JSON.stringify(done)).not.toContain(TRUNCATED_PROMPT_REPLY.text ?? 'unset');
  });

  it('has claude compact when tool results push the prompt over the window, and never streams a cut answer', async () => {
    // Four files of 6000 digit tokens (digits are dense: Claude Code's own estimate says a quarter of that, so it
    // compacts late): the fourth read takes the prompt past the 32768-token window. Such a prompt is never streamed;
    // one sure to overflow is refused unsent, so claude compacts. Claude Code keeps the last round verbatim after
    // compacting, which here refills the window: it ends the session as thrashing, a clear failure, as it would
    // against a server that reports its overflow.
    const read = (file: string) => ({
      toolCalls: [{ name: 'Bash', input: { command: `cat ${file}`, description: `Read ${file}` } }],
    });
    const emu = await server({
      backend: 'ollama',
      nCtx: 32768,
      script: [
        read('a.txt'),
        read('b.txt'),
        read('c.txt'),
        read('d.txt'),
        {
          toolCalls: [
            {
              name: 'Write',
              input: { file_path: '${cwd}/hello.txt', content: 'hello from the local model\n' },
            },
          ],
        },
        { text: 'Done: I wrote hello.txt.' },
      ],
    });
    const { client, app } = await startTestApp(config(emu.url, 'ollama'));
    const digits = (n: number) => `${n} `.repeat(3000);
    const cwd = await tempDir({
      'a.txt': digits(1),
      'b.txt': digits(2),
      'c.txt': digits(3),
      'd.txt': digits(4),
    });
    const done = await callTool(client, 'run_agent', {
      task: 'Read a.txt, b.txt, c.txt and d.txt, then write hello.txt.',
      model: 'qwen3-coder',
      cwd,
      wait_s: 100,
    });
    const dir = app.store.jobDir(String(done.id));
    const lines = await requestLog(dir);
    const guarded = lines.filter(
      (line) =>
        line.rewrites.includes('truncated_by_backend') ||
        line.rewrites.includes('refuse_oversize_prompt'),
    );
    expect(guarded.length).toBeGreaterThan(0);
    expect(guarded.every((line) => line.status === 400)).toBe(true);
    // Every prompt Ollama cut was answered 400 (none here: the overflowing ones were refused before it saw them).
    const cut = emu.requests.filter((r) => r.truncatedTo !== undefined).length;
    expect(lines.filter((line) => line.rewrites.includes('truncated_by_backend'))).toHaveLength(
      cut,
    );
    expect(done.status).toBe('failed');
    expect(String(done.result_text)).toMatch(/Autocompact is thrashing|Prompt is too long/);
    const events = await readFile(join(dir, 'events.jsonl'), 'utf8');
    expect(events).toContain('compact_boundary');
    const transcript = await readFile(join(dir, 'transcript.txt'), 'utf8');
    expect(transcript).not.toContain(TRUNCATED_PROMPT_REPLY.text ?? 'unset');
  });
});
