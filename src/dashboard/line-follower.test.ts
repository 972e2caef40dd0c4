import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import { followLines } from './line-follower.js';

function follow(path: string, options: { fromTail?: boolean } = {}) {
  const seen: string[] = [];
  const follower = followLines(path, (lines) => seen.push(...lines), options);
  const read = async () => {
    follower.poke();
    await follower.settled();
    return [...seen];
  };
  return { follower, read };
}

describe('followLines', () => {
  it('hands over complete lines only, whatever the writes cut, and a missing file as empty', async () => {
    const path = join(await tempDir(), 'requests.jsonl');
    const { follower, read } = follow(path);
    expect(await read()).toEqual([]);
    await writeFile(path, 'one\ntw');
    expect(await read()).toEqual(['one']);
    await appendFile(path, 'o\nthree\n');
    expect(await read()).toEqual(['one', 'two', 'three']);
    follower.close();
    await appendFile(path, 'four\n');
    expect(await read()).toEqual(['one', 'two', 'three']);
  });

  it('rejoins a multi-byte character split across reads', async () => {
    const path = join(await tempDir(), 'transcript.txt');
    const text = Buffer.from('héllo → wörld\n');
    const { read } = follow(path);
    await writeFile(path, text.subarray(0, 2));
    expect(await read()).toEqual([]);
    await appendFile(path, text.subarray(2));
    expect(await read()).toEqual(['héllo → wörld']);
  });

  it('starts at a line boundary near the end of a long file when asked for its tail', async () => {
    const path = join(await tempDir(), 'transcript.txt');
    const lines = Array.from({ length: 20_000 }, (_, index) => `line ${index} ${'x'.repeat(20)}`);
    await writeFile(path, `${lines.join('\n')}\n`);
    const seen = await follow(path, { fromTail: true }).read();
    expect(seen.length).toBeGreaterThan(1000);
    expect(seen.length).toBeLessThan(lines.length);
    expect(seen.at(-1)).toBe(lines.at(-1));
    expect(lines.slice(-seen.length)).toEqual(seen);
  });

  it('starts over when the file is replaced by a shorter one', async () => {
    const path = join(await tempDir(), 'requests.jsonl');
    const { read } = follow(path);
    await writeFile(path, 'a long first line\n');
    expect(await read()).toEqual(['a long first line']);
    await writeFile(path, 'new\n');
    expect(await read()).toEqual(['a long first line', 'new']);
  });
});
