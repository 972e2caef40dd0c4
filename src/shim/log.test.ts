import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { silentDiagnostics } from '../diagnostics.js';
import { createRequestLog, type RequestLogLine } from './log.js';

function line(seq: number): RequestLogLine {
  return {
    kind: 'request',
    ts: new Date(0).toISOString(),
    seq,
    method: 'POST',
    path: '/v1/messages',
    session: null,
    status: 200,
    upstream_status: 200,
    ttfb_ms: 1,
    ms: 2,
    model: 'm',
    upstream_model: 'm',
    stream: true,
    messages: 1,
    tools: 0,
    bytes_in: 10,
    bytes_upstream: 10,
    bytes_out: 20,
    events: 3,
    usage: null,
    stop_reason: 'end_turn',
    rewrites: [],
    error: null,
    prefix: null,
    aborted: false,
  };
}

const seqs = async (dir: string): Promise<number[]> =>
  (await readFile(join(dir, 'requests.jsonl'), 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((text) => (JSON.parse(text) as RequestLogLine).seq);

describe('createRequestLog', () => {
  it('writes appended lines in order, batched, without waiting for close', async () => {
    const dir = await tempDir();
    const log = createRequestLog(dir, { full: false, diagnostics: silentDiagnostics });
    for (let seq = 1; seq <= 3; seq++) log.append(line(seq));
    await waitFor(async () => (await seqs(dir)).length === 3, { what: 'the batch on disk' });
    log.append(line(4));
    await log.close();
    expect(await seqs(dir)).toEqual([1, 2, 3, 4]);
  });

  it('flushes what is pending on close, and appends nothing after it', async () => {
    const dir = await tempDir();
    const log = createRequestLog(dir, { full: true, diagnostics: silentDiagnostics });
    log.append(line(1));
    log.appendFull({
      kind: 'request_body',
      ts: new Date(0).toISOString(),
      seq: 1,
      path: '/v1/messages',
      headers: { 'x-api-key': '[redacted]' },
      body: Buffer.from('{"model":"m","messages":[]}'),
    });
    await log.close();
    log.append(line(2));
    expect(await seqs(dir)).toEqual([1]);
    const full = JSON.parse(await readFile(join(dir, 'requests_full.jsonl'), 'utf8')) as {
      body: unknown;
    };
    expect(full.body).toEqual({ model: 'm', messages: [] });
    // Whole prompts: the user's alone.
    for (const file of ['requests.jsonl', 'requests_full.jsonl'])
      expect((await stat(join(dir, file))).mode & 0o777, file).toBe(0o600);
  });
});
