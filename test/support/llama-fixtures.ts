import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** `test/fixtures/llama.cpp`: the recorded llama-server captures (see test/fixtures/README.md). */
export const LLAMA_FIXTURES = fileURLToPath(new URL('../fixtures/llama.cpp/', import.meta.url));

const FixtureSchema = z.object({
  case: z.string(),
  note: z.string().optional(),
  request: z.object({
    method: z.string(),
    path: z.string(),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
    body_raw: z.string().optional(),
    body_summary: z.string().optional(),
  }),
  response: z.object({
    status: z.number(),
    headers: z.array(z.tuple([z.string(), z.string()])),
    body: z.unknown().optional(),
    body_raw: z.string().optional(),
  }),
});
export type LlamaFixture = z.infer<typeof FixtureSchema> & { file: string };

/** Every file in the fixtures folder, subfolders included, as paths relative to it, sorted. */
export function listFixtureFiles(): string[] {
  return readdirSync(LLAMA_FIXTURES, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(LLAMA_FIXTURES, name)).isFile())
    .sort();
}

/**
 * Every request/response capture (A*…Z*, random-model/*), sorted by name. The raw socket pairs and
 * the Claude Code session exchanges have other shapes: see llama-exchanges.ts.
 */
export function loadLlamaFixtures(): LlamaFixture[] {
  const files = [
    ...readdirSync(LLAMA_FIXTURES).filter(
      (name) => name.endsWith('.json') && /^[A-Z]\d/.test(name),
    ),
    ...readdirSync(join(LLAMA_FIXTURES, 'random-model'))
      .filter((name) => name.endsWith('.json'))
      .map((name) => `random-model/${name}`),
  ].sort();
  return files.map((file) => ({
    file,
    ...FixtureSchema.parse(JSON.parse(readFileSync(join(LLAMA_FIXTURES, file), 'utf8'))),
  }));
}

export function responseHeader(fixture: LlamaFixture, name: string): string | undefined {
  return fixture.response.headers.find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
}

export interface SseMessage {
  event: string;
  data: unknown;
}

export function parseSse(text: string): SseMessage[] {
  return text
    .split('\n\n')
    .filter((chunk) => chunk.trim() !== '')
    .map((chunk) => {
      const lines = chunk.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? '';
      const data = lines.find((line) => line.startsWith('data: '))?.slice(6) ?? 'null';
      return { event, data: JSON.parse(data) as unknown };
    });
}

/**
 * Rebuilds a request whose big prompt was stored as a summary ("'hello ' * 9000, max_tokens 4, stream").
 * Prompt sizes are the captured ones: the emulator's token rule is calibrated so that they overflow or
 * fit exactly as they did on the real server.
 */
export function reconstructBody(fixture: LlamaFixture, all: readonly LlamaFixture[]): unknown {
  const summary = fixture.request.body_summary ?? fixture.note ?? '';
  const same = /(?:same as|identical repeat of) ([A-Z]\d+)/.exec(summary)?.[1];
  const base = same ? all.find((other) => other.file.startsWith(`${same}-`)) : undefined;
  const repeat =
    /identical repeat/.test(summary) && !same ? all.find((o) => o.file.startsWith('A70-')) : base;
  const source = repeat && repeat !== fixture ? (repeat.request.body_summary ?? '') : summary;
  const words = /(?:'([^']+)' \+ )?'([^']+)' \* (\d+)/.exec(source);
  const content = words ? (words[1] ?? '') + (words[2] ?? '').repeat(Number(words[3])) : 'hello';
  const maxTokens = Number(
    /max_tokens (\d+)/.exec(summary)?.[1] ?? /max_tokens (\d+)/.exec(source)?.[1] ?? 16,
  );
  const body: Record<string, unknown> = {
    model: 'tiny-qwen3',
    max_tokens: maxTokens,
    messages: [{ role: 'user', content }],
  };
  if (/stream/.test(summary)) body.stream = true;
  if (/enable_thinking false/.test(summary)) body.chat_template_kwargs = { enable_thinking: false };
  return body;
}

/** The request body as bytes: captured JSON, captured raw text, or the reconstruction. */
export function requestText(
  fixture: LlamaFixture,
  all: readonly LlamaFixture[],
): string | undefined {
  if (fixture.request.method === 'GET') return undefined;
  if (fixture.request.body_raw !== undefined) return fixture.request.body_raw;
  if (fixture.request.body !== undefined) return JSON.stringify(fixture.request.body);
  return JSON.stringify(reconstructBody(fixture, all));
}

/**
 * Differences in JSON structure: object key lists (in order) and value types, recursively. Arrays of
 * equal length are compared item by item, otherwise their first items. Message `content` blocks are
 * compared by block type, since the scripted model writes other blocks than the captured run.
 */
export function shapeDifferences(expected: unknown, actual: unknown, path = '$'): string[] {
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (path.endsWith('.content')) return contentDifferences(expected, actual, path);
    if (expected.length === actual.length) {
      return expected.flatMap((item, index) =>
        shapeDifferences(item, actual[index], `${path}[${index}]`),
      );
    }
    if (expected.length === 0 || actual.length === 0) return [];
    return shapeDifferences(expected[0], actual[0], `${path}[0]`);
  }
  if (isObject(expected) && isObject(actual)) {
    const expectedKeys = Object.keys(expected).join(',');
    const actualKeys = Object.keys(actual).join(',');
    if (expectedKeys !== actualKeys) return [`${path}: keys ${actualKeys} ≠ ${expectedKeys}`];
    return Object.keys(expected).flatMap((key) =>
      shapeDifferences(expected[key], actual[key], `${path}.${key}`),
    );
  }
  if (path.endsWith('.stop_sequence')) return [];
  const kind = (value: unknown): string =>
    value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return kind(expected) === kind(actual) ? [] : [`${path}: ${kind(actual)} ≠ ${kind(expected)}`];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const BLOCK_KEYS: Record<string, string> = {
  thinking: 'type,thinking,signature',
  text: 'type,text',
  tool_use: 'type,id,name,input',
};

function contentDifferences(expected: unknown[], actual: unknown[], path: string): string[] {
  return [...expected, ...actual].flatMap((block, index) => {
    if (!isObject(block) || typeof block.type !== 'string')
      return [`${path}[${index}]: not a block`];
    const keys = Object.keys(block).join(',');
    return BLOCK_KEYS[block.type] === keys
      ? []
      : [`${path}[${index}]: ${block.type} block keys ${keys}`];
  });
}

/** An event as `start|delta|stop <index> <type>` (else its name), for comparing event sequences. */
export function eventLabel(event: SseMessage): string {
  const data = event.data as {
    index?: number;
    content_block?: { type?: string };
    delta?: { type?: string };
  };
  const index = String(data.index);
  if (event.event === 'content_block_start')
    return `start ${index} ${String(data.content_block?.type)}`;
  if (event.event === 'content_block_delta') return `delta ${index} ${String(data.delta?.type)}`;
  if (event.event === 'content_block_stop') return `stop ${index}`;
  return event.event;
}

/** The labels with each run of text or thinking deltas as one: generated text lengths differ. */
export function streamSkeleton(events: readonly SseMessage[]): string[] {
  const labels: string[] = [];
  for (const label of events.map(eventLabel)) {
    const run = /_delta$/.test(label) && !label.endsWith('input_json_delta');
    if (!(run && labels.at(-1) === label)) labels.push(label);
  }
  return labels;
}

/** llama.cpp's stream grammar: blocks open in order, every stop comes at the end, then delta + stop. */
export const LLAMA_STREAM =
  /^message_start( content_block_start( content_block_delta)*)*( content_block_stop)* message_delta message_stop$/;
