import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contentText, isRecord } from './fold-system.js';
import { normalizeRequest, type AnthropicRequest, type NormalizeRoute } from './normalize.js';
import { fingerprintPrompt } from './prefix-stability.js';

const CLAUDE_CODE = new URL('../../test/fixtures/claude-code/', import.meta.url);

/** A captured Claude Code request body, serialised compactly the way Claude Code sends it. */
function capturedBody(name: string): Buffer {
  const fixture: unknown = JSON.parse(readFileSync(new URL(name, CLAUDE_CODE), 'utf8'));
  if (!isRecord(fixture)) throw new Error(`${name}: not an object`);
  return Buffer.from(JSON.stringify(fixture.body));
}

const llama: NormalizeRoute = { backend: 'llama.cpp', servedId: 'qwen-test' };

function rewritten(raw: Buffer, route: NormalizeRoute = llama) {
  const result = normalizeRequest(raw, route);
  if (result.kind !== 'rewritten') throw new Error(`expected a rewrite, got ${result.kind}`);
  return { ...result, parsed: JSON.parse(result.body.toString('utf8')) as AnthropicRequest };
}

function roles(request: AnthropicRequest): string[] {
  return request.messages.map((message) => message.role);
}

function blocks(content: unknown): Array<Record<string, unknown>> {
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

/** Every captured Claude Code request body that has `messages` (the folder also holds headers and SDK logs). */
const CAPTURED_REQUESTS = readdirSync(CLAUDE_CODE)
  .filter((name) => name.endsWith('.json'))
  .filter((name) => {
    const fixture: unknown = JSON.parse(readFileSync(new URL(name, CLAUDE_CODE), 'utf8'));
    return isRecord(fixture) && isRecord(fixture.body) && Array.isArray(fixture.body.messages);
  })
  .sort();

const asBlockList = (content: unknown): unknown[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : blocks(content);

const isBilling = (block: unknown): boolean =>
  isRecord(block) &&
  typeof block.text === 'string' &&
  block.text.startsWith('x-anthropic-billing-header:');

/**
 * The forwarded messages with the folded `<system>` blocks taken out again, in order, and turns left empty
 * dropped: equal to the client's non-system messages exactly when the fold only added blocks (append-only).
 */
function unfold(messages: AnthropicRequest['messages'], folds: string[]) {
  let next = 0;
  return messages
    .map((message) => ({
      ...message,
      content: asBlockList(message.content).filter((block) => {
        if (next >= folds.length || !isRecord(block) || block.text !== folds[next]) return true;
        next++;
        return false;
      }),
    }))
    .filter((message) => message.content.length > 0)
    .concat(next === folds.length ? [] : [{ role: 'missing folds', content: folds.slice(next) }]);
}

/** Index pairs (assistant turn, next turn) where the next turn does not open with the tool_result blocks. */
function brokenToolPairs(messages: AnthropicRequest['messages']): number[] {
  return messages.flatMap((message, index) => {
    const uses = blocks(message.content).filter((block) => block.type === 'tool_use');
    if (message.role !== 'assistant' || uses.length === 0) return [];
    const next = messages[index + 1];
    const leading = blocks(next?.content).slice(0, uses.length);
    const paired =
      next?.role === 'user' &&
      uses.every(
        (use, at) => leading[at]?.type === 'tool_result' && leading[at]?.tool_use_id === use.id,
      );
    return paired ? [] : [index];
  });
}

describe('normalizeRequest on every captured Claude Code request', () => {
  it('finds the captured requests', () => {
    expect(CAPTURED_REQUESTS).toEqual(
      expect.arrayContaining([
        'after-400-degraded-request.json',
        'after-max-tokens-request.json',
        'after-midstream-cut-request.json',
        'compaction-request-auto.json',
        'compaction-retry-truncated-request.json',
        'title-request.json',
      ]),
    );
    expect(CAPTURED_REQUESTS.length).toBeGreaterThanOrEqual(13);
  });

  it.each(CAPTURED_REQUESTS)(
    'folds %s append-only: no system role left, tool pairs adjacent, top-level system kept',
    (name) => {
      const raw = capturedBody(name);
      const original = JSON.parse(raw.toString('utf8')) as AnthropicRequest;
      const { parsed } = rewritten(raw);
      expect(roles(parsed)).not.toContain('system');
      expect(brokenToolPairs(parsed.messages)).toEqual([]);
      // Only the billing block leaves the top-level system; nothing is hoisted into it.
      const system = Array.isArray(original.system)
        ? original.system.filter((block) => !isBilling(block))
        : original.system;
      expect(parsed.system).toEqual(system);
      expect(parsed.tools).toEqual(original.tools);
      const folds = original.messages
        .filter((m) => m.role === 'system')
        .map((m) => `<system>\n${contentText(m.content)}\n</system>`);
      const clientTurns = original.messages
        .filter((m) => m.role !== 'system')
        .map((m) => ({ ...m, content: asBlockList(m.content) }));
      expect(unfold(parsed.messages, folds)).toEqual(clientTurns);
    },
  );

  it.each([
    ['subagent-request.json', 'env-subagent', 'qwen-test', true],
    ['title-request.json', 'qwen-test', 'qwen3.8-27b', true],
    ['title-request.json', 'qwen-test', 'qwen-test', false],
  ])('maps %s (model %s) for a route serving %s: model_map %s', (name, sent, served, mapped) => {
    const raw = capturedBody(name);
    expect((JSON.parse(raw.toString('utf8')) as AnthropicRequest).model).toBe(sent);
    const { parsed, rewrites } = rewritten(raw, {
      ...llama,
      servedId: served,
      servedIds: [served],
    });
    expect(parsed.model).toBe(served);
    expect(rewrites.includes('model_map')).toBe(mapped);
  });
});

describe('normalizeRequest', () => {
  it.each([
    ['first-turn-request.json', ['user', 'system'], ['user']],
    [
      'later-turn-request.json',
      ['user', 'system', 'assistant', 'user'],
      ['user', 'assistant', 'user'],
    ],
    [
      'post-compaction-request.json',
      ['user', 'system', 'assistant', 'user', 'system'],
      ['user', 'assistant', 'user'],
    ],
    [
      'compaction-request-reactive.json',
      ['user', 'system', 'assistant', 'user'],
      ['user', 'assistant', 'user'],
    ],
    ['subagent-request.json', ['user', 'system'], ['user']],
  ])('folds every system message of %s into a user turn', (name, before, after) => {
    const raw = capturedBody(name);
    const original = JSON.parse(raw.toString('utf8')) as AnthropicRequest;
    expect(roles(original).slice(0, before.length)).toEqual(before);
    const { parsed, rewrites } = rewritten(raw);
    expect(rewrites).toContain('fold_system');
    expect(roles(parsed)).not.toContain('system');
    expect(roles(parsed).slice(0, after.length)).toEqual(after);
    const systemTexts = original.messages
      .filter((m) => m.role === 'system')
      .map((m) => contentText(m.content));
    const folded = parsed.messages.flatMap((m) => blocks(m.content)).map((b) => b.text);
    for (const text of systemTexts) expect(folded).toContain(`<system>\n${text}\n</system>`);
  });

  it('folds the first turn’s trailing system message into the preceding user turn, leaving the prompt first', () => {
    const { parsed } = rewritten(capturedBody('first-turn-request.json'));
    const content = blocks(parsed.messages[0]?.content);
    expect(content).toHaveLength(3);
    expect(String(content[1]?.text)).toMatch(/^Create notes\.txt/);
    expect(String(content[2]?.text)).toMatch(/^<system>\n# Environment\n/);
  });

  it('renders message 0 identically on turn 1 and turn 6, so the later prompt extends the first', () => {
    const first = fingerprintPrompt(rewritten(capturedBody('first-turn-request.json')).parsed);
    const later = fingerprintPrompt(rewritten(capturedBody('later-turn-request.json')).parsed);
    expect(later.messages[0]).toBe(first.messages[0]);
    expect(later.system).toBe(first.system);
    expect(later.tools).toBe(first.tools);
  });

  it('drops the billing-header block whose hash differs between sessions', () => {
    const { parsed, rewrites } = rewritten(capturedBody('system-messages-folded-request.json'));
    expect(rewrites).toEqual(['billing_nonce']);
    const texts = blocks(parsed.system).map((block) => String(block.text));
    expect(texts.some((text) => text.startsWith('x-anthropic-billing-header:'))).toBe(false);
    expect(texts[0]).toMatch(/^You are a Claude agent/);
  });

  it('makes two sessions with different billing hashes share one system prompt', () => {
    const main = rewritten(capturedBody('first-turn-request.json')).parsed;
    const after = rewritten(capturedBody('post-compaction-request.json')).parsed;
    expect(JSON.stringify(after.system)).toBe(JSON.stringify(main.system));
  });

  it.each([
    ['claude-opus-5-5', 'qwen-test', ['model_map']],
    ['qwen-test', 'qwen-test', []],
    ['alias-b', 'alias-b', []],
  ])('maps model %s to %s', (model, expected, rewrites) => {
    const raw = Buffer.from(
      JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    );
    const result = normalizeRequest(raw, { ...llama, servedIds: ['qwen-test', 'alias-b'] });
    if (rewrites.length === 0) {
      expect(result.kind).toBe('untouched');
      return;
    }
    const { parsed, rewrites: applied } = rewritten(raw, {
      ...llama,
      servedIds: ['qwen-test', 'alias-b'],
    });
    expect(parsed.model).toBe(expected);
    expect(applied).toEqual(rewrites);
  });

  it('forwards a 1 MB body with nothing to rewrite byte-for-byte (no re-serialisation)', () => {
    const big = 'x'.repeat(1024 * 1024);
    const raw = Buffer.from(
      JSON.stringify({
        model: 'qwen-test',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: big }],
      }),
    );
    // Not even parsed: the bytes alone show there is nothing to do.
    expect(normalizeRequest(raw, llama)).toEqual({ kind: 'untouched' });
  });

  it('reads a body the caller’s scanner already flagged, and still forwards it untouched if nothing applies', () => {
    const raw = Buffer.from(
      JSON.stringify({
        model: 'qwen-test',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(normalizeRequest(raw, llama, { scanned: true })).toEqual({ kind: 'untouched' });
  });

  it('re-serialises only the members it rewrites: the tool list goes out as the client’s bytes', () => {
    const raw = capturedBody('first-turn-request.json');
    const sent = JSON.parse(raw.toString('utf8')) as AnthropicRequest;
    // Spaces a re-serialisation would drop, so the test sees which bytes were kept.
    const spaced = Buffer.from(
      raw.toString('utf8').replace('"tools":[', '"tools" : [ ').replace(/}$/, ' }\n'),
    );
    const result = normalizeRequest(spaced, llama);
    if (result.kind !== 'rewritten') throw new Error(`expected a rewrite, got ${result.kind}`);
    const body = result.body.toString('utf8');
    expect(body).toContain(`"tools" : [ ${JSON.stringify(sent.tools).slice(1)}`);
    expect(body.endsWith(' }\n')).toBe(true);
    expect(result.request).toBeUndefined();
    expect(result.original).toEqual({ model: sent.model, messages: sent.messages.length });
    const forwarded = JSON.parse(body) as AnthropicRequest;
    expect(roles(forwarded)).not.toContain('system');
    expect(forwarded.tools).toEqual(sent.tools);
  });

  it('parses the whole body when its members cannot be told apart safely (a repeated key)', () => {
    const raw = Buffer.from(
      '{"model":"qwen-test","messages":[{"role":"user","content":"a"}],' +
        '"messages":[{"role":"user","content":"b"},{"role":"system","content":"s"}]}',
    );
    const { parsed, request } = rewritten(raw);
    // JSON.parse keeps the last copy, as the backend's parser would.
    expect(request?.messages).toHaveLength(1);
    expect(blocks(parsed.messages[0]?.content).map((b) => b.text)).toEqual([
      'b',
      '<system>\ns\n</system>',
    ]);
  });

  it('refuses through the full parse what the member path cannot vouch for', () => {
    const raw = Buffer.from(
      JSON.stringify({
        model: 'qwen-test',
        stream: 'yes',
        messages: [{ role: 'system', content: 's' }],
      }),
    );
    const result = normalizeRequest(raw, llama);
    expect(result.kind).toBe('invalid');
    if (result.kind === 'invalid') expect(result.message).toMatch(/^stream:/);
  });

  it('places a system message that follows a tool_use after the tool_result blocks of the next user turn', () => {
    const raw = Buffer.from(
      JSON.stringify({
        model: 'qwen-test',
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
          { role: 'system', content: 'note' },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't1', content: 'ok' },
              { type: 'text', text: 'more' },
            ],
          },
        ],
      }),
    );
    const { parsed } = rewritten(raw);
    expect(roles(parsed)).toEqual(['user', 'assistant', 'user']);
    expect(blocks(parsed.messages[2]?.content).map((b) => b.type)).toEqual([
      'tool_result',
      'text',
      'text',
    ]);
    expect(blocks(parsed.messages[2]?.content)[1]?.text).toBe('<system>\nnote\n</system>');
  });

  it('turns a system message between two assistant turns into a user turn of its own', () => {
    const raw = Buffer.from(
      JSON.stringify({
        model: 'qwen-test',
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: 'a' },
          { role: 'system', content: 'note' },
          { role: 'assistant', content: 'b' },
        ],
      }),
    );
    expect(roles(rewritten(raw).parsed)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it.each(['ctx', 'msg'])('maps the %s role to user', (role) => {
    const raw = Buffer.from(
      JSON.stringify({ model: 'qwen-test', messages: [{ role, content: 'hello' }] }),
    );
    const { parsed, rewrites } = rewritten(raw);
    expect(roles(parsed)).toEqual(['user']);
    expect(rewrites).toEqual(['role_map']);
  });

  it('clamps max_tokens to the window on vLLM and leaves it alone on llama.cpp', () => {
    const raw = capturedBody('after-max-tokens-request.json');
    const route: NormalizeRoute = { backend: 'vllm', servedId: 'qwen-test', contextTokens: 65536 };
    const { parsed, rewrites } = rewritten(raw, route);
    expect(rewrites).toContain('clamp_max_tokens');
    expect(parsed.max_tokens).toBe(65536 - Math.ceil(raw.length / 4));
    const onLlama = rewritten(raw, { ...route, backend: 'llama.cpp' });
    expect(onLlama.rewrites).not.toContain('clamp_max_tokens');
    expect(onLlama.parsed.max_tokens).toBe(128000);
  });

  it.each([
    ['{"model":"x",', /not valid JSON/],
    ['[{"role":"user"}]', /expected object/],
    ['{"model":"x"}', /^messages:/],
  ])('refuses the malformed body %s', (body, message) => {
    const result = normalizeRequest(Buffer.from(body), llama);
    expect(result.kind).toBe('invalid');
    if (result.kind === 'invalid') expect(result.message).toMatch(message);
  });
});
