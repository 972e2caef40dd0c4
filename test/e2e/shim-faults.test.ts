import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastUserText, runClaude, startRig } from './shim-support.js';

const COMPACTION = 'CRITICAL: Respond with TEXT ONLY';

describe('the shim turns backend failures into answers the real claude recovers from', () => {
  it('translates llama.cpp’s context overflow so claude compacts and continues', async () => {
    const rig = await startRig();
    // Turn 1 passes (a no-op delay takes the first place in the queue); turn 2 overflows.
    rig.emulator.injectFaults([{ kind: 'delay', ms: 0 }, { kind: 'context_overflow' }]);
    const { result, thrown } = await runClaude(rig, 'Create hello.txt and show me its contents.');

    expect(thrown).toBeUndefined();
    expect(result?.is_error).toBe(false);
    expect(await readFile(join(rig.repo, 'hello.txt'), 'utf8')).toBe(
      'hello from the local model\n',
    );

    const forwarded = rig.emulator.requests.filter((r) => r.path.startsWith('/v1/messages'));
    const overflowAt = forwarded.findIndex((r) => r.status === 400);
    expect(overflowAt).toBe(1);
    const compaction = forwarded.findIndex((r) => lastUserText(r.body).includes(COMPACTION));
    expect(compaction).toBe(overflowAt + 1);
    expect(forwarded[compaction]?.status).toBe(200);
    expect(forwarded.length).toBeGreaterThan(compaction + 1);

    const lines = (await rig.logLines()).filter((line) => line.path.startsWith('/v1/messages'));
    expect(lines[overflowAt]).toMatchObject({ status: 400, upstream_status: 400 });
    expect(lines[overflowAt]?.error?.original).toContain('exceed_context_size_error');
    expect(lines[overflowAt]?.error?.translated).toMatch(
      /^prompt is too long: \d+ tokens > \d+ maximum$/,
    );
    expect(lines[compaction]?.prefix).toEqual({ kind: 'side', reason: 'compaction' });
    expect(lines[compaction + 1]?.prefix).toEqual({ kind: 'new' });
  });

  it('has claude retry a mid-stream error and a 503 while loading, and still finish', async () => {
    const rig = await startRig();
    rig.emulator.injectFaults([
      { kind: 'sse_error', afterEvents: 3 },
      {
        kind: 'status',
        status: 503,
        body: { error: { message: 'Loading model', type: 'unavailable_error', code: 503 } },
      },
    ]);
    const { result, thrown, messages } = await runClaude(
      rig,
      'Create hello.txt and show me its contents.',
    );

    expect(thrown).toBeUndefined();
    expect(result?.is_error).toBe(false);
    expect(await readFile(join(rig.repo, 'hello.txt'), 'utf8')).toBe(
      'hello from the local model\n',
    );
    const retries = messages.filter((m) => m.type === 'system' && m.subtype === 'api_retry');
    expect(retries.length).toBeGreaterThanOrEqual(1);

    const lines = (await rig.logLines()).filter((line) => line.path.startsWith('/v1/messages'));
    expect(lines[0]?.rewrites).toContain('translate_stream_error');
    expect(lines[0]?.status).toBe(200);
    expect(lines[1]).toMatchObject({ status: 529, upstream_status: 503 });
    expect(lines[1]?.error?.original).toContain('Loading model');
    expect(lines.slice(2).every((line) => line.status === 200)).toBe(true);
  });
});
