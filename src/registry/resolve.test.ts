import { describe, expect, it } from 'vitest';
import { choose, effectiveContext, type Hit } from './resolve.js';
import type { EndpointProbe } from './probe.js';

const where = { endpoint: 'box', servedId: 'coder' };

describe('effectiveContext', () => {
  it.each([
    [65536, undefined, 65536, 'probe'],
    [undefined, 32768, 32768, 'menu'],
    [65536, 32768, 32768, 'menu'],
    [65536, 65536, 65536, 'probe'],
  ] as const)('server %s, menu %s: %s from the %s', (probed, menu, tokens, source) => {
    const result = effectiveContext(
      probed,
      menu === undefined ? undefined : { name: 'coder', context: menu },
      where,
    );
    expect(result).toEqual({ tokens, source });
  });

  it('ignores a menu window larger than the server’s, naming both numbers', () => {
    expect(effectiveContext(65536, { name: 'coder', context: 131072 }, where)).toEqual({
      tokens: 65536,
      source: 'probe',
      warning:
        'models.yaml sets context 131072 for coder, larger than the 65536 tokens box reports per request: using 65536 (a larger window would only produce overflows)',
    });
  });

  it('says how to set the window when nothing reports one', () => {
    expect(effectiveContext(undefined, undefined, where)).toMatchObject({
      tokens: undefined,
      source: 'unknown',
      warning: expect.stringContaining('set context: N for this model') as unknown,
    });
  });
});

function hit(endpoint: string, match: Hit['match'], servedIds: string[]): Hit {
  const probe = {
    name: endpoint,
    up: true,
    models: servedIds,
    context: {},
  } as unknown as EndpointProbe;
  return { probe, servedId: servedIds[0] ?? '', match, servedIds };
}

describe('choose', () => {
  it('takes the menu endpoint when it serves the model, whatever the others match', () => {
    const chosen = choose([hit('a', 'exact', ['coder']), hit('b', 'substring', ['org/coder-q4'])], {
      name: 'coder',
      endpoint: 'b',
    });
    expect(chosen).toMatchObject({ kind: 'hit', hit: { probe: { name: 'b' } } });
  });

  it('is not ambiguous about one id served on two endpoints, and is about two ids', () => {
    expect(
      choose(
        [hit('a', 'substring', ['org/coder']), hit('b', 'substring', ['org/coder'])],
        undefined,
      ),
    ).toMatchObject({ kind: 'hit' });
    expect(
      choose(
        [hit('a', 'substring', ['org/coder-q4']), hit('b', 'substring', ['org/coder-q8'])],
        undefined,
      ),
    ).toEqual({
      kind: 'ambiguous',
      candidates: [
        { endpoint: 'a', served_model: 'org/coder-q4' },
        { endpoint: 'b', served_model: 'org/coder-q8' },
      ],
    });
  });

  it('lets a better kind of match settle it', () => {
    expect(
      choose(
        [hit('a', 'substring', ['coder-x', 'coder-y']), hit('b', 'exact', ['coder'])],
        undefined,
      ),
    ).toMatchObject({ kind: 'hit', hit: { servedId: 'coder' } });
  });
});
