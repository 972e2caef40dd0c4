/**
 * The scripted "model". A script is a list of turns; each turn is a text reply and/or tool calls
 * (`{name, input}`), optionally with a thinking text. Strings may use `${cwd}` (the directory after
 * `Primary working directory:` anywhere in the request) and `${task}` (the first user message's text
 * without `<system-reminder>` blocks). The turn is picked by counting assistant turns in the request;
 * after a compaction the emulator's summary carries `[emulator: N scripted turns done]`, and a request
 * whose first message holds that marker continues at turn N + its own assistant turns. Special cases:
 * a compaction request gets an `<analysis>…</analysis>\n<summary>…</summary>` text; a request without
 * `tools` (title-style) gets a short text; an exhausted script repeats its final text.
 *
 * Script files are JSON or YAML: `[{text?, thinking?, toolCalls?: [{name, input}]}]` (or `{turns: [...]}`).
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { LocalAgentsError } from '../errors.js';
import { contentText } from './render.js';

export interface ScriptTurn {
  text?: string;
  thinking?: string;
  toolCalls?: { name: string; input: Record<string, unknown> }[];
}

const TurnSchema = z.strictObject({
  text: z.string().optional(),
  thinking: z.string().optional(),
  toolCalls: z
    .array(z.strictObject({ name: z.string().min(1), input: z.record(z.string(), z.unknown()) }))
    .optional(),
});
const ScriptSchema = z.preprocess(
  (value) =>
    typeof value === 'object' && value !== null && 'turns' in value ? value.turns : value,
  z.array(TurnSchema),
);

/** Write a file, read it back with Bash, report: real work a test can check on disk. */
export const DEFAULT_SCRIPT: readonly ScriptTurn[] = [
  {
    thinking: 'I will write the file first.',
    text: 'I will create hello.txt.',
    toolCalls: [
      {
        name: 'Write',
        input: { file_path: '${cwd}/hello.txt', content: 'hello from the local model\n' },
      },
    ],
  },
  {
    toolCalls: [
      { name: 'Bash', input: { command: 'cat hello.txt', description: 'Show hello.txt' } },
    ],
  },
  { text: 'Done: I wrote hello.txt in ${cwd} and read it back with cat.' },
];

/** The reply to a request without tools (Claude Code's title request, plain chat). */
export const DEFAULT_PLAIN_REPLY: ScriptTurn = { text: 'Hello from the emulator.' };

/**
 * What the model answers once Ollama silently truncated its prompt (ollama-lmstudio.md §2 "Overflow"):
 * the system prompt and tool definitions at the front are gone, so it no longer knows its task or its
 * tools and writes plain text. A shim that lets such a request through hands this to Claude Code.
 */
export const TRUNCATED_PROMPT_REPLY: ScriptTurn = { text: 'I am not sure what you want me to do.' };

export async function loadScript(path: string): Promise<ScriptTurn[]> {
  let raw: string;
  try {
    raw = await readFile(path, 'utf8');
  } catch (error) {
    throw new LocalAgentsError('IO_FAILED', `cannot read script ${path}`, { cause: error });
  }
  let data: unknown;
  try {
    data = path.endsWith('.json') ? JSON.parse(raw) : parseYaml(raw);
  } catch (error) {
    throw new LocalAgentsError('BAD_ARGUMENT', `script ${path} is not valid JSON/YAML`, {
      cause: error,
    });
  }
  const parsed = ScriptSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? issue.path.join('.') : '';
    throw new LocalAgentsError(
      'BAD_ARGUMENT',
      `script ${path}: ${where} ${issue?.message ?? ''}`.trim(),
      {
        hint: 'a script is a list of turns: [{text?, thinking?, toolCalls?: [{name, input}]}]',
      },
    );
  }
  return parsed.data;
}

export type ScriptedReply = ScriptTurn & {
  kind: 'turn' | 'compaction' | 'title' | 'final' | 'truncated';
};

const MARKER = /\[emulator: (\d+) scripted turns done\]/;
const CWD = /Primary working directory: ([^\n]+)/;
const COMPACTION = [
  'CRITICAL: Respond with TEXT ONLY',
  'Your task is to create a detailed summary',
];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function messagesOf(body: Record<string, unknown>): Record<string, unknown>[] {
  return Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
}

function requestTexts(body: Record<string, unknown>): string[] {
  return [contentText(body.system), ...messagesOf(body).map((m) => contentText(m.content))];
}

// Claude Code's reminders, and the <system> blocks the shim folds into a user turn, are not the task.
function stripReminders(text: string): string {
  return text
    .replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '')
    .replace(/<system>[\s\S]*?<\/system>/g, '')
    .trim();
}

interface ScriptVars {
  cwd: string;
  task: string;
}

function substituteText(text: string, vars: ScriptVars): string {
  return text.replaceAll('${cwd}', vars.cwd).replaceAll('${task}', vars.task);
}

function substituteValue(value: unknown, vars: ScriptVars): unknown {
  if (typeof value === 'string') return substituteText(value, vars);
  if (Array.isArray(value)) return value.map((item) => substituteValue(item, vars));
  if (isRecord(value)) return substituteRecord(value, vars);
  return value;
}

function substituteRecord(
  record: Record<string, unknown>,
  vars: ScriptVars,
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, substituteValue(v, vars)]));
}

function substituteTurn(turn: ScriptTurn, vars: ScriptVars): ScriptTurn {
  const result: ScriptTurn = {};
  if (turn.text !== undefined) result.text = substituteText(turn.text, vars);
  if (turn.thinking !== undefined) result.thinking = substituteText(turn.thinking, vars);
  if (turn.toolCalls) {
    result.toolCalls = turn.toolCalls.map((call) => ({
      name: call.name,
      input: substituteRecord(call.input, vars),
    }));
  }
  return result;
}

/** What the scripted model answers to `body`. */
export function chooseReply(
  body: Record<string, unknown>,
  script: readonly ScriptTurn[],
  plainReply: ScriptTurn = DEFAULT_PLAIN_REPLY,
): ScriptedReply {
  const messages = messagesOf(body);
  const texts = requestTexts(body);
  const cwd = texts.map((text) => CWD.exec(text)?.[1]?.trim()).find(Boolean) ?? '.';
  const firstUser = messages.find((m) => m.role === 'user');
  const task = firstUser ? stripReminders(contentText(firstUser.content)) : '';
  const vars = { cwd, task };
  const offset = Number(MARKER.exec(contentText(messages[0]?.content))?.[1] ?? 0);
  const done = offset + messages.filter((m) => m.role === 'assistant').length;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const lastText = last ? contentText(last.content) : '';
  if (COMPACTION.some((needle) => lastText.includes(needle))) {
    const summary = `The user asked: ${task.slice(0, 200)}\n[emulator: ${done} scripted turns done]`;
    return {
      kind: 'compaction',
      text: `<analysis>Summarising.</analysis>\n<summary>${summary}</summary>`,
    };
  }
  if (!Array.isArray(body.tools) || body.tools.length === 0) {
    return { kind: 'title', ...substituteTurn(plainReply, vars) };
  }
  const turn = script[done];
  if (turn) return { kind: 'turn', ...substituteTurn(turn, vars) };
  const final = [...script].reverse().find((t) => t.text !== undefined && !t.toolCalls?.length);
  return { kind: 'final', text: substituteText(final?.text ?? 'Done.', vars) };
}
