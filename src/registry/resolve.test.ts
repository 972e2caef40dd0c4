import { describe, expect, it } from 'vitest';
import { builtinDefaults } from './config-defaults.js';
import { choose, effectiveContext, resolveModel, type Hit } from './resolve.js';
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

function localProbe(
  backend: EndpointProbe['backend'],
  loaded: Record<string, number>,
  installed: EndpointProbe['installed'] = [],
): EndpointProbe {
  return {
    name: backend === 'ollama' ? 'laptop' : 'studio',
    base_url: 'http://127.0.0.1:1',
    backend,
    up: true,
    status: 'ok',
    models: Object.keys(loaded),
    context: loaded,
    installed,
    metrics: false,
    latency_ms: 1,
  };
}

function configWith(probe: EndpointProbe) {
  return {
    ok: true as const,
    warnings: [],
    config: {
      defaults: builtinDefaults(),
      endpoints: [{ name: probe.name, base_url: probe.base_url, backend: probe.backend, env: {} }],
      models: [],
      agents: [],
      files: [],
    },
  };
}

describe('resolveModel on servers that load models on demand (issue: Ollama and LM Studio)', () => {
  it('answers a window too small like a model that is not running, with the numbers and the fix', () => {
    const probe = localProbe('ollama', { 'qwen3-coder:30b': 4096 });
    const answer = resolveModel(configWith(probe), [probe], { model: 'qwen3-coder' });
    expect(answer.kind).toBe('unavailable');
    expect(answer.kind === 'unavailable' && answer.message).toContain(
      'qwen3-coder:30b on laptop has a 4096-token window, too small for Claude Code: its fixed prompt alone is about 10500 tokens, and a job needs at least 20480. Ask the user to give it a window of at least 65536: restart Ollama with OLLAMA_CONTEXT_LENGTH=65536',
    );
  });

  it('tells LM Studio users to reload with a larger context length', () => {
    const probe = localProbe('lmstudio', { 'qwen/qwen3-coder-30b': 4096 });
    const answer = resolveModel(configWith(probe), [probe], { model: 'qwen3-coder' });
    expect(answer.kind === 'unavailable' && answer.message).toContain(
      '`lms load qwen/qwen3-coder-30b --context-length 65536`',
    );
  });

  it('runs an installed model whose load window is known from its Modelfile, warning that it loads first', () => {
    const probe = localProbe('ollama', {}, [
      { id: 'devstral:24b', state: 'not_loaded', context: 65536, note: 'gets 65536 tokens' },
    ]);
    const answer = resolveModel(configWith(probe), [probe], { model: 'devstral' });
    expect(answer).toMatchObject({
      kind: 'ready',
      servedId: 'devstral:24b',
      contextTokens: 65536,
      contextSource: 'predicted',
    });
    expect(answer.kind === 'ready' && answer.warnings.join(' ')).toContain(
      'first request loads it',
    );
  });

  it('asks for a load when an installed model’s window is unknown until it loads', () => {
    const probe = localProbe('ollama', {}, [
      {
        id: 'devstral:24b',
        state: 'not_loaded',
        note: 'its window when it loads depends on the server',
      },
    ]);
    const answer = resolveModel(configWith(probe), [probe], { model: 'devstral' });
    expect(answer.kind === 'unavailable' && answer.message).toContain(
      'devstral:24b is installed on laptop but not loaded, and the window it would get is unknown until it loads',
    );
  });

  it('prefers a loaded model to an installed one', () => {
    const probe = localProbe('ollama', { 'qwen3-coder:30b': 65536 }, [
      { id: 'qwen3-coder:latest', state: 'not_loaded', context: 65536, note: '' },
    ]);
    expect(resolveModel(configWith(probe), [probe], { model: 'qwen3-coder' })).toMatchObject({
      kind: 'ready',
      servedId: 'qwen3-coder:30b',
      contextSource: 'probe',
    });
  });
});
