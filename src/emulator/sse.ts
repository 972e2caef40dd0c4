/**
 * Progressive SSE playback: events go out as they are "generated", one HTTP chunk per token as
 * llama-server writes them, paced by the decode-speed knob (timers only when a knob is set; at
 * speed 0 the chunks are written back to back), with the stream faults
 * (drop / sse_error / stall after K events) and a mid-stream failure (unified KV exhausted) applied.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fault } from './faults.js';
import { formatSse, type SseEvent } from './message-format.js';

/** Waits `ms`; false when the request was aborted meanwhile. */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/** An `event: error` whose data is the given body (llama.cpp: the bare {code,message,type}). */
export function errorEventText(error: unknown): string {
  return `event: error\ndata: ${JSON.stringify(error)}\n\n`;
}

export interface StreamPlan {
  events: SseEvent[];
  fault: Fault | undefined;
  /**
   * Writes the response head, called right before the first byte. Absent: the head went out already
   * (llama.cpp, vLLM, LM Studio); Ollama writes it together with the first token.
   */
  start?: () => void;
  /** One event's text (default: JSON as JavaScript writes it). */
  format?: (event: SseEvent) => string;
  /**
   * Ends the stream for an `sse_error` fault; `started` tells whether any byte went out. Default: an
   * `event: error` with the fault's (or the default) error.
   */
  endWithError?: (error: unknown, started: boolean) => void;
  /** Before the first event (message_start goes out with the first token). */
  prefillMs: number;
  msPerToken: number;
  /** Data of the error event of an `sse_error` fault that brings none. */
  defaultError: unknown;
  /** The error to end the stream with, once something failed underneath it. */
  failure: () => unknown;
  onDecoded: (tokens: number) => void;
}

/** Plays the stream; resolves with the generated tokens that reached the client. */
export async function playStream(
  res: ServerResponse,
  plan: StreamPlan,
  signal: AbortSignal,
): Promise<number> {
  const { fault } = plan;
  const format = plan.format ?? formatSse;
  let pending = '';
  let decoded = 0;
  let started = plan.start === undefined;
  const begin = (): void => {
    if (started) return;
    started = true;
    plan.start?.();
  };
  const flush = (): void => {
    if (pending && !res.destroyed) {
      begin();
      res.write(pending);
    }
    pending = '';
  };
  // One HTTP chunk per token needs one write per token to reach the socket before the next: Node 24
  // coalesces back-to-back writes of one tick into a single chunk.
  const flushToken = (): Promise<void> => {
    const text = pending;
    pending = '';
    if (!text || res.destroyed) return Promise.resolve();
    begin();
    return new Promise((resolve) => {
      // Written, or the client is gone: either way the next token may go.
      const done = (): void => {
        res.off('close', done);
        resolve();
      };
      res.once('close', done);
      res.write(text, done);
    });
  };
  for (const [index, event] of plan.events.entries()) {
    if (fault && 'afterEvents' in fault && fault.afterEvents === index) {
      if (fault.kind === 'drop') {
        // Let the events already produced reach the socket, then cut it.
        await new Promise<void>((resolve) => {
          if (!pending) return resolve();
          begin();
          res.write(pending, () => resolve());
        });
        res.destroy();
        return decoded;
      }
      flush();
      if (fault.kind === 'sse_error') {
        const error = fault.error ?? plan.defaultError;
        if (plan.endWithError) plan.endWithError(error, started);
        else res.end(errorEventText(error));
        return decoded;
      }
      if (fault.kind === 'stall' && !(await pause(fault.ms, signal))) return decoded;
      if (fault.kind === 'malformed') {
        begin();
        res.end(
          'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_de\n\n',
        );
        return decoded;
      }
    }
    const failure = plan.failure();
    if (failure !== undefined) {
      flush();
      begin();
      res.end(errorEventText(failure));
      return decoded;
    }
    const wait = index === 0 ? plan.prefillMs : event.tokens * plan.msPerToken;
    if (wait > 0 && !(await pause(wait, signal))) return decoded;
    if (signal.aborted || res.destroyed) return decoded;
    decoded += event.tokens;
    plan.onDecoded(decoded);
    pending += format(event);
    // llama-server writes one chunk per generated token, holding what that token produced: the
    // first also carries message_start and the block start, a later one the next block's start;
    // the closing events follow in one last chunk (A49's raw socket capture).
    if (event.tokens > 0) await flushToken();
  }
  flush();
  begin();
  res.end();
  return decoded;
}
