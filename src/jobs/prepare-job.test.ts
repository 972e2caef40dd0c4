import { describe, expect, it } from 'vitest';
import { builtinDefaults } from '../registry/config-defaults.js';
import type { ReadyEndpoint } from './ready-endpoint.js';
import { newRecordFor } from './prepare-job.js';

const ready: ReadyEndpoint & { warnings: string[] } = {
  endpoint: { name: 'box', base_url: 'http://127.0.0.1:8080', backend: 'llama.cpp', env: {} },
  servedId: 'qwen3.8-27b',
  contextTokens: 65536,
  contextSource: 'probe',
  warnings: [],
};

function record(patch: Partial<ReadyEndpoint>) {
  return newRecordFor({
    id: '20261129-000000-aaaa',
    request: { task: 'do it', cwd: '/w', model: 'qwen' },
    previous: undefined,
    cwd: '/w',
    isolation: 'none',
    defaults: builtinDefaults(),
    ready: { ...ready, ...patch },
  });
}

describe('newRecordFor', () => {
  it('records the requested and served model, the endpoint, its base URL and the window with its source', () => {
    const made = record({ contextTokens: 40000, contextSource: 'menu' });
    expect(made).toMatchObject({
      status: 'queued',
      requested_model: 'qwen',
      served_model: 'qwen3.8-27b',
      endpoint: 'box',
      base_url: 'http://127.0.0.1:8080',
      context_tokens: 40000,
      context_source: 'menu',
      timeout_s: 1800,
      max_turns: 60,
      permission_mode: 'acceptEdits',
      owner_pid: process.pid,
      claude_pid: null,
    });
    expect(made.warnings).toEqual([]);
  });

  it('warns in the record when the served id looks like a Claude model name (contract §0.3)', () => {
    const made = record({ servedId: 'claude-sonnet-4-5' });
    expect(made.warnings).toEqual([
      expect.stringMatching(
        /^served id "claude-sonnet-4-5" looks like a Claude model name: Claude Code ignores CLAUDE_CODE_MAX_CONTEXT_TOKENS/,
      ),
    ]);
  });

  it('takes max_turns and permission_mode from the menu entry over defaults, and a tool argument over both', () => {
    const modelSettings = { max_turns: 40, permission_mode: 'bypassPermissions' as const };
    expect(record({ modelSettings })).toMatchObject({
      max_turns: 40,
      permission_mode: 'bypassPermissions',
    });
    const argued = newRecordFor({
      id: '20261129-000000-aaab',
      request: { task: 'do it', cwd: '/w', maxTurns: 7, permissionMode: 'default' },
      previous: undefined,
      cwd: '/w',
      isolation: 'none',
      defaults: builtinDefaults(),
      ready: { ...ready, modelSettings },
    });
    expect(argued).toMatchObject({ max_turns: 7, permission_mode: 'default' });
  });

  it('records an unknown window as null rather than 0', () => {
    expect(
      record({ contextTokens: undefined, contextSource: 'unknown' }).context_tokens,
    ).toBeNull();
  });
});
