import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { formatConfigIssue } from './config-messages.js';
import { parseLayer, parseProjectLayer } from './config-parse.js';
import { mergeLayers } from './config-rules.js';

/** Values shaped like a models.yaml, mostly wrong in some way: keys of ours with any values, and noise. */
const anyValue = fc.jsonValue({ maxDepth: 3 });
const section = (keys: string[]) =>
  fc.dictionary(fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 8 })), anyValue, {
    maxKeys: 5,
  });
const layerLike = fc.record(
  {
    defaults: fc.oneof(section(['model', 'max_turns', 'timeout_s', 'backend_grace_s']), anyValue),
    endpoints: fc.oneof(
      fc.dictionary(
        fc.string({ minLength: 1, maxLength: 6 }),
        fc.oneof(section(['base_url', 'backend', 'host', 'api_key_env', 'env']), anyValue),
        { maxKeys: 3 },
      ),
      anyValue,
    ),
    models: fc.oneof(
      fc.dictionary(
        fc.string({ minLength: 1, maxLength: 6 }),
        fc.oneof(section(['notes', 'context', 'endpoint', 'tags', 'env', 'max_turns']), anyValue),
        { maxKeys: 3 },
      ),
      anyValue,
    ),
  },
  { requiredKeys: [] },
);

describe('the config parser on any input (fast-check)', () => {
  it('answers every document with a layer or named issues, never a throw', () => {
    fc.assert(
      fc.property(layerLike, (value) => {
        const text = stringify(value);
        const parsed = parseLayer(text, 'models.yaml');
        if (!parsed.layer) expect(parsed.errors.length).toBeGreaterThan(0);
        for (const issue of [...parsed.errors, ...parsed.warnings])
          expect(formatConfigIssue(issue)).toMatch(/^(warning: )?models\.yaml/);
        // Merging what parsed is the next step of every call: it must not throw either.
        const merged = mergeLayers([parsed], '/pkg/models.example.yaml', 'models.yaml');
        expect(Array.isArray(merged.errors)).toBe(true);
        expect(() => parseProjectLayer(text, './models.yaml')).not.toThrow();
      }),
      { numRuns: 1000 },
    );
    // A thousand YAML round trips: 3.4 s on a busy 2-core machine, 6 s on a loaded one, over the 5 s default.
  }, 60_000);

  it('answers any text, YAML or not, with a layer or named issues', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        const parsed = parseLayer(text, 'models.yaml');
        expect(parsed.layer !== undefined || parsed.errors.length > 0).toBe(true);
        expect(() => parseProjectLayer(text, './models.yaml')).not.toThrow();
      }),
      { numRuns: 1000 },
    );
  });
});
