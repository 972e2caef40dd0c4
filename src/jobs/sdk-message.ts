import { z } from 'zod';

/**
 * The parts of Agent SDK messages (contract §4) that jobs read, parsed loosely: the SDK adds fields in
 * every release, and an unknown message kind must pass through to events.jsonl without breaking a job.
 * Messages and content blocks come out as discriminated unions whose catch-all is `{type: 'other'}`, so a
 * reader narrows by `type` alone.
 */
const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const thinkingBlock = z.looseObject({ type: z.literal('thinking'), thinking: z.string() });
const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});
const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z.unknown().optional(),
  is_error: z.boolean().optional(),
});
/** A block of a kind jobs do not read (images, redacted thinking, server tools…), or a malformed one. */
const otherBlock = z
  .looseObject({ type: z.string() })
  .transform((block) => ({ type: 'other' as const, kind: block.type }));

const assistantBlock = z.union([textBlock, thinkingBlock, toolUseBlock, otherBlock]);
const userBlock = z.union([toolResultBlock, textBlock, otherBlock]);

const usage = z.looseObject({
  input_tokens: z.number().optional(),
  output_tokens: z.number().optional(),
  cache_read_input_tokens: z.number().nullable().optional(),
  cache_creation_input_tokens: z.number().nullable().optional(),
});

const knownMessageSchema = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('assistant'),
    session_id: z.string().optional(),
    parent_tool_use_id: z.string().nullable().optional(),
    error: z.string().optional(),
    message: z.looseObject({
      id: z.string().optional(),
      content: z.array(assistantBlock),
    }),
  }),
  z.looseObject({
    type: z.literal('user'),
    parent_tool_use_id: z.string().nullable().optional(),
    message: z.looseObject({ content: z.union([z.string(), z.array(userBlock)]) }),
  }),
  z.looseObject({
    type: z.literal('result'),
    subtype: z.string(),
    is_error: z.boolean(),
    num_turns: z.number(),
    duration_ms: z.number().optional(),
    result: z.string().optional(),
    errors: z.array(z.string()).optional(),
    terminal_reason: z.string().optional(),
    session_id: z.string().optional(),
    usage: usage.optional(),
  }),
  z.looseObject({
    type: z.literal('system'),
    subtype: z.string(),
    session_id: z.string().optional(),
    model: z.string().optional(),
    cwd: z.string().optional(),
    attempt: z.number().optional(),
    max_retries: z.number().optional(),
    retry_delay_ms: z.number().optional(),
    error_status: z.number().nullable().optional(),
    error: z.string().optional(),
    status: z.string().nullable().optional(),
    compact_result: z.string().optional(),
  }),
]);
export type SdkMessage = z.infer<typeof knownMessageSchema> | { type: 'other' };
export type SdkResult = Extract<SdkMessage, { type: 'result' }>;
export type SdkSystemMessage = Extract<SdkMessage, { type: 'system' }>;

/** `{type: 'other'}` for message kinds jobs do not read (stream events, hooks, …): they still go to events.jsonl. */
export function parseSdkMessage(message: unknown): SdkMessage {
  const parsed = knownMessageSchema.safeParse(message);
  return parsed.success ? parsed.data : { type: 'other' };
}
