/**
 * The llama.cpp captures that are not request/response fixtures: the raw socket pairs (A49, A50) and
 * the Claude Code session exchanges, whose request bodies were kept only as a summary.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { LLAMA_FIXTURES } from './llama-fixtures.js';

/** `<name>.request.txt` + `<name>.raw.txt`: byte-exact socket captures. */
export const RAW_CAPTURES = [
  'A49-messages-plain-stream-rawsocket',
  'A50-messages-overflow-stream-rawsocket',
] as const;

export const EXCHANGE_FILES = [
  'claude-code-direct-exchanges.json',
  'claude-code-folded-exchanges.json',
] as const;

export function loadRawCapture(name: string): { request: Buffer; response: Buffer } {
  return {
    request: readFileSync(join(LLAMA_FIXTURES, `${name}.request.txt`)),
    response: readFileSync(join(LLAMA_FIXTURES, `${name}.raw.txt`)),
  };
}

const ExchangeSchema = z.object({
  n: z.number().int(),
  method: z.string(),
  path: z.string(),
  status: z.number().int(),
  request_headers: z.record(z.string(), z.string()),
  request_summary: z.looseObject({
    model: z.string(),
    stream: z.boolean(),
    max_tokens: z.number().int(),
    thinking: z.unknown(),
    output_config: z.unknown(),
    context_management: z.unknown(),
    tools: z.array(z.string()),
    message_roles: z.array(z.string()),
    /** Python's json.dumps of the last message's content, cut at 300 characters. */
    last_message_head: z.string(),
  }),
  response_headers: z.array(z.tuple([z.string(), z.string()])),
  /** The first and last 400 characters of the body, and its full length. */
  response_body_head: z.string(),
  response_body_tail: z.string(),
  response_body_len: z.number().int(),
});
export type Exchange = z.infer<typeof ExchangeSchema>;

export function loadExchanges(file: (typeof EXCHANGE_FILES)[number]): Exchange[] {
  return z
    .array(ExchangeSchema)
    .parse(JSON.parse(readFileSync(join(LLAMA_FIXTURES, file), 'utf8')) as unknown);
}
