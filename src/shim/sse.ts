import { classifyBackendError, type BackendError } from './backend-errors.js';
import { anthropicErrorEvent, streamErrorType, type ClientError } from './errors.js';
import { isRecord } from './fold-system.js';
import {
  eventData,
  eventName,
  frame,
  knownEvent,
  num,
  parseJson,
  SEPARATOR,
  startsWithAt,
  UNTOUCHED_RUN,
  type KnownEvent,
} from './sse-frames.js';

/**
 * The side-channel SSE reader of a streamed `/v1/messages` answer. Bytes are passed on per chunk, cut only at event
 * boundaries (a half event is useless to the client and would block a repair); events are parsed on the side for the
 * request log, and the few that need it are repaired (backends.md §3 item 18):
 * - llama.cpp `tool_use` `content_block_start` without `"input"` → `"input":{}`;
 * - vLLM `data: [DONE]` → dropped;
 * - `message_start` missing (llama.cpp, first token a partial UTF-8 sequence) → synthesised;
 *   vLLM's without `type`/`role`, or v0.11's with `usage` beside `message` → completed;
 * - `event: error` with llama.cpp's bare `{code,message,type}` or vLLM's own types → Anthropic's envelope.
 * `message_delta` is left alone: Claude Code reads the prompt size from `message_start` (contract §3.4) and keeps
 * it when the delta has only output, so completing the delta would change nothing it acts on.
 */
export type StreamRepair =
  | 'repair_tool_input'
  | 'drop_done'
  | 'synth_message_start'
  | 'repair_message_start'
  | 'translate_stream_error'
  | 'count_prompt_tokens';

export interface StreamUsage {
  input_tokens: number;
  output_tokens: number;
  /** null: the backend reports no cache figures (Ollama), which is not the same as 0 cached. */
  cache_read_input_tokens: number | null;
}

export interface StreamSummary {
  events: number;
  usage: StreamUsage | undefined;
  stopReason: string | undefined;
  sawMessageStop: boolean;
  repairs: Set<StreamRepair>;
  /** The backend's error event (original data) and what was sent instead. */
  error: { original: string; translated: string } | undefined;
  /** Events whose data was not the JSON object their name promises, passed on as sent; the first kept. */
  malformed: { count: number; first: string } | undefined;
  /** A message_delta reported the prompt count (Ollama's real one; its message_start has an estimate). */
  deltaInputTokens: number | undefined;
  /** The count showed a prompt the backend cut (verifyInputTokens): the rest of the stream was replaced. */
  truncated: { reported: number; error: ClientError } | undefined;
}

export interface SsePush {
  out: Buffer | undefined;
  /** The stream's first event was an error and the caller asked to hold those: its raw data, nothing written. */
  leadingError?: string;
}

export interface SseProcessor {
  push(chunk: Buffer): SsePush;
  /** What is left when the backend ends the stream (an unterminated last event), passed on as it is. */
  flush(): Buffer | undefined;
  /**
   * How the stream stands at its end, for what to send last: answered without reading the chunks whose reading
   * was put off (push), so the end goes out first and the summary is read after it.
   */
  ending(): StreamEnding;
  /** Everything read so far: reading it first catches up on the chunks whose reading was put off. */
  readonly summary: StreamSummary;
}

export interface StreamEnding {
  sawEvents: boolean;
  sawMessageStop: boolean;
  /** An error event was translated or the prompt was found truncated: the stream already ends in an error. */
  failed: boolean;
}

export interface SseProcessorOptions {
  model: string;
  /** True while no byte has gone to the client, so an error can still become an HTTP error (fixture C21). */
  holdLeadingError: () => boolean;
  /**
   * True while backend comments and pings before the first event should not be passed on: they would commit a
   * 200 before the shim's own keepalive would have. Default: never held.
   */
  holdLeadingKeepalive?: () => boolean;
  /** The shim's estimate of the prompt, reported as input_tokens in a synthesised message_start. */
  promptTokensEstimate?: number;
  /** Told about an error event the backend sent mid-stream, as classified. */
  onBackendError?: (error: BackendError) => void;
  /**
   * Checks the prompt count a message_delta reports (truncation-guard.ts): an error returned means the backend cut
   * the prompt, and the stream ends with that error instead of the answer the model gave without its instructions.
   */
  verifyInputTokens?: (inputTokens: number) => ClientError | undefined;
  /**
   * The prompt size message_start should report instead of the backend's, which is only Ollama's four-characters
   * estimate there (ollama-lmstudio.md §1): Claude Code decides when to compact from it (contract §3.4).
   */
  promptTokens?: number;
}

function endsWithSeparator(chunk: Buffer): boolean {
  return chunk[chunk.length - 1] === 0x0a && chunk[chunk.length - 2] === 0x0a;
}

/** The events that make up almost all of a stream and never need a look: counted and passed on untouched. */
const EVENT_FIELD = Buffer.from('event:');
const PLAIN_NAMES = [Buffer.from('content_block_delta\n'), Buffer.from('content_block_stop\n')];

/** The length of a plain event's first line (`event: content_block_delta\n`, with or without the space), or 0. */
function plainNameLineLength(data: Buffer, at: number): number {
  if (!startsWithAt(data, at, EVENT_FIELD)) return 0;
  const name = at + EVENT_FIELD.length + (data[at + EVENT_FIELD.length] === 0x20 ? 1 : 0);
  // Indexed, not `find` with a callback: this runs for every event of a stream's first chunk, in code too
  // short-lived for V8 to optimise.
  for (let index = 0; index < PLAIN_NAMES.length; index++) {
    const candidate = PLAIN_NAMES[index];
    if (candidate && startsWithAt(data, name, candidate)) return name + candidate.length - at;
  }
  return 0;
}

/**
 * How many events a run of complete events holds when every one is a plain delta or block stop; undefined as
 * soon as one is anything else. One pass over the bytes (an event ends at its blank line: JSON data never holds
 * a raw newline), comparing only the first bytes of each event — the relay's per-chunk cost on a fast stream.
 */
export function countPlainEvents(complete: Buffer): number | undefined {
  let count = 0;
  for (let at = 0; at < complete.length;) {
    let end = complete.indexOf(SEPARATOR, at);
    if (end === -1) end = complete.length;
    if (!isPlainEvent(complete, at, end)) return undefined;
    count++;
    at = end + 2;
  }
  return count;
}

/**
 * The event in bytes [at, end) is a plain delta or block stop whose data looks like JSON at both ends: counted and
 * passed on without a parse, by the fast path and the slow path alike, so a chunk's cut never changes the verdict.
 */
function isPlainEvent(data: Buffer, at: number, end: number): boolean {
  const nameLine = plainNameLineLength(data, at);
  return nameLine > 0 && looksLikeJsonData(data, at + nameLine, end);
}

/**
 * `data: {"type":"content_block_…}` between `from` and `end`: the object every server writes for these events,
 * checked at both ends (the hot path cannot afford a parse). Anything else goes to the slow path, which parses it
 * and notes it when it is not JSON, so a garbled event is noted however the stream was cut into chunks.
 */
function looksLikeJsonData(event: Buffer, from: number, end: number): boolean {
  let at = from;
  if (!startsWithAt(event, at, DATA_PREFIX)) return false;
  at += DATA_PREFIX.length;
  if (event[at] === 0x20) at++;
  let last = end - 1;
  while (last > at && (event[last] === 0x0a || event[last] === 0x0d)) last--;
  return startsWithAt(event, at, BLOCK_DATA_PREFIX) && event[last] === 0x7d;
}

const DATA_PREFIX = Buffer.from('data:');
const BLOCK_DATA_PREFIX = Buffer.from('{"type":"content_block_');

/** Events that always carry a JSON object: one whose data is not one was cut or garbled by the backend. */
const JSON_EVENTS = new Set([
  'message_start',
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'message_stop',
]);

/** A message_start frame whose usage says `promptTokens` (output and cache figures as they were). */
function withPromptTokens(data: Record<string, unknown>, promptTokens: number): Buffer {
  const message = isRecord(data.message) ? data.message : {};
  const usage = isRecord(message.usage) ? message.usage : {};
  return frame('message_start', {
    ...data,
    message: { ...message, usage: { ...usage, input_tokens: promptTokens } },
  });
}

/**
 * Held events (a whole answer up to its message_delta) with the message_start's prompt size replaced: once the
 * backend's real count is in, that is what Claude Code should read, not the estimate message_start carried.
 */
export function replaceStartPromptTokens(held: Buffer, promptTokens: number): Buffer {
  const start = held.indexOf('event: message_start\n');
  if (start === -1) return held;
  let end = held.indexOf(SEPARATOR, start);
  if (end === -1) return held;
  end += SEPARATOR.length;
  const data = parseJson(eventData(held.subarray(start, end)));
  if (!data) return held;
  return Buffer.concat([
    held.subarray(0, start),
    withPromptTokens(data, promptTokens),
    held.subarray(end),
  ]);
}

export function createSseProcessor(options: SseProcessorOptions): SseProcessor {
  /**
   * Chunks passed on as they came, not yet read: a chunk of whole events in forms that are never changed
   * (UNTOUCHED_RUN, one native match) goes out at once and is read later, off the path from the backend to the
   * client — by the next chunk that needs a look, the summary's first reader, or catchUp. Reading it then is the
   * same as reading it on arrival: nothing is rewritten and nothing before it is waiting. Off when the options
   * make message_start or message_delta rewritable.
   */
  const unread: Buffer[] = [];
  let unreadStop = false;
  const canDefer = options.promptTokens === undefined && options.verifyInputTokens === undefined;
  let pending: Buffer | undefined;
  let started = false;
  let sawMessageStart = false;
  let halted = false;
  const summary: StreamSummary = {
    events: 0,
    usage: undefined,
    stopReason: undefined,
    sawMessageStop: false,
    repairs: new Set(),
    error: undefined,
    malformed: undefined,
    deltaInputTokens: undefined,
    truncated: undefined,
  };

  function readUsage(usage: unknown, into: StreamUsage): void {
    if (!isRecord(usage)) return;
    into.input_tokens = num(usage.input_tokens) ?? into.input_tokens;
    into.output_tokens = num(usage.output_tokens) ?? into.output_tokens;
    into.cache_read_input_tokens =
      num(usage.cache_read_input_tokens) ?? into.cache_read_input_tokens;
  }

  function synthesisedStart(): Buffer {
    summary.repairs.add('synth_message_start');
    sawMessageStart = true;
    // The log keeps what the backend reported (nothing yet); the client gets the estimate below.
    summary.usage ??= { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: null };
    const id = `msg_shim_${Date.now().toString(36)}`;
    return frame('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: options.model,
        stop_reason: null,
        stop_sequence: null,
        // Claude Code's proactive compaction reads the prompt size from here (contract §3.4): 0 would hide it.
        usage: { input_tokens: options.promptTokensEstimate ?? 0, output_tokens: 0 },
      },
    });
  }

  function messageStart(data: Record<string, unknown>): Buffer | undefined {
    sawMessageStart = true;
    const message = isRecord(data.message) ? data.message : {};
    const usage: StreamUsage = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: null };
    readUsage(message.usage ?? data.usage, usage);
    summary.usage = usage;
    if (options.promptTokens !== undefined && isRecord(message.usage)) {
      summary.repairs.add('count_prompt_tokens');
      return withPromptTokens(data, options.promptTokens);
    }
    if (message.type === 'message' && message.role === 'assistant' && message.usage !== undefined)
      return undefined;
    summary.repairs.add('repair_message_start');
    const { usage: topUsage, ...rest } = data;
    const fixed = {
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      ...message,
      usage: message.usage ?? topUsage ?? { input_tokens: 0, output_tokens: 0 },
    };
    return frame('message_start', { ...rest, message: fixed });
  }

  function blockStart(event: Buffer, data: Record<string, unknown>): Buffer | undefined {
    if (event.indexOf('"tool_use"') === -1 || event.indexOf('"input"') !== -1) return undefined;
    if (!isRecord(data.content_block)) return undefined;
    summary.repairs.add('repair_tool_input');
    return frame('content_block_start', {
      ...data,
      content_block: { ...data.content_block, input: {} },
    });
  }

  /** Reads the delta; the replacement error frame when its prompt count shows a truncated prompt. */
  function messageDelta(data: Record<string, unknown>): Buffer | undefined {
    if (isRecord(data.delta) && typeof data.delta.stop_reason === 'string')
      summary.stopReason = data.delta.stop_reason;
    summary.usage ??= { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: null };
    readUsage(data.usage, summary.usage);
    const reported = isRecord(data.usage) ? num(data.usage.input_tokens) : undefined;
    if (reported === undefined) return undefined;
    summary.deltaInputTokens = reported;
    const error = options.verifyInputTokens?.(reported);
    if (error === undefined) return undefined;
    summary.truncated = { reported, error };
    return Buffer.from(anthropicErrorEvent(error.type, error.message));
  }

  function errorEvent(original: string): Buffer {
    const parsed = parseJson(original);
    const inner = parsed && isRecord(parsed.error) ? parsed.error : parsed;
    const code = num(inner?.code) ?? 500;
    const error = classifyBackendError(
      code,
      JSON.stringify({ error: inner ?? { message: original } }),
    );
    options.onBackendError?.(error);
    const translated = anthropicErrorEvent(streamErrorType(error), error.message);
    summary.repairs.add('translate_stream_error');
    summary.error = { original, translated: translated.slice(translated.indexOf('{'), -2) };
    return Buffer.from(translated);
  }

  /** The replacement for one event, `null` to drop it, or undefined to pass its bytes on unchanged. */
  /** What handle does with these events' parsed data, done with what knownEvent read. */
  function readKnown(known: KnownEvent, insertBefore: (piece: Buffer) => void): undefined {
    if (known.kind === 'message_start') {
      sawMessageStart = true;
      summary.usage = {
        input_tokens: known.input,
        output_tokens: known.output,
        cache_read_input_tokens: known.cached,
      };
    } else if (known.kind === 'content_block_start') {
      if (!sawMessageStart) insertBefore(synthesisedStart());
    } else if (known.kind === 'message_delta') {
      summary.stopReason = known.stopReason;
      summary.usage ??= { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: null };
      summary.usage.output_tokens = known.output;
    } else summary.sawMessageStop = true;
    return undefined;
  }

  function handle(
    event: Buffer,
    name: string,
    insertBefore: (piece: Buffer) => void,
  ): Buffer | null | undefined {
    if (name === ':' || name === 'ping') return undefined;
    if (name === '')
      return eventData(event).trim() === '[DONE]'
        ? (summary.repairs.add('drop_done'), null)
        : undefined;
    summary.events++;
    if (name === 'error') return errorEvent(eventData(event));
    if (!JSON_EVENTS.has(name)) return undefined;
    const text = eventData(event);
    const known = knownEvent(name, text);
    // A message_start whose prompt count is replaced needs its object (withPromptTokens).
    if (known && !(known.kind === 'message_start' && options.promptTokens !== undefined))
      return readKnown(known, insertBefore);
    // Parsed once, here: the checks below and the handlers read the same object.
    const data = parseJson(text);
    if (data === undefined) {
      summary.malformed ??= { count: 0, first: event.toString('utf8', 0, 300) };
      summary.malformed.count++;
      return undefined;
    }
    if (name === 'message_start') return messageStart(data);
    if (!sawMessageStart && name.startsWith('content_block')) insertBefore(synthesisedStart());
    if (name === 'content_block_start') return blockStart(event, data);
    if (name === 'message_delta') return messageDelta(data);
    if (name === 'message_stop') summary.sawMessageStop = true;
    return undefined;
  }

  /** The chunk can go out unread (see `unread`): true when it has been queued for reading later. */
  function putOff(chunk: Buffer): boolean {
    const text = chunk.toString('latin1');
    const run = startSeen() ? UNTOUCHED_RUN.later : UNTOUCHED_RUN.first;
    if (!run.test(text)) return false;
    unread.push(chunk);
    if (text.includes('event: message_stop\n')) unreadStop = true;
    return true;
  }

  /** message_start has been read, or is in a chunk put off (the first one put off always opens with it). */
  function startSeen(): boolean {
    return sawMessageStart || unread.length > 0;
  }

  /** Counts `complete` as read() does when it is a run of plain deltas and block stops; false when it is not. */
  function countedAsPlain(complete: Buffer): boolean {
    const plain = countPlainEvents(complete);
    if (plain === undefined) return false;
    summary.events += plain;
    started = true;
    return true;
  }

  function catchUp(): void {
    if (unread.length === 0) return;
    const chunks = unread.splice(0);
    unreadStop = false;
    for (const chunk of chunks) read(chunk);
  }

  function push(chunk: Buffer): SsePush {
    // Only a chunk of whole events, with none before it waiting for its end, can skip the general reader.
    if (canDefer && !halted && pending === undefined && endsWithSeparator(chunk)) {
      // After message_start, a run of plain deltas is counted as read() counts it, and nothing waits: the
      // events already put off can only be counted, not changed, by the deltas after them.
      if (startSeen() && !chunk.includes(0x0d) && countedAsPlain(chunk)) return { out: chunk };
      if (putOff(chunk)) return { out: chunk };
    }
    catchUp();
    return read(chunk);
  }

  function read(chunk: Buffer): SsePush {
    if (halted) return { out: undefined };
    let data = pending ? Buffer.concat([pending, chunk]) : chunk;
    // SSE allows CRLF; both backends send LF, so this rare path may copy.
    let carry: Buffer | undefined;
    if (data.includes(0x0d)) {
      // A CR at the end may be half of a CRLF split across chunks: keep it for the next one.
      if (data[data.length - 1] === 0x0d) {
        carry = data.subarray(data.length - 1);
        data = data.subarray(0, data.length - 1);
      }
      data = Buffer.from(data.toString('latin1').replace(/\r\n?/g, '\n'), 'latin1');
    }
    const last = data.lastIndexOf(SEPARATOR);
    if (last === -1) {
      pending = carry ? Buffer.concat([data, carry]) : data;
      return { out: undefined };
    }
    const completeEnd = last + 2;
    const rest = data.subarray(completeEnd);
    pending = rest.length > 0 || carry ? Buffer.concat(carry ? [rest, carry] : [rest]) : undefined;
    const complete = data.subarray(0, completeEnd);
    // Most chunks hold only content_block_delta/stop events: counted, passed on, nothing parsed.
    if (sawMessageStart && countedAsPlain(complete)) return { out: complete };
    // Built only once an event is replaced, dropped or preceded by one made here: until then the output is the
    // input's bytes, and none of the events in between is copied or even cut out of it.
    let pieces: Buffer[] | undefined;
    let kept = 0;
    const replace = (from: number, to: number, replacement: Buffer | null): void => {
      pieces ??= [];
      if (from > kept) pieces.push(data.subarray(kept, from));
      if (replacement !== null) pieces.push(replacement);
      kept = to;
    };
    let position = 0;
    while (position < completeEnd) {
      // Extra blank lines before an event belong to no event: passed on as they came, so the event after them
      // is read by its own first line whether or not they ended the chunk before it.
      while (position < completeEnd && data[position] === 0x0a) position++;
      if (position >= completeEnd) break;
      const from = position;
      let end = data.indexOf(SEPARATOR, from);
      if (end === -1 || end >= completeEnd) end = completeEnd - 2;
      position = end + 2;
      // Blank lines between events are passed on as they came, as they are when a chunk holds only them.
      if (end === from) continue;
      if (isPlainEvent(data, from, end)) {
        summary.events++;
        if (!sawMessageStart) replace(from, from, synthesisedStart());
        started = true;
        continue;
      }
      const event = data.subarray(from, end);
      const name = eventName(event);
      if (!started && name === 'error' && options.holdLeadingError()) {
        halted = true;
        // Comments or pings before it are dropped with it: writing them would commit a 200.
        return { out: undefined, leadingError: eventData(event) };
      }
      if (!started && (name === ':' || name === 'ping') && options.holdLeadingKeepalive?.()) {
        replace(from, position, null);
        continue;
      }
      const replacement = handle(event, name, (piece) => replace(from, from, piece));
      if (name !== ':' && name !== 'ping' && name !== '') started = true;
      if (replacement !== undefined) replace(from, position, replacement);
      if (name === 'error' || summary.truncated) {
        // Nothing after an error event reaches the client, in this chunk or a later one.
        halted = true;
        break;
      }
    }
    if (!pieces) return { out: data.subarray(0, position) };
    if (position > kept) pieces.push(data.subarray(kept, position));
    return { out: pieces.length > 0 ? Buffer.concat(pieces) : undefined };
  }

  return {
    push,
    flush() {
      // A chunk was put off only with nothing pending, and nothing is pending after one: no need to catch up.
      const rest = pending;
      pending = undefined;
      return halted ? undefined : rest;
    },
    ending() {
      // Put-off chunks hold events and no error; the rest of the summary is current.
      return {
        sawEvents: summary.events > 0 || unread.length > 0,
        sawMessageStop: summary.sawMessageStop || unreadStop,
        failed: summary.error !== undefined || summary.truncated !== undefined,
      };
    },
    get summary() {
      catchUp();
      return summary;
    },
  };
}
