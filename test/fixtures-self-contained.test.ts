import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A user's clone has nothing beside it: every capture a test or benchmark reads lives in test/fixtures/.
 * This fails when code reaches for the project's shared folder outside the repository again.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CODE = /\.(ts|js|mjs|cjs|json)$/;
const SKIP = new Set(['node_modules', 'dist', 'fixtures', '.git']);
const OUTSIDE = /\.\.\/shared\b|(?<![\w/])shared\/(fixtures|reference)\//;
/** The folder beside a developer's checkout, spelt in parts so that this file never names it itself. */
const SHARED = ['..', 'shared'].join('/');

async function listCode(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      if (SKIP.has(entry.name)) return Promise.resolve([]);
      const path = join(dir, entry.name);
      return entry.isDirectory() ? listCode(path) : Promise.resolve(CODE.test(path) ? [path] : []);
    }),
  );
  return nested.flat();
}

describe('the repository tests itself with nothing beside it', () => {
  it('no source, test, benchmark or config file refers to the folder beside the checkout', async () => {
    const roots = ['src', 'test', 'bench'].map((name) => join(ROOT, name));
    const files = [
      ...(await Promise.all(roots.map(listCode))).flat(),
      join(ROOT, 'package.json'),
      join(ROOT, 'vitest.config.ts'),
      join(ROOT, 'tsconfig.json'),
    ];
    expect(files.length).toBeGreaterThan(100);
    const offenders: string[] = [];
    for (const file of files) {
      const lines = (await readFile(file, 'utf8')).split('\n');
      lines.forEach((line, index) => {
        if (OUTSIDE.test(line))
          offenders.push(`${relative(ROOT, file)}:${index + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it('the captures the tests read are in test/fixtures', async () => {
    const llama = await readdir(join(ROOT, 'test', 'fixtures', 'llama.cpp'));
    const claudeCode = await readdir(join(ROOT, 'test', 'fixtures', 'claude-code'));
    expect(llama).toContain('A55-claude-code-request-replay.json');
    expect(llama).toContain('README.md');
    expect(claudeCode).toContain('first-turn-request.json');
    expect(claudeCode).toContain('README.md');
  });

  it('the pattern catches what it must', () => {
    expect(OUTSIDE.test(`new URL('../../${SHARED}/fixtures/llama.cpp/', import.meta.url)`)).toBe(
      true,
    );
    expect(OUTSIDE.test(`see ${['shared', 'reference', 'backends.md'].join('/')}`)).toBe(true);
    expect(OUTSIDE.test('its shared KV cache')).toBe(false);
    expect(OUTSIDE.test(`import '@modelcontextprotocol/sdk/shared/protocol.js'`)).toBe(false);
  });
});
