import { describe, expect, it } from 'vitest';
import { OllamaPsSchema, OllamaShowSchema, OllamaTagsSchema } from './backend-responses.js';
import { modelfileNumCtx, predictOllamaWindow, readOllama } from './probe-ollama.js';

// Bodies shaped like docs/reference/ollama-lmstudio.md §3.
const ps = OllamaPsSchema.parse({
  models: [
    {
      name: 'qwen3-coder:30b',
      model: 'qwen3-coder:30b',
      size: 20021022720,
      digest: 'a'.repeat(64),
      details: { family: 'qwen3moe', parameter_size: '30.5B', quantization_level: 'Q4_K_M' },
      expires_at: '2026-08-21T18:53:22.1-07:00',
      size_vram: 20021022720,
      context_length: 32768,
    },
  ],
});
const tags = OllamaTagsSchema.parse({
  models: [
    { name: 'qwen3-coder:30b', model: 'qwen3-coder:30b', details: { context_length: 262144 } },
    { name: 'gemma3:latest', model: 'gemma3:latest', details: { context_length: 131072 } },
    { name: 'devstral:24b', model: 'devstral:24b', details: {} },
  ],
});
const show = (parameters: string, arch = 'gemma3', trained = 131072) =>
  OllamaShowSchema.parse({
    parameters,
    model_info: { 'general.architecture': arch, [`${arch}.context_length`]: trained },
  });

describe('Ollama probe answers (ollama-lmstudio.md §3)', () => {
  it('takes the loaded models and their windows from /api/ps, the rest of /api/tags as installed', () => {
    const reading = readOllama(ps, tags, new Map());
    expect(reading.models).toEqual(['qwen3-coder:30b']);
    expect(reading.context).toEqual({ 'qwen3-coder:30b': 32768 });
    expect(reading.installed.map((model) => [model.id, model.state, model.context])).toEqual([
      ['gemma3:latest', 'not_loaded', undefined],
      ['devstral:24b', 'not_loaded', undefined],
    ]);
    expect(reading.installed[0]?.trained).toBe(131072);
    expect(reading.installed[0]?.note).toContain('OLLAMA_CONTEXT_LENGTH');
    expect(reading.installed[0]?.note).toContain('capped at its trained 131072');
  });

  it('reads a Modelfile num_ctx from /api/show parameters (Go %-*s %#v lines)', () => {
    expect(modelfileNumCtx(show('num_ctx                        65536\nstop "<end>"'))).toBe(65536);
    expect(modelfileNumCtx(show('stop "<end>"'))).toBeUndefined();
  });

  it('predicts the window an unloaded model will get: num_ctx capped at the trained length', () => {
    expect(predictOllamaWindow('g', show('num_ctx 65536'), undefined, [])).toMatchObject({
      context: 65536,
      trained: 131072,
    });
    const capped = predictOllamaWindow('g', show('num_ctx 65536', 'llama', 8192), undefined, []);
    expect(capped).toMatchObject({ context: 8192 });
    expect(capped.note).toContain('capped at its trained length');
  });

  it('names a window no window can be instead of using it', () => {
    const bad = OllamaPsSchema.parse({ models: [{ name: 'x', context_length: -1 }] });
    const reading = readOllama(bad, undefined, new Map());
    expect(reading.context).toEqual({});
    expect(reading.problems[0]).toContain('/api/ps x context_length is -1');
  });

  it('reads nothing loaded as no models, and a null list as empty', () => {
    expect(readOllama(OllamaPsSchema.parse({ models: [] }), undefined, new Map()).models).toEqual(
      [],
    );
    expect(
      readOllama(OllamaPsSchema.parse({ models: null }), tags, new Map()).installed,
    ).toHaveLength(3);
  });
});
