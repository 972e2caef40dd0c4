import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callToolRaw, emulatorConfig, startTestApp } from '../support/mcp-client.js';
import { refusedPort } from './registry-support.js';

/** Every tool and the names its arguments have, plus names none has. */
const TOOLS: Record<string, string[]> = {
  list_models: [],
  request_model: ['model'],
  register_endpoint: ['name', 'base_url', 'backend', 'host', 'notes', 'api_key_env'],
  register_model: [
    'name',
    'notes',
    'host',
    'served_name',
    'endpoint',
    'context',
    'bring_up',
    'tags',
  ],
  run_agent: [
    'task',
    'model',
    'endpoint',
    'cwd',
    'isolation',
    'base_ref',
    'wait_s',
    'permission_mode',
    'max_turns',
    'allowed_tools',
    'system_prompt_append',
    'resume_job',
    'timeout_s',
  ],
  wait_job: ['job_id', 'timeout_s'],
  job_status: ['job_id'],
  job_log: ['job_id', 'tail_lines'],
  list_jobs: ['include_finished', 'limit'],
  cancel_job: ['job_id'],
  job_diff: ['job_id', 'offset', 'max_lines'],
  local_complete: ['prompt', 'model', 'endpoint', 'system', 'max_tokens', 'temperature'],
};

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

const call = fc.constantFrom(...Object.keys(TOOLS)).chain((tool) =>
  fc.record({
    tool: fc.constant(tool),
    args: fc.dictionary(
      fc.oneof(fc.constantFrom(...(TOOLS[tool] ?? []), 'nonsense'), fc.string({ maxLength: 5 })),
      value,
      { maxKeys: 4 },
    ),
  }),
);

describe('every MCP tool on any arguments (fast-check)', () => {
  it('answers with a result or a named error, never "this is a bug"', async () => {
    // A backend that is down: nothing can start a job, every path still runs.
    const { client } = await startTestApp(emulatorConfig(await refusedPort()));
    await fc.assert(
      fc.asyncProperty(call, async ({ tool, args }) => {
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
