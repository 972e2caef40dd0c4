import { topLevelMembers } from './json-members.js';
import { parseRequest } from './normalize.js';

type Parsed = ReturnType<typeof parseRequest>;

/**
 * A route's last tool list. Claude Code sends the same 31 KB list every turn: three quarters of a 42 KB first
 * turn, so most of the parse the log line's bookkeeping does of every request, and most of its garbage.
 */
export interface ToolListCache {
  /**
   * parseRequest(body), with a tool list byte-identical to the last one not parsed again: the rest of the body is
   * parsed with `[]` in its place, then given the list parsed before. That array is the same object for every
   * request that sent those bytes (frozen: nothing may write to it), so what is derived from it can be kept too.
   */
  parse(body: Buffer): Parsed;
}

export function createToolListCache(): ToolListCache {
  let last: { bytes: Buffer; tools: unknown[] } | undefined;

  function remember(parsed: Parsed, bytes: Buffer): Parsed {
    if (!parsed.ok || !Array.isArray(parsed.request.tools)) return parsed;
    last = { bytes: Buffer.from(bytes), tools: Object.freeze(parsed.request.tools) as unknown[] };
    parsed.request.tools = last.tools;
    return parsed;
  }

  return {
    parse(body) {
      // Duplicate keys, or no object at all: undefined, and the whole body is parsed as it is.
      const span = topLevelMembers(body)?.get('tools');
      if (span === undefined) return parseRequest(body);
      const bytes = body.subarray(span.start, span.end);
      if (!last?.bytes.equals(bytes)) return remember(parseRequest(body), bytes);
      const rest = parseRequest(
        Buffer.concat([body.subarray(0, span.start), EMPTY_LIST, body.subarray(span.end)]),
      );
      // A refusal is worded from the body as sent (its positions), not from the one parsed here.
      if (!rest.ok) return parseRequest(body);
      rest.request.tools = last.tools;
      return rest;
    },
  };
}

const EMPTY_LIST = Buffer.from('[]');
