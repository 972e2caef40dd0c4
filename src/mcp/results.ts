import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describeError, isLocalAgentsError } from '../errors.js';

/**
 * The answer of every tool: a JSON object as structuredContent and the same JSON as text. The text is what
 * Claude Code shows the model, so it is compact: indentation would cost the caller's context on every call.
 */
export function jsonResult(data: object): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(data) }],
    structuredContent: { ...data },
  };
}

/** A tool error Claude can act on: what went wrong and the fix, never a stack. */
export function errorResult(message: string, fix?: string, code = 'ERROR'): CallToolResult {
  const error = fix === undefined ? { code, message } : { code, message, fix };
  return {
    isError: true,
    content: [{ type: 'text', text: fix === undefined ? message : `${message}\nfix: ${fix}` }],
    structuredContent: { error },
  };
}

/** Expected failures (LocalAgentsError) become tool errors with their hint; anything else is a bug, said plainly. */
export function resultFromError(error: unknown): CallToolResult {
  if (isLocalAgentsError(error)) return errorResult(error.message, error.hint, error.code);
  return errorResult(
    `localagents failed unexpectedly: ${describeError(error)}`,
    'this is a bug in localagents; the server keeps running, report it with the message above',
    'INTERNAL',
  );
}

/** Runs a handler and turns any throw into a tool error, so a tool never crashes the server. */
export async function answer(handler: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await handler();
  } catch (error) {
    return resultFromError(error);
  }
}
