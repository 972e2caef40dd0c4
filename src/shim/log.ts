import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { Diagnostics } from '../diagnostics.js';
import { mkdirPrivate, PRIVATE_FILE_MODE } from '../private-fs.js';
import type { PrefixVerdict } from './prefix-stability.js';

/**
 * One line of `requests.jsonl`: one per request the shim answered. Field names are stable (docs/shim.md).
 * Times are milliseconds; `null` means "does not apply / not known", never "zero".
 */
export interface RequestLogLine {
  kind: 'request';
  /** When the request arrived (ISO 8601). */
  ts: string;
  /** 1, 2, 3… per route. */
  seq: number;
  method: string;
  /** The path as the client sent it below the route (`/v1/messages?beta=true`), query kept. */
  path: string;
  /** `x-claude-code-session-id`, which ties a session's main, title and subagent requests together. */
  session: string | null;
  /** HTTP status the client got. A stream that failed after its headers still says 200; see `error`. */
  status: number;
  /** HTTP status the backend answered (the last attempt's); null if it was never reached or not asked. */
  upstream_status: number | null;
  /** Request arrival → first byte to the client. */
  ttfb_ms: number | null;
  /** Request arrival → response finished (or the client went away). */
  ms: number;
  /** `model` as the client sent it, and as forwarded after `model_map`. */
  model: string | null;
  upstream_model: string | null;
  stream: boolean;
  /** Entries in `messages` and `tools` as the client sent them. */
  messages: number;
  tools: number;
  /** Body bytes: from the client, forwarded to the backend, and sent back to the client. */
  bytes_in: number;
  bytes_upstream: number;
  bytes_out: number;
  /** SSE events relayed (pings and comments not counted). */
  events: number | null;
  /** `cache_read_input_tokens` null: the backend reports no cache figures (Ollama). */
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number | null;
  } | null;
  stop_reason: string | null;
  /** Request rewrites (`fold_system`, `role_map`, `billing_nonce`, `model_map`, `clamp_max_tokens`), stream repairs
   * (`repair_tool_input`, `drop_done`, `synth_message_start`, `repair_message_start`, `translate_stream_error`) and
   * `keepalive_ping`, `retry_clamped`, `count_tokens_estimate`. */
  rewrites: string[];
  /** When a backend error was translated: its original text, and what the client got instead. */
  error: { original: string; translated: string; lower_bound?: boolean } | null;
  /** Prefix stability of the prompt after rewrites; null for requests that are not `/v1/messages`. */
  prefix: PrefixLog | null;
  /** The client went away before the answer was complete (the backend request was aborted). */
  aborted: boolean;
}

export type PrefixLog =
  | { kind: 'new' }
  | { kind: 'extends' }
  | { kind: 'changed'; changed_at: number | 'system' | 'tools' }
  | { kind: 'side'; reason: 'compaction' | 'title' };

export function toPrefixLog(verdict: PrefixVerdict): PrefixLog {
  return verdict.kind === 'changed' ? { kind: 'changed', changed_at: verdict.at } : verdict;
}

/** One line of the opt-in `requests_full.jsonl`: the body as forwarded, auth headers redacted. */
export interface FullRequestLine {
  kind: 'request_body';
  ts: string;
  seq: number;
  path: string;
  headers: Record<string, string>;
  /** The forwarded body, as raw JSON. */
  body: Buffer;
}

export interface RequestLog {
  append(line: RequestLogLine): void;
  appendFull(line: FullRequestLine): void;
  /** Ends the files once everything appended so far is written. */
  close(): Promise<void>;
}

const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'proxy-authorization', 'cookie']);

export function redactHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = SECRET_HEADERS.has(name.toLowerCase())
      ? '[redacted]'
      : Array.isArray(value)
        ? value.join(', ')
        : value;
  }
  return out;
}

/** The body goes in as raw bytes when it is one line of JSON (Claude Code's are), so it is never re-serialised. */
function fullLine(line: FullRequestLine): Buffer {
  const head = JSON.stringify({
    kind: line.kind,
    ts: line.ts,
    seq: line.seq,
    path: line.path,
    headers: line.headers,
  });
  const body = line.body.includes(0x0a)
    ? Buffer.from(JSON.stringify(JSON.parse(line.body.toString('utf8'))))
    : line.body;
  return Buffer.concat([Buffer.from(`${head.slice(0, -1)},"body":`), body, Buffer.from('}\n')]);
}

/**
 * Lines wait up to this long to be written together. Each write is a round trip to libuv's thread pool (measured
 * with strace: 5 futex calls, an eventfd write and read and an extra event-loop wake per request), which on a
 * busy two-core machine costs the next request more than everything else the log does.
 */
const FLUSH_AFTER_MS = 200;
/** …or until this much is waiting (a few full-body lines), whichever comes first. */
const FLUSH_AT_BYTES = 256 * 1024;

type LogFile = 'lines' | 'full';

/**
 * Appends through one write stream per file, in batches: ordered, and the event loop never waits on the disk.
 * What is appended is on disk within FLUSH_AFTER_MS, and all of it once `close()` resolves.
 */
export function createRequestLog(
  dir: string,
  options: { full: boolean; diagnostics: Diagnostics },
): RequestLog {
  let failed = false;
  let closed = false;
  const ready = mkdirPrivate(dir).then(
    () => ({
      lines: open(join(dir, 'requests.jsonl')),
      full: options.full ? open(join(dir, 'requests_full.jsonl')) : undefined,
    }),
    (error: unknown) => {
      failed = true;
      options.diagnostics.warn('shim: cannot create the request log directory', {
        dir,
        error: String(error),
      });
      return undefined;
    },
  );

  function open(path: string): WriteStream {
    const stream = createWriteStream(path, { flags: 'a', mode: PRIVATE_FILE_MODE });
    stream.on('error', (error) => {
      if (!failed)
        options.diagnostics.warn('shim: request log write failed', { path, error: String(error) });
      failed = true;
    });
    return stream;
  }

  // Lines wait as text, joined and encoded once per flush: a Buffer per line would be an allocation per request.
  const pending: { lines: string[]; full: Buffer[] } = { lines: [], full: [] };
  let pendingBytes = 0;
  let timer: NodeJS.Timeout | undefined;

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    pendingBytes = 0;
    const batches: Record<LogFile, string | Buffer | undefined> = {
      lines: pending.lines.length > 0 ? pending.lines.join('') : undefined,
      full: pending.full.length > 0 ? Buffer.concat(pending.full) : undefined,
    };
    pending.lines = [];
    pending.full = [];
    for (const file of ['lines', 'full'] as const) {
      const data = batches[file];
      if (data === undefined) continue;
      void ready.then((streams) => {
        const stream = streams?.[file];
        if (stream && !failed) stream.write(data);
      });
    }
  }

  /** `size`: bytes, or for text its length (the same for the ASCII the lines almost always are). */
  function queued(size: number): void {
    pendingBytes += size;
    if (pendingBytes >= FLUSH_AT_BYTES) flush();
    // Unref'd: a log waiting to be flushed never keeps the process alive (close() flushes it).
    else timer ??= setTimeout(flush, FLUSH_AFTER_MS).unref();
  }

  return {
    append: (line) => {
      if (failed || closed) return;
      const text = `${JSON.stringify(line)}\n`;
      pending.lines.push(text);
      queued(text.length);
    },
    appendFull: (line) => {
      if (!options.full || failed || closed) return;
      const data = fullLine(line);
      pending.full.push(data);
      queued(data.length);
    },
    async close() {
      if (closed) return;
      flush();
      closed = true;
      const streams = await ready;
      if (!streams) return;
      const ends = [streams.lines, streams.full].map(
        (stream) =>
          new Promise<void>((resolve) => (stream ? stream.end(() => resolve()) : resolve())),
      );
      await Promise.all(ends);
    },
  };
}
