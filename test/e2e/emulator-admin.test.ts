import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import { parseSse, type SseMessage } from '../support/llama-fixtures.js';
import { messagesBody } from '../support/messages-body.js';
import { waitFor } from '../support/wait.js';

async function emulator(options: EmulatorOptions = {}) {
  const emu = await startEmulator(options);
  onTestFinished(() => emu.close());
  return emu;
}

interface Outcome {
  status: number | 'dropped';
  events: SseMessage[];
  json: unknown;
  ms: number;
}

/** One /v1/messages request; a cut socket is an outcome, not a throw. */
async function ask(url: string, stream: boolean, content = 'hi'): Promise<Outcome> {
  const started = performance.now();
  let status: Outcome['status'];
  let text = '';
  try {
    const response = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 64,
        stream,
        messages: [{ role: 'user', content }],
      }),
    });
    status = response.status;
    text = await response.text();
  } catch {
    status = 'dropped';
  }
  const isSse = text.startsWith('event:');
  return {
    status,
    events: isSse ? parseSse(text) : [],
    json: !isSse && text !== '' ? (JSON.parse(text) as unknown) : undefined,
    ms: performance.now() - started,
  };
}

async function postFaults(url: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${url}/_emulator/faults`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const kinds = (outcome: Outcome): string[] => outcome.events.map((event) => event.event);

describe('POST /_emulator/faults', () => {
  it.each([
    [
      'status',
      { kind: 'status', status: 429 },
      false,
      (outcome: Outcome) => {
        expect(outcome.status).toBe(429);
        expect(outcome.json).toMatchObject({ error: { code: 429 } });
      },
    ],
    [
      'context_overflow',
      { kind: 'context_overflow' },
      true,
      (outcome: Outcome) => {
        expect(outcome.status).toBe(400);
        expect(outcome.json).toMatchObject({ error: { type: 'exceed_context_size_error' } });
      },
    ],
    [
      'drop (stream)',
      { kind: 'drop', afterEvents: 1 },
      true,
      (outcome: Outcome) => expect(outcome.status).toBe('dropped'),
    ],
    [
      'drop (non-stream)',
      { kind: 'drop', afterEvents: 0 },
      false,
      (outcome: Outcome) => expect(outcome.status).toBe('dropped'),
    ],
    [
      'sse_error',
      { kind: 'sse_error', afterEvents: 2 },
      true,
      (outcome: Outcome) => {
        expect(kinds(outcome)).toEqual(['message_start', 'content_block_start', 'error']);
        expect(outcome.events.at(-1)?.data).toMatchObject({ code: 500, type: 'server_error' });
      },
    ],
    [
      'delay',
      { kind: 'delay', ms: 300 },
      false,
      (outcome: Outcome) => {
        expect(outcome.status).toBe(200);
        expect(outcome.ms).toBeGreaterThanOrEqual(295);
      },
    ],
    [
      'stall',
      { kind: 'stall', afterEvents: 1, ms: 300 },
      true,
      (outcome: Outcome) => {
        expect(kinds(outcome).at(-1)).toBe('message_stop');
        expect(outcome.ms).toBeGreaterThanOrEqual(295);
      },
    ],
  ] as const)('applies a %s fault to the next request only', async (_, fault, stream, check) => {
    const emu = await emulator({ nCtx: 16384, parallel: 2 });
    expect(await postFaults(emu.url, { faults: [fault] })).toEqual({
      status: 200,
      json: { queued: 1 },
    });
    check(await ask(emu.url, stream));
    const next = await ask(emu.url, stream);
    expect(next.status).toBe(200);
  });

  it('holds requests of a hold fault until POST /_emulator/release, and only those', async () => {
    const emu = await emulator({ nCtx: 16384, parallel: 2 });
    await postFaults(emu.url, { faults: [{ kind: 'hold', count: 2 }] });
    const held = [ask(emu.url, true), ask(emu.url, false)];
    await waitFor(() => emu.heldRequests() === 2, { what: 'two requests held' });
    // A third request is past the fault's count: it is answered while the other two still wait.
    expect((await ask(emu.url, false)).status).toBe(200);
    expect(emu.heldRequests()).toBe(2);
    const release = await fetch(`${emu.url}/_emulator/release`, { method: 'POST' });
    expect(await release.json()).toEqual({ released: 2 });
    const [streamed, plain] = await Promise.all(held);
    expect(kinds(streamed as Outcome).at(-1)).toBe('message_stop');
    expect(plain?.status).toBe(200);
    expect(emu.releaseHolds()).toBe(0);
  });

  it('lets a held request go when its client leaves', async () => {
    const emu = await emulator();
    emu.injectFaults([{ kind: 'hold' }]);
    const controller = new AbortController();
    const request = fetch(`${emu.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: messagesBody({ stream: false }),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await waitFor(() => emu.heldRequests() === 1, { what: 'the request held' });
    controller.abort();
    expect(await request).toBe('aborted');
    await waitFor(() => emu.heldRequests() === 0, { what: 'the held request gone' });
  });

  it('answers a malformed fault with 400 naming the field and queues nothing', async () => {
    const emu = await emulator();
    const answer = await postFaults(emu.url, { faults: [{ kind: 'drop' }] });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.json)).toContain('afterEvents');
    expect((await ask(emu.url, false)).status).toBe(200);
  });
});

// Lower bounds only: a knob that is ignored answers in a few ms and fails these.
describe('latency knobs', () => {
  it('waits ttfbMs before answering', async () => {
    const emu = await emulator({ latency: { ttfbMs: 300 } });
    const outcome = await ask(emu.url, false);
    expect(outcome.status).toBe(200);
    expect(outcome.ms).toBeGreaterThanOrEqual(295);
  });

  it('spends prefillMsPerToken on each uncached prompt token', async () => {
    const emu = await emulator({ latency: { prefillMsPerToken: 10 } });
    const outcome = await ask(emu.url, true, 'word '.repeat(40));
    const prompt = emu.requests.at(-1)?.promptTokens ?? 0;
    expect(prompt).toBeGreaterThan(40);
    expect(kinds(outcome).at(-1)).toBe('message_stop');
    expect(outcome.ms).toBeGreaterThanOrEqual(prompt * 10 - 5);
  });

  it('streams the reply at decodeTokensPerSecond', async () => {
    const emu = await emulator({
      plainReply: { text: ' word'.repeat(30) },
      latency: { decodeTokensPerSecond: 100 },
    });
    const outcome = await ask(emu.url, true);
    const deltas = outcome.events.filter((event) => event.event === 'content_block_delta');
    expect(deltas.length).toBeGreaterThanOrEqual(30);
    expect(outcome.ms).toBeGreaterThanOrEqual(300 - 5);
  });
});
