import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isRecord } from './fold-system.js';
import { normalizeRequest, parseRequest, type AnthropicRequest } from './normalize.js';
import { createPrefixTracker, fingerprintPrompt } from './prefix-stability.js';
import { createToolListCache } from './tool-list.js';

const CLAUDE_CODE = new URL('../../test/fixtures/claude-code/', import.meta.url);

/** A captured Claude Code request as the backend would get it (after the shim's rewrites), and its bytes. */
function forwardedBody(
  name: string,
  edit?: (body: Record<string, unknown>) => void,
): { request: AnthropicRequest; body: Buffer } {
  const fixture: unknown = JSON.parse(readFileSync(new URL(name, CLAUDE_CODE), 'utf8'));
  if (!isRecord(fixture) || !isRecord(fixture.body)) throw new Error(`${name}: no body`);
  edit?.(fixture.body);
  const raw = Buffer.from(JSON.stringify(fixture.body));
  const result = normalizeRequest(raw, { backend: 'llama.cpp', servedId: 'qwen-test' });
  if (result.kind === 'invalid') throw new Error(result.message);
  const body = result.kind === 'rewritten' ? result.body : raw;
  if (result.request) return { request: result.request, body };
  const parsed = parseRequest(body);
  if (!parsed.ok) throw new Error(parsed.message);
  return { request: parsed.request, body };
}

function forwarded(name: string, edit?: (body: Record<string, unknown>) => void): AnthropicRequest {
  return forwardedBody(name, edit).request;
}

describe('createPrefixTracker', () => {
  it('finds turn 6 an extension of turn 1 although cache_control moved and a block array became a string', () => {
    const tracker = createPrefixTracker();
    expect(tracker.check(forwarded('first-turn-request.json'), 's1')).toEqual({ kind: 'new' });
    expect(tracker.check(forwarded('later-turn-request.json'), 's1')).toEqual({ kind: 'extends' });
  });

  it('sees a changed tool list when the requests come from a ToolListCache, which hands one list out again', () => {
    const tracker = createPrefixTracker();
    const toolLists = createToolListCache();
    const check = ({ body }: { body: Buffer }) => {
      const parsed = toolLists.parse(body);
      if (!parsed.ok) throw new Error(parsed.message);
      return tracker.check(parsed.request, 's1');
    };
    const fewerTools = (body: Record<string, unknown>) => {
      if (Array.isArray(body.tools)) body.tools = body.tools.slice(1);
    };
    expect(check(forwardedBody('first-turn-request.json'))).toEqual({ kind: 'new' });
    expect(check(forwardedBody('later-turn-request.json'))).toEqual({ kind: 'extends' });
    expect(check(forwardedBody('later-turn-request.json', fewerTools))).toEqual({
      kind: 'changed',
      at: 'tools',
    });
    expect(check(forwardedBody('later-turn-request.json'))).toEqual({
      kind: 'changed',
      at: 'tools',
    });
    expect(check(forwardedBody('later-turn-request.json'))).toEqual({ kind: 'extends' });
  });

  it('keeps sessions apart', () => {
    const tracker = createPrefixTracker();
    tracker.check(forwarded('first-turn-request.json'), 's1');
    expect(tracker.check(forwarded('later-turn-request.json'), 's2')).toEqual({ kind: 'new' });
  });

  it.each([
    ['compaction-request-reactive.json', { kind: 'side', reason: 'compaction' }],
    ['compaction-retry-truncated-request.json', { kind: 'side', reason: 'compaction' }],
    ['title-request.json', { kind: 'side', reason: 'title' }],
  ])('treats %s as a side branch', (name, verdict) => {
    const tracker = createPrefixTracker();
    tracker.check(forwarded('first-turn-request.json'), 's1');
    expect(tracker.check(forwarded(name), 's1')).toEqual(verdict);
    // The side request does not replace the conversation's latest prompt.
    expect(tracker.check(forwarded('later-turn-request.json'), 's1')).toEqual({ kind: 'extends' });
  });

  it('starts a new conversation after a compaction', () => {
    const tracker = createPrefixTracker();
    tracker.check(forwarded('later-turn-request.json'), 's1');
    expect(tracker.check(forwarded('post-compaction-request.json'), 's1')).toEqual({ kind: 'new' });
  });

  it('tracks a subagent apart from the main conversation', () => {
    const tracker = createPrefixTracker();
    tracker.check(forwarded('first-turn-request.json'), 's1');
    expect(tracker.check(forwarded('subagent-request.json'), 's1')).toEqual({ kind: 'new' });
    expect(tracker.check(forwarded('later-turn-request.json'), 's1')).toEqual({ kind: 'extends' });
  });

  it.each([
    // Raw message 2 is forwarded message 1: the system message at raw index 1 is folded into message 0.
    [
      'an edited earlier message',
      1,
      (body: Record<string, unknown>) => {
        const messages = body.messages as Array<Record<string, unknown>>;
        const target = messages[2];
        if (target) target.content = [{ type: 'text', text: 'rewritten history' }];
      },
    ],
    [
      'a changed tool list',
      'tools',
      (body: Record<string, unknown>) => {
        body.tools = (body.tools as unknown[]).slice(1);
      },
    ],
    [
      'a changed system prompt',
      'system',
      (body: Record<string, unknown>) => {
        body.system = 'another system prompt';
      },
    ],
  ] as const)('reports %s and where it changed', (_what, at, edit) => {
    const tracker = createPrefixTracker();
    tracker.check(forwarded('later-turn-request.json'), 's1');
    expect(tracker.check(forwarded('later-turn-request.json', edit), 's1')).toEqual({
      kind: 'changed',
      at,
    });
  });
});

const text = (value: string, extra: Record<string, unknown> = {}) => ({
  type: 'text',
  text: value,
  ...extra,
});
const ephemeral = { cache_control: { type: 'ephemeral' } };
const big = 'line of a big file\n'.repeat(60_000);
const toolResult = (content: unknown, extra: Record<string, unknown> = {}) => [
  { type: 'tool_result', tool_use_id: 't1', content, ...extra },
];

describe('fingerprintPrompt', () => {
  it.each([
    ['a string and one text block', 'hi', [text('hi')]],
    ['a block with and without cache_control', [text('hi', ephemeral)], [text('hi')]],
    [
      'a tool result as a string and as blocks',
      toolResult(big),
      toolResult([text(big, ephemeral)]),
    ],
    ['a tool result with a moved cache marker', toolResult(big, ephemeral), toolResult(big)],
  ])('renders %s the same', (_what, a, b) => {
    const of = (content: unknown) =>
      fingerprintPrompt({ messages: [{ role: 'user', content }] }).messages[0];
    expect(of(a)).toBe(of(b));
  });

  it.each([
    ['one character of a 1 MB tool result', toolResult(big), toolResult(`${big}x`)],
    ['a text split in two blocks', [text('ab')], [text('a'), text('b')]],
    ['a text block with citations', [text('hi')], [text('hi', { citations: [] })]],
    ['an error tool result', toolResult('no'), toolResult('no', { is_error: true })],
    ['the role', 'hi', 'hi'],
  ])('tells apart %s', (what, a, b) => {
    const first = fingerprintPrompt({ messages: [{ role: 'user', content: a }] });
    const role = what === 'the role' ? 'assistant' : 'user';
    const second = fingerprintPrompt({ messages: [{ role, content: b }] });
    expect(first.messages[0]).not.toBe(second.messages[0]);
  });
});
