import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseRequest } from './normalize.js';

/** The schema parseRequest answers for (normalize.ts's RequestSchema, written out again). */
const schema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })),
  system: z.unknown().optional(),
  tools: z.array(z.unknown()).optional(),
  max_tokens: z.number().optional(),
  stream: z.boolean().optional(),
});

const value = fc.jsonValue({ maxDepth: 2 });
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v));
/** JSON text of mostly what the schema wants, sometimes anything, sometimes nothing: both paths get exercised. */
const mostly = <T>(good: fc.Arbitrary<T>) =>
  fc.option(
    fc.oneof(
      { arbitrary: good.map((v) => JSON.stringify(v)), weight: 6 },
      { arbitrary: json, weight: 1 },
    ),
    { nil: undefined, freq: 8 },
  );

/** A JSON object's text from members given as JSON text, in any order, with repeated keys and `__proto__`. */
const objectText = (
  members: Record<string, fc.Arbitrary<string | undefined>>,
  extraKeys: string[],
): fc.Arbitrary<string> =>
  fc
    .tuple(
      fc.record(members),
      fc.array(fc.tuple(fc.constantFrom(...extraKeys), json), { maxLength: 3 }),
    )
    .chain(([known, extra]) => {
      const entries = [
        ...Object.entries(known).filter(
          (entry): entry is [string, string] => entry[1] !== undefined,
        ),
        ...extra,
      ];
      return fc.shuffledSubarray(entries, { minLength: entries.length });
    })
    .map(
      (entries) => `{${entries.map(([key, text]) => `${JSON.stringify(key)}:${text}`).join(',')}}`,
    );

const message = objectText(
  { role: mostly(fc.constantFrom('user', 'assistant', 'system')), content: mostly(value) },
  ['name', '__proto__', '0', 'cache_control'],
);
const request = objectText(
  {
    model: mostly(fc.string()),
    messages: fc.option(
      fc.array(message, { maxLength: 3 }).map((texts) => `[${texts.join(',')}]`),
      { nil: undefined, freq: 10 },
    ),
    system: fc.option(json, { nil: undefined }),
    tools: mostly(fc.array(value, { maxLength: 3 })),
    max_tokens: mostly(fc.constantFrom(16, 32000, -0, 1.5)),
    stream: mostly(fc.boolean()),
  },
  ['metadata', '__proto__', '7', 'thinking'],
);

describe('parseRequest', () => {
  it('gives what the zod schema gives, member order and refusals included (fast-check)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          request,
          value.map((v) => JSON.stringify(v)),
        ),
        (text) => {
          const ours = parseRequest(Buffer.from(text));
          const theirs = schema.safeParse(JSON.parse(text));
          expect(ours.ok).toBe(theirs.success);
          if (!ours.ok || !theirs.success) return;
          accepted++;
          expect(JSON.stringify(ours.request)).toBe(JSON.stringify(theirs.data));
          expect(Object.getPrototypeOf(ours.request)).toBe(Object.getPrototypeOf(theirs.data));
          expect(ours.request.messages.map((m) => Object.keys(m))).toEqual(
            theirs.data.messages.map((m) => Object.keys(m)),
          );
        },
      ),
      { numRuns: 3000 },
    );
    // Most runs take the hand-written path; refusals are compared above too.
    expect(accepted).toBeGreaterThan(300);
  });

  it('words a refusal as zod does', () => {
    expect(parseRequest(Buffer.from('{"messages":[{"role":"user"}]}'))).toEqual({
      ok: false,
      message: 'messages.0.content: Invalid input: expected nonoptional, received undefined',
    });
  });
});
