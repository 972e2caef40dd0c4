/**
 * llama.cpp's tool_use framing, checked against the captures that hold real tool calls (A14b–A14e)
 * and the tools-defined streams (A15, A17, whose tame model answered with text): the scripted model
 * plays the captured calls and the emulator must frame them as llama-server did. Generated text, ids
 * and timings are not compared; stop_sequence is (the captures stopped on `" "`, see APPROXIMATE in
 * the contract test).
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator } from '../../src/emulator/emulator.js';
import type { ScriptTurn } from '../../src/emulator/script.js';
import {
  LLAMA_STREAM,
  eventLabel,
  loadLlamaFixtures,
  parseSse,
  shapeDifferences,
  streamSkeleton,
  type LlamaFixture,
  type SseMessage,
} from '../support/llama-fixtures.js';

const FIXTURES = loadLlamaFixtures();
const fixture = (id: string): LlamaFixture => {
  const found = FIXTURES.find((f) => f.file.startsWith(`${id}-`));
  if (!found) throw new Error(`fixture ${id} is missing`);
  return found;
};

const READ = { name: 'Read', input: { file_path: '/etc/hostname' } };
const BASH = { name: 'Bash', input: { command: 'ls -la' } };
// The captured replies: one call (A14b/c); text and two calls (A14d/e).
const ONE_CALL: ScriptTurn = { toolCalls: [READ] };
const TEXT_AND_TWO_CALLS: ScriptTurn = { text: 'I will read it.\n\n', toolCalls: [READ, BASH] };
// llama.cpp's tool ids: 32 alphanumerics, no `toolu_` prefix (fixtures README, "Tool use").
const LLAMA_TOOL_ID = /^[A-Za-z0-9]{32}$/;

async function answer(id: string, turn: ScriptTurn): Promise<string> {
  // Config A; the prefill captures count as one assistant turn, so the turn is scripted twice.
  const emu = await startEmulator({
    nCtx: 16384,
    parallel: 2,
    metrics: true,
    script: [turn, turn],
  });
  onTestFinished(() => emu.close());
  const response = await fetch(`${emu.url}${fixture(id).request.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fixture(id).request.body),
  });
  expect(response.status).toBe(200);
  return response.text();
}

/** The first event with each label, so that events of the same kind can be compared by shape. */
function byLabel(events: readonly SseMessage[]): Map<string, SseMessage> {
  const map = new Map<string, SseMessage>();
  for (const event of events) if (!map.has(eventLabel(event))) map.set(eventLabel(event), event);
  return map;
}

/** Tool blocks are compared with A14e, which has two of them; other events with `reference`. */
function shapeAgainst(reference: readonly SseMessage[], actual: readonly SseMessage[]): string[] {
  const own = byLabel(reference);
  const tools = byLabel(parseSse(fixture('A14e').response.body_raw ?? ''));
  return actual.flatMap((event) => {
    const label = eventLabel(event);
    const captured = own.get(label) ?? tools.get(label);
    if (!captured) return [`${label}: no captured event of this kind`];
    return shapeDifferences(captured.data, event.data).map((d) => `${label} ${d}`);
  });
}

function checkToolBlocks(events: readonly SseMessage[], turn: ScriptTurn): void {
  const starts = events
    .filter((e) => e.event === 'content_block_start')
    .map((e) => e.data as { index: number; content_block: Record<string, unknown> })
    .filter((d) => d.content_block.type === 'tool_use');
  expect(starts.map((d) => d.content_block.name)).toEqual(turn.toolCalls?.map((c) => c.name));
  for (const [position, start] of starts.entries()) {
    // No `input` on the start (vLLM sends `input: {}`), and a llama.cpp id.
    expect(Object.keys(start.content_block)).toEqual(['type', 'id', 'name']);
    expect(start.content_block.id).toMatch(LLAMA_TOOL_ID);
    // The whole input as one compact input_json_delta.
    const deltas = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => e.data as { index: number; delta: { type: string; partial_json?: string } })
      .filter((d) => d.index === start.index);
    expect(deltas.map((d) => d.delta.type)).toEqual(['input_json_delta']);
    expect(deltas[0]?.delta.partial_json).toBe(JSON.stringify(turn.toolCalls?.[position]?.input));
  }
  // Every block stays open until the end; then all stops, in index order.
  const blocks = events.filter((e) => e.event === 'content_block_start').length;
  const tail = events.slice(-(blocks + 2)).map(eventLabel);
  expect(tail).toEqual([
    ...Array.from({ length: blocks }, (_, index) => `stop ${index}`),
    'message_delta',
    'message_stop',
  ]);
  expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'tool_use' } });
}

describe('llama.cpp tool_use streams against the captures', () => {
  it.each([
    ['A14c', ONE_CALL],
    ['A14e', TEXT_AND_TWO_CALLS],
  ] as const)('frames the calls of %s event for event like the capture', async (id, turn) => {
    const captured = parseSse(fixture(id).response.body_raw ?? '');
    const actual = parseSse(await answer(id, turn));
    expect(streamSkeleton(actual)).toEqual(streamSkeleton(captured));
    expect(shapeAgainst(captured, actual)).toEqual([]);
    checkToolBlocks(actual, turn);
    // Same calls, same bytes: the captured deltas hold exactly this JSON.
    const json = (events: SseMessage[]): unknown[] =>
      events
        .map((e) => (e.data as { delta?: { partial_json?: string } }).delta?.partial_json)
        .filter((text) => text !== undefined);
    expect(json(actual)).toEqual(json(captured));
  });

  it.each(['A15', 'A17'])(
    'frames text and a call on the %s request like A15/A17 (text) and A14e (tool blocks)',
    async (id) => {
      const turn: ScriptTurn = { text: 'I will read it.', toolCalls: [READ] };
      const captured = parseSse(fixture(id).response.body_raw ?? '');
      const actual = parseSse(await answer(id, turn));
      expect(actual.map((e) => e.event).join(' ')).toMatch(LLAMA_STREAM);
      // The tool block starts while the text block is still open, as in A14e.
      expect(streamSkeleton(actual)).toEqual([
        'message_start',
        'start 0 text',
        'delta 0 text_delta',
        'start 1 tool_use',
        'delta 1 input_json_delta',
        'stop 0',
        'stop 1',
        'message_delta',
        'message_stop',
      ]);
      expect(shapeAgainst(captured, actual)).toEqual([]);
      checkToolBlocks(actual, turn);
    },
  );

  it.each([
    ['A14b', ONE_CALL],
    ['A14d', TEXT_AND_TWO_CALLS],
  ] as const)(
    'answers %s non-streamed with tool_use blocks shaped like the capture',
    async (id, turn) => {
      const captured = fixture(id).response.body as {
        content: { type: string; id?: string; input?: unknown }[];
        stop_reason: string;
      };
      const actual = JSON.parse(await answer(id, turn)) as typeof captured;
      expect(shapeDifferences(captured, actual)).toEqual([]);
      expect(actual.content.map((block) => block.type)).toEqual(
        captured.content.map((block) => block.type),
      );
      const tools = (body: typeof captured) => body.content.filter((b) => b.type === 'tool_use');
      expect(tools(actual).map((block) => block.input)).toEqual(
        tools(captured).map((block) => block.input),
      );
      for (const block of tools(actual))
        expect((block as { id: string }).id).toMatch(LLAMA_TOOL_ID);
      expect(actual.stop_reason).toBe(captured.stop_reason);
    },
  );
});
