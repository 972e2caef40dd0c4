import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  createTranscript,
  describeToolCall,
  formatDoneLine,
  formatStartLine,
} from './transcript.js';

const fixtures = new URL('../../test/fixtures/claude-code/', import.meta.url);

async function loadMessages(name: string): Promise<unknown[]> {
  const text = await readFile(new URL(name, fixtures), 'utf8');
  const parsed = JSON.parse(text) as { messages: { message: unknown }[] };
  return parsed.messages.map((entry) => entry.message);
}

describe('createTranscript', () => {
  it('counts turns, tool calls and files touched in a five-tool session', async () => {
    const transcript = createTranscript('/WORKDIR');
    const lines = (await loadMessages('sdk-messages-session.json')).flatMap((m) =>
      transcript.add(m),
    );
    const stats = transcript.stats();
    expect(stats.sessionId).toBe('602525ab-1e22-4194-8eff-2226a0f69b37');
    expect(stats.turns).toBe(6);
    expect(stats.toolCalls).toBe(5);
    expect(stats.filesTouched).toEqual(['notes.txt']);
    expect(stats.result?.is_error).toBe(false);
    expect(stats.lastText).toBe('All done.');
    expect(lines).toContain('tool Write(/WORKDIR/notes.txt)');
    expect(lines).toContain('tool Bash(ls -la && echo step3)');
    expect(lines).toContain('assistant: All done.');
    expect(lines.some((line) => line.startsWith('result:\n    1\tline one'))).toBe(true);
    expect(lines[0]).toMatch(/^session 602525ab-.* started \(model qwen-test, cwd \/WORKDIR\)$/);
  });

  it('reports retries and the error result of a session whose backend keeps failing', async () => {
    const transcript = createTranscript('/WORKDIR');
    const lines = (await loadMessages('sdk-messages-api-retry-then-error.json')).flatMap((m) =>
      transcript.add(m),
    );
    expect(lines.filter((line) => line.startsWith('! backend error 529'))).toHaveLength(2);
    expect(transcript.stats().result?.is_error).toBe(true);
    expect(transcript.stats().result?.terminal_reason).toBe('api_error');
    expect(lines.at(-1)).toMatch(/^! session ended with an error \(api_error\): API Error: 529/);
    expect(transcript.stats().lastText).toBeUndefined();
  });

  it('passes over message kinds and blocks it does not read, and malformed ones, without failing', () => {
    const transcript = createTranscript('/WORKDIR');
    const lines = [
      { type: 'stream_event', event: { type: 'content_block_delta' } },
      { type: 'assistant', message: { id: 'm1', content: [{ type: 'image', source: {} }] } },
      // A text block without its text is "other", not a crash.
      { type: 'assistant', message: { id: 'm2', content: [{ type: 'text' }] } },
      {
        type: 'assistant',
        message: {
          id: 'm3',
          content: [
            { type: 'redacted_thinking', data: 'x' },
            { type: 'tool_use', id: 't1', name: 'Write', input: { file_path: '/WORKDIR/a.txt' } },
          ],
        },
      },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1' }] } },
      'not even an object',
    ].flatMap((message) => transcript.add(message));
    expect(lines).toEqual(['tool Write(/WORKDIR/a.txt)', 'result: (empty)']);
    expect(transcript.stats()).toMatchObject({ turns: 3, toolCalls: 1, filesTouched: ['a.txt'] });
  });

  it('marks subagent output and keeps subagent turns out of the turn count', async () => {
    const transcript = createTranscript('/WORKDIR');
    const lines = (await loadMessages('sdk-messages-async-subagent.json')).flatMap((m) =>
      transcript.add(m),
    );
    expect(lines.some((line) => line.startsWith('tool Agent'))).toBe(true);
    expect(transcript.stats().toolCalls).toBeGreaterThanOrEqual(1);
  });

  it('records the max-turns result as an error result', async () => {
    const transcript = createTranscript('/WORKDIR');
    for (const message of await loadMessages('sdk-messages-max-turns.json'))
      transcript.add(message);
    expect(transcript.stats().result?.subtype).toBe('error_max_turns');
  });

  it('ignores message kinds it does not read', () => {
    const transcript = createTranscript('/w');
    expect(transcript.add({ type: 'stream_event', event: {} })).toEqual([]);
    expect(transcript.add('not a message')).toEqual([]);
  });

  it('drops a file whose only edit was denied or failed, and keeps one edited successfully before', () => {
    const transcript = createTranscript('/w');
    const use = (id: string, path: string) => ({
      type: 'assistant',
      message: {
        id: `m-${id}`,
        content: [{ type: 'tool_use', id, name: 'Write', input: { file_path: path } }],
      },
    });
    const result = (id: string, isError: boolean) => ({
      type: 'user',
      message: {
        content: [{ type: 'tool_result', tool_use_id: id, content: 'x', is_error: isError }],
      },
    });
    transcript.add(use('t1', '/w/denied.txt'));
    expect(transcript.stats().filesTouched).toEqual(['denied.txt']);
    transcript.add(result('t1', true));
    transcript.add(use('t2', '/w/ok.txt'));
    transcript.add(result('t2', false));
    transcript.add(use('t3', '/w/ok.txt'));
    transcript.add(result('t3', true));
    expect(transcript.stats().filesTouched).toEqual(['ok.txt']);
  });

  it('keeps paths outside the working directory absolute', () => {
    const transcript = createTranscript('/w/repo');
    transcript.add({
      type: 'assistant',
      message: {
        id: 'm1',
        content: [
          { type: 'tool_use', id: 't1', name: 'Edit', input: { file_path: '/w/repo/src/a.ts' } },
          { type: 'tool_use', id: 't2', name: 'Write', input: { file_path: '/tmp/x.txt' } },
          {
            type: 'tool_use',
            id: 't3',
            name: 'NotebookEdit',
            input: { notebook_path: '/w/repo/n.ipynb' },
          },
          { type: 'tool_use', id: 't4', name: 'Read', input: { file_path: '/w/repo/b.ts' } },
        ],
      },
    });
    expect(transcript.stats().filesTouched).toEqual(['src/a.ts', '/tmp/x.txt', 'n.ipynb']);
    expect(transcript.stats().toolCalls).toBe(4);
  });
});

describe('describeToolCall', () => {
  it.each([
    ['Bash', { command: 'npm test' }, 'Bash(npm test)'],
    ['Grep', { pattern: 'TODO' }, 'Grep(TODO)'],
    ['Read', { file_path: '/a/b.ts' }, 'Read(/a/b.ts)'],
    ['TodoWrite', { todos: [] }, 'TodoWrite'],
  ])('describes %s by its main argument', (name, input, expected) => {
    expect(describeToolCall(name, input)).toBe(expected);
  });
});

describe('transcript lines', () => {
  it('formats the start and done lines', () => {
    expect(
      formatStartLine({
        jobId: 'j1',
        endpoint: 'local',
        model: 'qwen',
        contextTokens: 32768,
        contextSource: 'probe',
        cwd: '/w',
      }),
    ).toMatchInlineSnapshot(
      `"=== job j1 start: endpoint local, model qwen, window 32768 tokens (probe), cwd /w"`,
    );
    expect(
      formatDoneLine({
        status: 'succeeded',
        turns: 3,
        toolCalls: 2,
        durationMs: 4210,
        metrics: '5 requests',
      }),
    ).toMatchInlineSnapshot(`"=== done: succeeded after 3 turns, 2 tool calls, 4.2 s; 5 requests"`);
  });
});
