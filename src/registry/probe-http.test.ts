import { createServer } from 'node:http';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ANSWER_TOO_LARGE, probeGet } from './probe-http.js';

describe('probeGet', () => {
  it('cuts an answer off at its 8 MB cap and says so by its code', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"data":[${'{"id":"x"},'.repeat(1_000_000)}{"id":"y"}]}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const answer = await probeGet(
      `http://127.0.0.1:${address.port}`,
      '/v1/models',
      {},
      AbortSignal.timeout(10_000),
    );
    expect(answer).toMatchObject({ ok: false, failure: 'error', code: ANSWER_TOO_LARGE });
  });
});
