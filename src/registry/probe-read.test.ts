import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { HttpAnswer } from './probe-http.js';
import { classifyConnectError } from '../connect-errors.js';
import {
  contextWindows,
  detectBackend,
  failureSentence,
  isLoading,
  readModels,
  readProps,
  readSlots,
  slotReport,
} from './probe-read.js';
import { parsePrometheusText } from './prometheus.js';

const FIXTURES = new URL('../../test/fixtures/llama.cpp/', import.meta.url);

/** A recorded llama-server answer as the prober would have received it. */
function captured(file: string): HttpAnswer {
  const { response } = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as {
    response: { status: number; headers: [string, string][]; body?: unknown; body_raw?: string };
  };
  return {
    ok: true,
    status: response.status,
    headers: new Headers(response.headers),
    body: response.body_raw ?? JSON.stringify(response.body),
    ms: 1,
  };
}

const answer = (status: number, body: unknown): HttpAnswer => ({
  ok: true,
  status,
  headers: new Headers(),
  body: JSON.stringify(body),
  ms: 1,
});

// backends.md §1.2: one card per served name plus a LoRA card with max_model_len null.
const VLLM_MODELS = {
  object: 'list',
  data: [
    {
      id: 'my-model',
      object: 'model',
      owned_by: 'vllm',
      root: 'Qwen/Qwen3-Coder-30B-A3B-Instruct',
      parent: null,
      max_model_len: 65536,
    },
    {
      id: 'alias',
      object: 'model',
      owned_by: 'vllm',
      root: 'Qwen/Qwen3-Coder-30B-A3B-Instruct',
      parent: null,
      max_model_len: 65536,
    },
    {
      id: 'sql-lora',
      object: 'model',
      owned_by: 'vllm',
      root: '/adapters/sql',
      parent: 'my-model',
      max_model_len: null,
    },
  ],
};

describe('probe readers on recorded llama-server answers', () => {
  it.each([
    ['A', 8192, 2],
    ['C', 16384, 4],
    ['D', 16384, 2],
    ['E', 16384, 2],
    ['G', 32768, 1],
    ['J', 5632, 3],
  ])('server %s: window %i, %i slots', (prefix, window, slots) => {
    const files = readdirPrefix(prefix);
    const models = readModels(captured(files.models));
    const props = readProps(captured(files.props));
    const slotList = readSlots(captured(files.slots));
    if (!models) throw new Error('no models');
    const windows = contextWindows(models, props, slotList);
    expect(windows).toEqual({ windows: { '/models/tiny-qwen3-tame.gguf': window }, problems: [] });
    const report = slotReport(slotList, props, undefined);
    expect(report).toEqual({ total: slots, busy: 0, free: slots, source: 'slots' });
  });

  it('counts busy slots from /slots while two requests run (A63)', () => {
    expect(
      slotReport(readSlots(captured('A63-get-slots-both-busy.json')), undefined, undefined),
    ).toEqual({ total: 2, busy: 2, free: 0, source: 'slots' });
  });

  it('falls back to /props total_slots and llamacpp:requests_processing when /slots is off', () => {
    const props = readProps(captured('A62-get-props-busy.json'));
    const metricsAnswer = captured('A61-get-metrics-busy.json');
    const metrics = parsePrometheusText(metricsAnswer.ok ? metricsAnswer.body : '');
    expect(slotReport(undefined, props, metrics)).toEqual({
      total: 2,
      busy: 1,
      free: 1,
      source: 'metrics',
    });
    expect(slotReport(undefined, props, undefined)).toEqual({
      total: 2,
      busy: 0,
      free: 2,
      source: 'props',
    });
  });

  it.each<[string, unknown]>([
    ['negative', -8192],
    ['zero', 0],
    ['absurd', 1e308],
    ['a string', '32k'],
    ['a fraction', 8192.5],
  ])('reads a %s max_model_len as an unknown window, naming the field', (_what, value) => {
    const models = readModels(
      answer(200, {
        object: 'list',
        data: [
          { id: 'broken', owned_by: 'vllm', max_model_len: value },
          { id: 'fine', owned_by: 'vllm', max_model_len: 65536 },
        ],
      }),
    );
    if (!models) throw new Error('the rest of the answer must still be read');
    const { windows, problems } = contextWindows(models, undefined, undefined);
    expect(windows).toEqual({ fine: 65536 });
    expect(problems).toEqual([
      `broken max_model_len is ${JSON.stringify(value)}, which no window can be: the window is unknown (set context: N in models.yaml)`,
    ]);
  });

  it('falls back to /props and then /slots for the window on builds without meta.n_ctx', () => {
    const models = readModels(
      answer(200, {
        object: 'list',
        data: [{ id: 'old', owned_by: 'llamacpp', meta: { n_ctx_train: 32768 } }],
      }),
    );
    if (!models) throw new Error('no models');
    expect(
      contextWindows(models, readProps(captured('A05-get-props.json')), undefined).windows,
    ).toEqual({
      old: 8192,
    });
    expect(
      contextWindows(models, undefined, readSlots(captured('C04-get-slots.json'))).windows,
    ).toEqual({
      old: 16384,
    });
    expect(contextWindows(models, undefined, undefined).windows).toEqual({});
  });

  it('recognises the 503 "Loading model" answer (Z02) and nothing else as loading', () => {
    expect(isLoading(captured('Z02-get-v1-models-while-loading.json'))).toBe(true);
    expect(isLoading(captured('A69c-get-slots-fail-on-no-slot-busy.json'))).toBe(false);
  });
});

describe('probe readers on vLLM answers', () => {
  it('gives LoRA cards the window of their base card', () => {
    const models = readModels(answer(200, VLLM_MODELS));
    if (!models) throw new Error('no models');
    expect(contextWindows(models, undefined, undefined).windows).toEqual({
      'my-model': 65536,
      alias: 65536,
      'sql-lora': 65536,
    });
  });
});

describe('detectBackend', () => {
  it.each([
    ['llama.cpp owned_by and meta', captured('A03-get-v1-models.json'), undefined, 'llama.cpp'],
    ['vLLM owned_by', answer(200, VLLM_MODELS), undefined, 'vllm'],
    [
      'a Server: llama.cpp header',
      { ...answer(200, { data: [{ id: 'x' }] }), headers: new Headers({ server: 'llama.cpp' }) },
      undefined,
      'llama.cpp',
    ],
    [
      'a /version answer',
      answer(200, { data: [{ id: 'x' }] }),
      answer(200, { version: '0.12.0' }),
      'vllm',
    ],
    [
      'nothing telling',
      answer(200, { data: [{ id: 'x', owned_by: 'someone' }] }),
      answer(404, {}),
      'other',
    ],
  ])('detects the backend from %s', (_, modelsAnswer, version, expected) => {
    expect(detectBackend('other', readModels(modelsAnswer), modelsAnswer, version)).toBe(expected);
  });

  it('keeps a configured backend', () => {
    expect(
      detectBackend('vllm', readModels(captured('A03-get-v1-models.json')), undefined, undefined),
    ).toBe('vllm');
  });
});

describe('classifyConnectError', () => {
  const fetchFailed = (code: string): Error =>
    Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error(code), { code }),
    });
  it.each([
    [fetchFailed('ECONNREFUSED'), 'refused'],
    [fetchFailed('EHOSTUNREACH'), 'unreachable'],
    [fetchFailed('ENETUNREACH'), 'unreachable'],
    [fetchFailed('ENOTFOUND'), 'unreachable'],
    [fetchFailed('UND_ERR_CONNECT_TIMEOUT'), 'timeout'],
    [fetchFailed('ECONNRESET'), 'error'],
    // node:http puts the code on the error itself (the shim's relay, the probes).
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'refused'],
    [new DOMException('The operation was aborted due to timeout', 'TimeoutError'), 'timeout'],
    [
      Object.assign(new TypeError('fetch failed'), {
        cause: new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]),
      }),
      'refused',
    ],
  ])('classifies %s', (error, failure) => {
    expect(classifyConnectError(error).failure).toBe(failure);
  });
});

describe('failureSentence', () => {
  it.each([
    [
      'refused',
      'ECONNREFUSED',
      'connection refused at gpu:8080: the host is up but nothing listens on that port (not started yet, or the wrong port)',
    ],
    [
      'unreachable',
      'EHOSTUNREACH',
      'host gpu:8080 is unreachable (EHOSTUNREACH): the machine is down or not on this network',
    ],
    [
      'unreachable',
      'ENOTFOUND',
      'the host name in gpu:8080 does not resolve (ENOTFOUND): check the name or the network',
    ],
    [
      'timeout',
      undefined,
      'no answer from gpu:8080 within 2.5 s (probe_timeout_s): the host may be down or firewalled, or the server is stuck',
    ],
    [
      'error',
      'ECONNRESET',
      'the connection to gpu:8080 failed (ECONNRESET) before an answer arrived',
    ],
    [
      'error',
      'ANSWER_TOO_LARGE',
      'gpu:8080 answered more than the probe reads (8 MB): a model list that large is not a llama-server or vLLM answer; check the URL',
    ],
  ] as const)(
    'says what a %s failure (%s) means in a plain sentence',
    (failure, code, sentence) => {
      expect(failureSentence(failure, code, 'gpu:8080', 2500)).toBe(sentence);
    },
  );
});

function readdirPrefix(prefix: string): { models: string; props: string; slots: string } {
  if (prefix === 'A')
    return {
      models: 'A03-get-v1-models.json',
      props: 'A05-get-props.json',
      slots: 'A06-get-slots-idle.json',
    };
  return {
    models: `${prefix}02-get-v1-models.json`,
    props: `${prefix}03-get-props.json`,
    slots: `${prefix}04-get-slots.json`,
  };
}
