import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isRecord } from './fold-system.js';
import { normalizeRequest, parseRequest, type AnthropicRequest } from './normalize.js';
import { createPrefixTracker } from './prefix-stability.js';

const CLAUDE_CODE = new URL('../../../shared/fixtures/claude-code/', import.meta.url);

/** A captured Claude Code request as the backend would get it (after the shim's rewrites). */
function forwarded(name: string, edit?: (body: Record<string, unknown>) => void): AnthropicRequest {
  const fixture: unknown = JSON.parse(readFileSync(new URL(name, CLAUDE_CODE), 'utf8'));
  if (!isRecord(fixture) || !isRecord(fixture.body)) throw new Error(`${name}: no body`);
  edit?.(fixture.body);
  const raw = Buffer.from(JSON.stringify(fixture.body));
  const result = normalizeRequest(raw, { backend: 'llama.cpp', servedId: 'qwen-test' });
  if (result.kind === 'invalid') throw new Error(result.message);
  if (result.request) return result.request;
  const parsed = parseRequest(raw);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.request;
}

describe('createPrefixTracker', () => {
  it('finds turn 6 an extension of turn 1 although cache_control moved and a block array became a string', () => {
    const tracker = createPrefixTracker();
    expect(tracker.check(forwarded('first-turn-request.json'), 's1')).toEqual({ kind: 'new' });
    expect(tracker.check(forwarded('later-turn-request.json'), 's1')).toEqual({ kind: 'extends' });
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
