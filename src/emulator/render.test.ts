import { describe, expect, it } from 'vitest';
import { renderPrompt } from './render.js';

const strict = { strictTemplate: true };

describe('renderPrompt', () => {
  it.each([
    [
      'a system message in the middle',
      {
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'x' },
        ],
      },
      'mid-system',
    ],
    [
      'top-level system plus a leading system message (A24)',
      {
        system: 'terse',
        messages: [
          { role: 'system', content: 'x' },
          { role: 'user', content: 'Hi' },
        ],
      },
      'mid-system',
    ],
    ['no messages (A43)', { messages: [] }, 'no-messages'],
    [
      'only tool results',
      {
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'x' }] },
        ],
      },
      'no-user-query',
    ],
  ])('raises the template exception for %s', (_name, body, kind) => {
    const result = renderPrompt(body, strict);
    expect(result.kind === 'error' ? result.failure.kind : 'ok').toBe(kind);
  });

  it('accepts a lone leading system message (A25)', () => {
    const result = renderPrompt(
      {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
        ],
      },
      strict,
    );
    expect(result).toEqual({
      kind: 'ok',
      text: '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n',
    });
  });

  it('renders a mid-conversation system message in place when the template is lenient', () => {
    const result = renderPrompt(
      {
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Env' },
        ],
      },
      { strictTemplate: false },
    );
    expect(result.kind === 'ok' ? result.text : '').toContain(
      '<|im_start|>system\nEnv<|im_end|>\n<|im_start|>assistant',
    );
  });

  it('renders tool calls and tool results like the Qwen3.5 template', () => {
    const body = {
      tools: [{ name: 'Read', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'Read a' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't', name: 'Read', input: { file_path: 'a' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'A' }] },
      ],
    };
    const result = renderPrompt(body, strict);
    const text = result.kind === 'ok' ? result.text : '';
    expect(text).toContain(
      '<tool_call>\n<function=Read>\n<parameter=file_path>\na\n</parameter>\n</function>\n</tool_call><|im_end|>',
    );
    expect(text).toContain('<|im_start|>user\n<tool_response>\nA\n</tool_response><|im_end|>');
  });
});
