import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { claimWithoutTrace, decideOutcome, isPossibleNoOp } from './outcome.js';
import { newJobRecord } from './record.js';
import { parseSdkMessage, type SdkResult } from './sdk-message.js';

const fixtures = new URL('../../test/fixtures/claude-code/', import.meta.url);

/** The first `result` message a recorded query() yielded (contract §5). */
async function recordedResult(name: string): Promise<SdkResult> {
  const text = await readFile(new URL(name, fixtures), 'utf8');
  const parsed = JSON.parse(text) as { messages: { message: unknown }[] };
  for (const entry of parsed.messages) {
    const message = parseSdkMessage(entry.message);
    if (message.type === 'result') return message;
  }
  throw new Error(`${name} has no result message`);
}

function result(patch: Partial<SdkResult>): SdkResult {
  return { type: 'result', subtype: 'success', is_error: false, num_turns: 2, ...patch };
}

describe('decideOutcome', () => {
  it.each([
    ['sdk-messages-session.json', 'succeeded', undefined],
    ['sdk-messages-api-retry-then-error.json', 'failed', 'api_error'],
    ['sdk-messages-autocompact.json', 'failed', 'session_failed'],
    ['sdk-messages-max-turns.json', 'failed', 'max_turns'],
  ])('judges the recorded %s result %s', async (fixture, status, kind) => {
    const outcome = decideOutcome(undefined, await recordedResult(fixture), undefined);
    expect(outcome.status).toBe(status);
    expect(outcome.error?.kind).toBe(kind);
  });

  it('fails an API error even though its subtype says success (contract §0.9)', async () => {
    const recorded = await recordedResult('sdk-messages-api-retry-then-error.json');
    expect(recorded.subtype).toBe('success');
    expect(decideOutcome(undefined, recorded, undefined).error?.message).toMatch(/^API Error: 529/);
  });

  it('fails a result without is_error whose terminal_reason is not completed', () => {
    const outcome = decideOutcome(
      undefined,
      result({ terminal_reason: 'hook_stopped', result: 'stopped early' }),
      undefined,
    );
    expect(outcome).toEqual({
      status: 'failed',
      error: {
        kind: 'session_failed',
        message: 'the session stopped with terminal_reason "hook_stopped": stopped early',
      },
    });
  });

  it('fails a session that ended without a result, with what was thrown', () => {
    expect(decideOutcome(undefined, undefined, new Error('spawn claude ENOENT')).error).toEqual({
      kind: 'session_failed',
      message: 'spawn claude ENOENT',
    });
  });

  it.each([
    ['timeout', 'timeout'],
    ['cancelled', 'cancelled'],
    ['shutdown', 'interrupted'],
  ] as const)('lets a %s stop outrank a successful result', (termination, status) => {
    expect(decideOutcome(termination, result({}), undefined).status).toBe(status);
  });
});

/** A fresh job record that the cases below patch into the state they judge. */
const queuedRecord = newJobRecord({
  id: '20261129-000000-aaaa',
  task: 'fix it',
  cwd: '/w',
  isolation: 'none',
  permissionMode: 'acceptEdits',
  maxTurns: 5,
  timeoutS: 60,
});

describe('isPossibleNoOp', () => {
  const base = queuedRecord;

  it.each([
    ['no edits and "Done."', { result_text: 'Done.' }, true],
    ['no edits and no text', { result_text: null }, true],
    ['an edited file', { result_text: 'Done.', files_touched: ['a.ts'] }, false],
    ['a change git saw (through Bash)', { result_text: 'Done.', changed_on_disk: true }, false],
    ['a tree git saw unchanged', { result_text: 'Done.', changed_on_disk: false }, true],
    ['a real report', { result_text: 'Checked a.ts: the bug was already fixed.' }, false],
  ])('flags a succeeded job with %s: %s', (_what, patch, expected) => {
    expect(isPossibleNoOp({ ...base, status: 'succeeded', ...patch })).toBe(expected);
  });

  it('never flags a job that did not succeed', () => {
    expect(isPossibleNoOp({ ...base, status: 'failed', result_text: null })).toBe(false);
  });
});

describe('claimWithoutTrace', () => {
  const base = { ...queuedRecord, status: 'succeeded' as const };

  it('says when a report claims work that left no trace and ran no command', () => {
    const record = { ...base, result_text: 'I fixed the parser and all tests pass now.' };
    expect(claimWithoutTrace(record, 0)).toBe(
      'the report says "I fixed", yet nothing changed on disk and no command ran: check before trusting it',
    );
  });

  it.each([
    ['an edited file', { result_text: 'I fixed it.', files_touched: ['a.ts'] }, 0],
    ['a change git saw', { result_text: 'I fixed it.', changed_on_disk: true }, 0],
    ['a command it ran', { result_text: 'All tests pass.' }, 1],
    ['a report of what it found', { result_text: 'The parser looks right; nothing to change.' }, 0],
  ])('says nothing for %s', (_what, patch, commands) => {
    expect(claimWithoutTrace({ ...base, ...patch }, commands)).toBeUndefined();
  });
});
