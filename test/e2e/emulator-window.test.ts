import { describe, expect, it, onTestFinished } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/emulator.js';

async function emulator(): Promise<Emulator> {
  const emu = await startEmulator({ nCtx: 16384, parallel: 2 });
  onTestFinished(() => emu.close());
  return emu;
}

async function send(emu: Emulator, words: number, stream = false): Promise<Response> {
  return fetch(`${emu.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      max_tokens: 16,
      stream,
      messages: [{ role: 'user', content: 'hello '.repeat(words) }],
    }),
  });
}

/** Prompt tokens = words + the chat template's fixed overhead, measured on a small prompt. */
async function wordsFor(emu: Emulator, promptTokens: number): Promise<number> {
  await (await send(emu, 10)).text();
  const overhead = (emu.requests.at(-1)?.promptTokens ?? 0) - 10;
  expect(overhead).toBeGreaterThan(0);
  return promptTokens - overhead;
}

// llama-server b10108 rejects n_prompt_tokens >= n_ctx (fixtures A34/A35): the boundary itself.
describe('the llama.cpp slot window', () => {
  it.each([false, true])(
    'rejects a prompt of exactly n_ctx tokens with plain JSON (stream %s)',
    async (stream) => {
      const emu = await emulator();
      const response = await send(emu, await wordsFor(emu, 8192), stream);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/json');
      expect(await response.json()).toMatchObject({
        error: { type: 'exceed_context_size_error', n_prompt_tokens: 8192, n_ctx: 8192 },
      });
    },
  );

  it('accepts a prompt of n_ctx − 1 tokens and stops at the window with max_tokens', async () => {
    const emu = await emulator();
    const response = await send(emu, await wordsFor(emu, 8191));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      stop_reason: 'max_tokens',
      usage: { output_tokens: 1 },
    });
  });
});
