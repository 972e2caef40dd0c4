import { isAbsolute, relative } from 'node:path';
import { z } from 'zod';
import { parseSdkMessage, type SdkResult, type SdkSystemMessage } from './sdk-message.js';

/** Tools whose input names a file the job changed (design: files touched). */
const EDITING_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);
const fileInput = z.looseObject({ file_path: z.string() });
const notebookInput = z.looseObject({ notebook_path: z.string() });
const THINKING_EXCERPT = 400;
const TOOL_RESULT_EXCERPT = 800;
const ACTIVITY_EXCERPT = 120;

export interface TranscriptStats {
  sessionId: string | undefined;
  turns: number;
  toolCalls: number;
  /** Bash calls: commands the session ran (a build, the tests). */
  commandsRun: number;
  filesTouched: string[];
  lastActivity: string | undefined;
  /** The last tool call, e.g. `Bash(npm test)`: progress lines show it beside the last activity. */
  lastTool: string | undefined;
  lastText: string | undefined;
  result: SdkResult | undefined;
}

export interface Transcript {
  /** Transcript lines for one SDK message (may be empty), updating the stats. */
  add(message: unknown): string[];
  stats(): TranscriptStats;
}

function excerpt(text: string, limit: number): string {
  const flat = text.trim();
  return flat.length <= limit
    ? flat
    : `${flat.slice(0, limit)}… (${flat.length - limit} more chars)`;
}

function oneLine(text: string, limit = ACTIVITY_EXCERPT): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

function indent(text: string, prefix = '    '): string {
  return text
    .split('\n')
    .map((line) => `${prefix}${line}`)
    .join('\n');
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: unknown) => {
      const text = z.looseObject({ type: z.literal('text'), text: z.string() }).safeParse(block);
      return text.success ? text.data.text : '[non-text content]';
    })
    .join('\n');
}

/** A short description of a tool call: the argument that says what it does. */
export function describeToolCall(name: string, input: unknown): string {
  const fields = z
    .looseObject({
      file_path: z.string().optional(),
      notebook_path: z.string().optional(),
      command: z.string().optional(),
      pattern: z.string().optional(),
      path: z.string().optional(),
      url: z.string().optional(),
    })
    .safeParse(input);
  const data = fields.success ? fields.data : {};
  const detail =
    data.file_path ?? data.notebook_path ?? data.command ?? data.pattern ?? data.url ?? data.path;
  return detail === undefined ? name : `${name}(${oneLine(detail, 200)})`;
}

function touchedFile(name: string, input: unknown): string | undefined {
  if (!EDITING_TOOLS.has(name)) return undefined;
  const file = fileInput.safeParse(input);
  if (file.success) return file.data.file_path;
  const notebook = notebookInput.safeParse(input);
  return notebook.success ? notebook.data.notebook_path : undefined;
}

/** Accumulates SDK messages into transcript lines and job statistics. `cwd` makes touched paths relative. */
export function createTranscript(cwd: string): Transcript {
  const seenTurns = new Set<string>();
  // A file counts as touched once its edit succeeded, or while the edit's result is still out (a job
  // stopped mid-edit may have changed it); an edit whose result is an error (denied, failed) does not.
  const files = new Map<string, 'pending' | 'done'>();
  const pendingEdits = new Map<string, string>();
  const publishFiles = (): void => {
    stats.filesTouched = [...files.keys()];
  };
  const stats: TranscriptStats = {
    sessionId: undefined,
    turns: 0,
    toolCalls: 0,
    commandsRun: 0,
    filesTouched: [],
    lastActivity: undefined,
    lastTool: undefined,
    lastText: undefined,
    result: undefined,
  };
  const relativePath = (path: string): string => {
    if (!isAbsolute(path)) return path;
    const inside = relative(cwd, path);
    return inside.startsWith('..') || isAbsolute(inside) ? path : inside;
  };

  const add = (raw: unknown): string[] => {
    const message = parseSdkMessage(raw);
    if (message.type === 'other') return [];
    if ('session_id' in message && typeof message.session_id === 'string')
      stats.sessionId ??= message.session_id;
    const sub =
      message.type !== 'result' && message.type !== 'system' && message.parent_tool_use_id
        ? '  [subagent] '
        : '';
    switch (message.type) {
      case 'system':
        return describeSystem(message);
      case 'assistant': {
        const id = message.message.id;
        if (!sub && id !== undefined && !seenTurns.has(id)) {
          seenTurns.add(id);
          stats.turns = seenTurns.size;
        }
        const lines: string[] = [];
        for (const block of message.message.content) {
          if (block.type === 'text') {
            if (message.error)
              lines.push(`${sub}! api error (${message.error}): ${block.text.trim()}`);
            else lines.push(`${sub}assistant: ${block.text.trim()}`);
            if (!message.error) stats.lastText = block.text.trim();
            stats.lastActivity = `says: ${oneLine(block.text)}`;
          } else if (block.type === 'thinking') {
            lines.push(`${sub}thinking: ${excerpt(block.thinking, THINKING_EXCERPT)}`);
            stats.lastActivity = 'thinking';
          } else if (block.type === 'tool_use') {
            stats.toolCalls += 1;
            if (block.name === 'Bash') stats.commandsRun += 1;
            const file = touchedFile(block.name, block.input);
            if (file !== undefined) {
              const path = relativePath(file);
              if (!files.has(path)) files.set(path, 'pending');
              pendingEdits.set(block.id, path);
              publishFiles();
            }
            const call = describeToolCall(block.name, block.input);
            lines.push(`${sub}tool ${call}`);
            stats.lastActivity = `tool ${call}`;
            stats.lastTool = call;
          }
        }
        return lines;
      }
      case 'user': {
        if (typeof message.message.content === 'string') return [];
        const lines: string[] = [];
        for (const block of message.message.content) {
          if (block.type !== 'tool_result') continue;
          const failed = block.is_error === true;
          const edited = pendingEdits.get(block.tool_use_id);
          if (edited !== undefined) {
            pendingEdits.delete(block.tool_use_id);
            if (!failed) files.set(edited, 'done');
            else if (files.get(edited) === 'pending') files.delete(edited);
            publishFiles();
          }
          const text = excerpt(toolResultText(block.content), TOOL_RESULT_EXCERPT);
          lines.push(
            `${sub}${failed ? 'tool error' : 'result'}:${text ? `\n${indent(text)}` : ' (empty)'}`,
          );
        }
        return lines;
      }
      case 'result': {
        stats.result = message;
        if (!message.is_error) return [];
        const why = message.result ?? message.errors?.join('; ') ?? message.subtype;
        return [
          `! session ended with an error (${message.terminal_reason ?? message.subtype}): ${why}`,
        ];
      }
    }
  };

  return { add, stats: () => ({ ...stats, filesTouched: [...stats.filesTouched] }) };
}

function describeSystem(message: SdkSystemMessage): string[] {
  switch (message.subtype) {
    case 'init':
      return [
        `session ${message.session_id ?? '?'} started (model ${message.model ?? '?'}, cwd ${message.cwd ?? '?'})`,
      ];
    case 'api_retry':
      return [
        `! backend error ${message.error_status ?? 'without status'} (${message.error ?? 'unknown'}): retry ${message.attempt ?? '?'}/${message.max_retries ?? '?'} in ${message.retry_delay_ms ?? '?'} ms`,
      ];
    case 'compact_boundary':
      return ['- context compacted'];
    case 'status':
      return message.status === 'compacting' ? ['- compacting the context…'] : [];
    default:
      return [];
  }
}

export interface StartLineInput {
  jobId: string;
  endpoint: string;
  model: string;
  contextTokens: number | undefined;
  contextSource: string;
  cwd: string;
  resumedFrom?: string | null | undefined;
}

export function formatStartLine(input: StartLineInput): string {
  const resumed = input.resumedFrom ? `, resuming ${input.resumedFrom}` : '';
  return `=== job ${input.jobId} start: endpoint ${input.endpoint}, model ${input.model}, window ${input.contextTokens === undefined ? 'unknown' : `${input.contextTokens} tokens`} (${input.contextSource}), cwd ${input.cwd}${resumed}`;
}

export function formatStderr(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => `stderr: ${line}`);
}

export interface DoneLineInput {
  status: string;
  turns: number;
  toolCalls: number;
  durationMs: number;
  metrics?: string | undefined;
}

export function formatDoneLine(input: DoneLineInput): string {
  const seconds = (input.durationMs / 1000).toFixed(1);
  const metrics = input.metrics ? `; ${input.metrics}` : '';
  return `=== done: ${input.status} after ${input.turns} turns, ${input.toolCalls} tool calls, ${seconds} s${metrics}`;
}
