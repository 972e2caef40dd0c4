import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { errorResult, resultFromError } from './results.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What our tools are: plain callbacks (no task handlers), with or without an input schema. */
type ToolHandler = (...args: [Record<string, unknown>, Extra] | [Extra]) => unknown;

/** The `.describe()` text of each argument, from the schema's JSON Schema (the same text clients show Claude). */
function argumentDescriptions(schema: RegisteredTool['inputSchema']): Record<string, string> {
  if (!schema) return {};
  const json = z.toJSONSchema(schema as z.ZodType, { unrepresentable: 'any' }) as {
    properties?: Record<string, { description?: string }>;
  };
  return Object.fromEntries(
    Object.entries(json.properties ?? {}).flatMap(([name, property]) =>
      property.description ? [[name, property.description]] : [],
    ),
  );
}

/** A rejected call, answered like every other tool error: which argument, what was wrong, and the fix. */
export function badArgumentsResult(
  toolName: string,
  issues: readonly z.core.$ZodIssue[],
  descriptions: Record<string, string>,
): CallToolResult {
  const named = issues.map((issue) => {
    const argument = issue.path.map(String).join('.') || '(arguments)';
    return { argument, problem: `${argument}: ${issue.message}` };
  });
  const fixes = [...new Set(named.map(({ argument }) => argument.split('.')[0] ?? argument))].map(
    (argument) =>
      descriptions[argument]
        ? `${argument} expects: ${descriptions[argument]}`
        : `check ${argument} against the tool's input schema`,
  );
  return errorResult(
    `${toolName}: invalid arguments: ${named.map(({ problem }) => problem).join('; ')}`,
    fixes.join('; '),
    'BAD_ARGUMENT',
  );
}

/**
 * The MCP SDK checks a call's arguments against the tool's input schema before our handler runs, and answers
 * a mismatch itself with bare text: no structuredContent, no fix. This takes over tools/call so that such a
 * call is answered like every other tool error (badArgumentsResult); a call that passes goes to the tool's
 * own handler, as the SDK would call it. Our tools are plain callbacks without output schemas or tasks, so
 * nothing else of the SDK's dispatch applies. Call it once every tool is registered. A call waits for
 * `ready` (the server's parts still loading) before its handler runs.
 */
export function answerBadArguments(
  server: McpServer,
  tools: ReadonlyMap<string, RegisteredTool>,
  ready?: Promise<unknown>,
): void {
  const descriptions = new Map<string, Record<string, string>>();
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    const tool = tools.get(name);
    if (!tool?.enabled) {
      return errorResult(
        `there is no tool named "${name}"`,
        `use one of: ${[...tools.keys()].join(', ')}`,
        'BAD_ARGUMENT',
      );
    }
    // One cast at the SDK's edge: RegisteredTool types its handler as the union of every handler kind.
    const handler = tool.handler as ToolHandler;
    try {
      await ready;
      if (!tool.inputSchema) return (await handler(extra)) as CallToolResult;
      const parsed = await z.safeParseAsync(
        tool.inputSchema as z.ZodType,
        request.params.arguments ?? {},
      );
      if (!parsed.success) {
        if (!descriptions.has(name)) descriptions.set(name, argumentDescriptions(tool.inputSchema));
        return badArgumentsResult(name, parsed.error.issues, descriptions.get(name) ?? {});
      }
      return (await handler(parsed.data as Record<string, unknown>, extra)) as CallToolResult;
    } catch (error) {
      return resultFromError(error);
    }
  });
}
