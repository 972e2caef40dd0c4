import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { refusedPort } from './registry-support.js';

const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    '',
    '../..',
    '/',
    'none',
    'worktree',
    '20261129-000000-aaaa',
    'qwen',
    -1,
    0,
    1e308,
  ),
);

/** A call of one of `tools` with arguments named as its schema names them (and not), of any value. */
function calls(tools: Record<string, string[]>) {
  return fc.constantFrom(...Object.keys(tools)).chain((tool) =>
    fc.record({
      tool: fc.constant(tool),
      args: fc.dictionary(
        fc.oneof(fc.constantFrom(...(tools[tool] ?? []), 'nonsense'), fc.string({ maxLength: 5 })),
        value,
        { maxKeys: 4 },
      ),
    }),
  );
}

describe('every MCP tool on any arguments (fast-check)', () => {
  it('answers with a result or a named error, never "this is a bug"', async () => {
    // A backend that is down: nothing can start a job, every path still runs.
    const { client } = await startTestApp(emulatorConfig(await refusedPort()));
    // Every tool the server lists, with the argument names of its own schema.
    const listed = (await client.listTools()).tools;
    expect(listed.length).toBeGreaterThanOrEqual(12);
    const tools = Object.fromEntries(
      listed.map((tool) => [tool.name, Object.keys(tool.inputSchema.properties ?? {})]),
    );
    await fc.assert(
      fc.asyncProperty(calls(tools), async ({ tool, args }) => {
        const result = await callToolRaw(client, tool, args);
        const text = JSON.stringify(result.content);
        expect(text, `${tool} ${JSON.stringify(args)}`).not.toContain('this is a bug');
        expect(result.structuredContent, `${tool} ${JSON.stringify(args)}`).not.toMatchObject({
          error: { code: 'INTERNAL' },
        });
      }),
      { numRuns: 1000 },
    );
  }, 120_000);
});
