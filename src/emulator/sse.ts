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
  let pending = '';
  let decoded = 0;
  const flush = (): void => {
    if (pending && !res.destroyed) res.write(pending);
    pending = '';
  };
  // One HTTP chunk per token needs one write per token to reach the socket before the next: Node 24
  // coalesces back-to-back writes of one tick into a single chunk.
  const flushToken = (): Promise<void> => {
    const text = pending;
    pending = '';
    if (!text || res.destroyed) return Promise.resolve();
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
        await new Promise<void>((resolve) =>
          pending ? res.write(pending, () => resolve()) : resolve(),
        );
        res.destroy();
        return decoded;
      }
      flush();
      if (fault.kind === 'sse_error') {
        res.end(errorEventText(fault.error ?? plan.defaultError));
        return decoded;
      }
      if (fault.kind === 'stall' && !(await pause(fault.ms, signal))) return decoded;
      if (fault.kind === 'malformed') {
        res.end(
          'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_de\n\n',
        );
        return decoded;
      }
    }
    const failure = plan.failure();
    if (failure !== undefined) {
      flush();
      res.end(errorEventText(failure));
      return decoded;
    }
    const wait = index === 0 ? plan.prefillMs : event.tokens * plan.msPerToken;
    if (wait > 0 && !(await pause(wait, signal))) return decoded;
    if (signal.aborted || res.destroyed) return decoded;
    decoded += event.tokens;
    plan.onDecoded(decoded);
    pending += formatSse(event);
    // llama-server writes one chunk per generated token, holding what that token produced: the
    // first also carries message_start and the block start, a later one the next block's start;
    // the closing events follow in one last chunk (A49's raw socket capture).
    if (event.tokens > 0) await flushToken();
  }
  flush();
  res.end();
  return decoded;
}
