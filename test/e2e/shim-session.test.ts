import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runClaude, startRig } from './shim-support.js';

describe('the shim between the real claude and a strict-template llama.cpp', () => {
  it('completes a multi-turn tool session with folded, prefix-stable prompts', async () => {
    const rig = await startRig();
    const { result, thrown } = await runClaude(rig, 'Create hello.txt and show me its contents.');

    expect(thrown).toBeUndefined();
    expect(result?.is_error).toBe(false);
    expect(await readFile(join(rig.repo, 'hello.txt'), 'utf8')).toBe(
      'hello from the local model\n',
    );

    const forwarded = rig.emulator.requests.filter((r) => r.path.startsWith('/v1/messages'));
    expect(forwarded.length).toBeGreaterThanOrEqual(3);
    expect(forwarded.every((r) => r.status === 200)).toBe(true);
    expect(forwarded.every((r) => !r.rawBody.includes('"role":"system"'))).toBe(true);
    // Append-only prompts: the backend's KV cache serves most of each later turn.
    const last = forwarded[forwarded.length - 1];
    expect(last?.cachedTokens).toBeGreaterThan((last?.promptTokens ?? 0) / 2);

    const lines = (await rig.logLines()).filter((line) => line.path.startsWith('/v1/messages'));
    expect(lines).toHaveLength(forwarded.length);
    for (const line of lines) {
      expect(line.rewrites).toEqual(expect.arrayContaining(['fold_system', 'billing_nonce']));
      expect(line.status).toBe(200);
      expect(line.usage?.output_tokens).toBeGreaterThan(0);
    }
    expect(lines[0]?.prefix).toEqual({ kind: 'new' });
    const later = lines.slice(1).map((line) => line.prefix);
    expect(later).toEqual(later.map(() => ({ kind: 'extends' })));
    expect(rig.route.stats()).toMatchObject({
      prefixChecked: lines.length - 1,
      prefixStable: lines.length - 1,
    });
  });
});
