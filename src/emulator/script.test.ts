import { describe, expect, it } from 'vitest';
import { chooseReply, DEFAULT_SCRIPT } from './script.js';

const tools = [{ name: 'Write', input_schema: { type: 'object' } }];
const system = [
  {
    type: 'text',
    text: '# Environment\n - Primary working directory: /work/repo\n - Is a git repo',
  },
];
const firstUser = {
  role: 'user',
  content: [
    { type: 'text', text: '<system-reminder>\nnoise\n</system-reminder>' },
    { type: 'text', text: 'Make hello.txt' },
  ],
};

describe('chooseReply', () => {
  it('fills ${cwd} from the working directory named in a role:system message', () => {
    const reply = chooseReply(
      { tools, messages: [firstUser, { role: 'system', content: system }] },
      DEFAULT_SCRIPT,
    );
    expect(reply.toolCalls?.[0]?.input).toEqual({
      file_path: '/work/repo/hello.txt',
      content: 'hello from the local model\n',
    });
  });

  it('fills ${task} with the first user text without system reminders', () => {
    const reply = chooseReply({ tools, system, messages: [firstUser] }, [{ text: 'task=${task}' }]);
    expect(reply.text).toBe('task=Make hello.txt');
  });

  it('picks the turn by counting assistant turns', () => {
    const messages = [
      firstUser,
      { role: 'assistant', content: 'a' },
      { role: 'user', content: 'r' },
    ];
    expect(chooseReply({ tools, system, messages }, DEFAULT_SCRIPT).toolCalls?.[0]?.name).toBe(
      'Bash',
    );
  });

  it('answers a compaction request with a summary that carries the turn marker', () => {
    const messages = [
      firstUser,
      { role: 'assistant', content: 'a' },
      { role: 'user', content: 'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.' },
    ];
    const reply = chooseReply({ tools, system, messages }, DEFAULT_SCRIPT);
    expect(reply.kind).toBe('compaction');
    expect(reply.text).toMatch(
      /^<analysis>[\s\S]*<\/analysis>\n<summary>[\s\S]*\[emulator: 1 scripted turns done\]<\/summary>$/,
    );
  });

  it('continues the script after compaction instead of restarting it', () => {
    const messages = [
      {
        role: 'user',
        content: 'This session is being continued… [emulator: 2 scripted turns done]',
      },
    ];
    expect(chooseReply({ tools, system, messages }, DEFAULT_SCRIPT).text).toBe(
      'Done: I wrote hello.txt in /work/repo and read it back with cat.',
    );
  });

  it('gives a short text to a request without tools', () => {
    expect(chooseReply({ messages: [firstUser] }, DEFAULT_SCRIPT)).toEqual({
      kind: 'title',
      text: 'Hello from the emulator.',
    });
  });

  it('repeats the final text once the script is exhausted', () => {
    const messages = [
      firstUser,
      ...Array.from({ length: 5 }, () => [
        { role: 'assistant', content: 'a' },
        { role: 'user', content: 'r' },
      ]).flat(),
    ];
    expect(chooseReply({ tools, system, messages }, DEFAULT_SCRIPT).kind).toBe('final');
  });
});
