import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory()
        ? sourceFiles(join(dir, entry.name))
        : Promise.resolve([join(dir, entry.name)]),
    ),
  );
  return nested.flat().filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
}

describe('AGENTS.md', () => {
  it('maps every source file and names no file that is gone', async () => {
    const map = await readFile(join(ROOT, 'AGENTS.md'), 'utf8');
    const files = (await sourceFiles(join(ROOT, 'src'))).map((file) => relative(ROOT, file));
    const mapped = [...map.matchAll(/`(src\/[\w/.-]+\.ts)`/g)].map((match) => match[1]);
    expect(files.filter((file) => !mapped.includes(file))).toEqual([]);
    expect(mapped.filter((file) => file !== undefined && !files.includes(file))).toEqual([]);
  });
});
