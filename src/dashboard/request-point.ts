import { z } from 'zod';

/**
 * One request of a job on the dashboard's timeline, read from a line of its requests.jsonl (RequestLogLine in
 * shim/log.ts; also written by other processes and older versions, so read loosely: a field it lacks is null).
 */
export interface RequestPoint {
  seq: number;
  /** Arrival, milliseconds since the epoch. */
  at: number;
  path: string;
  status: number;
  ttfb_ms: number | null;
  ms: number;
  /** The whole prompt: the tokens processed now plus those read from the cache (Anthropic's input_tokens excludes them). */
  prompt_tokens: number | null;
  /** null: the backend reports no cache figures (Ollama), or the answer carried no usage. */
  cached_tokens: number | null;
  output_tokens: number | null;
  rewrites: string[];
  /** What the client was told when a backend error was translated, or why the request failed. */
  error: string | null;
  prefix: 'new' | 'extends' | 'changed' | 'side' | null;
  aborted: boolean;
}

const nullableNumber = z.number().nullable().catch(null);

// Only the fields the page uses, each with a fallback: one odd field never hides the request.
const lineSchema = z.object({
  kind: z.literal('request'),
  ts: z.string(),
  seq: z.number(),
  path: z.string().catch(''),
  status: z.number(),
  ttfb_ms: nullableNumber.default(null),
  ms: z.number(),
  usage: z
    .object({
      input_tokens: z.number(),
      output_tokens: z.number(),
      cache_read_input_tokens: z.number().nullable().catch(null).default(null),
    })
    .nullable()
    .catch(null)
    .default(null),
  rewrites: z.array(z.string()).catch([]).default([]),
  error: z.object({ translated: z.string() }).nullable().catch(null).default(null),
  prefix: z
    .object({ kind: z.enum(['new', 'extends', 'changed', 'side']) })
    .nullable()
    .catch(null)
    .default(null),
  aborted: z.boolean().catch(false).default(false),
});

/** A requests.jsonl line as a point, or undefined for a line that is not a request (or not JSON). */
export function requestPoint(line: string): RequestPoint | undefined {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = lineSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const entry = parsed.data;
  const at = Date.parse(entry.ts);
  const failed = entry.status >= 400 || entry.error !== null;
  return {
    seq: entry.seq,
    at: Number.isNaN(at) ? 0 : at,
    path: entry.path,
    status: entry.status,
    ttfb_ms: entry.ttfb_ms,
    ms: entry.ms,
    prompt_tokens: entry.usage
      ? entry.usage.input_tokens + (entry.usage.cache_read_input_tokens ?? 0)
      : null,
    cached_tokens: entry.usage?.cache_read_input_tokens ?? null,
    output_tokens: entry.usage?.output_tokens ?? null,
    rewrites: entry.rewrites,
    error: entry.error?.translated ?? (failed ? `HTTP ${entry.status}` : null),
    prefix: entry.prefix?.kind ?? null,
    aborted: entry.aborted,
  };
}
