import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FaultSchema } from '../src/emulator/faults.js';
import { jobErrorSchema } from '../src/jobs/job.js';

const doc = readFileSync(new URL('../docs/reliability.md', import.meta.url), 'utf8');

describe('docs/reliability.md', () => {
  it('names every fault the emulator can inject', () => {
    const kinds = FaultSchema.options.map((option) => option.shape.kind.value);
    expect(kinds.length).toBeGreaterThanOrEqual(7);
    for (const kind of kinds) expect(doc, kind).toContain(`\`${kind}\``);
  });

  it('names every error kind a job can end with', () => {
    for (const kind of jobErrorSchema.shape.kind.options)
      expect(doc, kind).toContain(`| \`${kind}\` |`);
  });

  it('points only at test files that exist', () => {
    const cited = [...doc.matchAll(/`((?:src|test)\/[\w/.-]+\.test\.ts)`/g)].map((m) => m[1] ?? '');
    expect(cited.length).toBeGreaterThan(10);
    for (const file of cited)
      expect(() => readFileSync(new URL(`../${file}`, import.meta.url)), file).not.toThrow();
  });
});
