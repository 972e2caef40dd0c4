import { describe, expect, it } from 'vitest';
import { LmStudioV0Schema, LmStudioV1Schema } from './backend-responses.js';
import { readLmStudioV0, readLmStudioV1 } from './probe-lmstudio.js';

// The /api/v1/models sample of docs/reference/ollama-lmstudio.md §6, plus an unloaded model and an embedder.
const v1 = LmStudioV1Schema.parse({
  models: [
    {
      type: 'llm',
      publisher: 'google',
      key: 'google/gemma-4-26b-a4b',
      display_name: 'Gemma 4',
      architecture: 'gemma4',
      loaded_instances: [
        {
          id: 'google/gemma-4-26b-a4b',
          config: {
            context_length: 4096,
            eval_batch_size: 512,
            parallel: 4,
            flash_attention: true,
          },
        },
        { id: 'google/gemma-4-26b-a4b:2', config: { context_length: 65536, parallel: 2 } },
      ],
      max_context_length: 262144,
      format: 'gguf',
    },
    { type: 'llm', key: 'qwen/qwen3-coder-30b', loaded_instances: [], max_context_length: 262144 },
    { type: 'embedding', key: 'nomic-embed', loaded_instances: [] },
  ],
});

describe('LM Studio probe answers (ollama-lmstudio.md §6)', () => {
  it('v1: each loaded instance is a model with its own window; parallel predictions add up', () => {
    const reading = readLmStudioV1(v1);
    expect(reading.models).toEqual(['google/gemma-4-26b-a4b', 'google/gemma-4-26b-a4b:2']);
    expect(reading.context).toEqual({
      'google/gemma-4-26b-a4b': 4096,
      'google/gemma-4-26b-a4b:2': 65536,
    });
    expect(reading.parallel).toBe(6);
    expect(reading.installed).toEqual([
      {
        id: 'qwen/qwen3-coder-30b',
        state: 'not_loaded',
        trained: 262144,
        note: expect.stringContaining('often 4096; at most 262144') as unknown,
      },
    ]);
  });

  it('v0: state loaded / loading / not-loaded, loaded_context_length as the window', () => {
    const v0 = LmStudioV0Schema.parse({
      object: 'list',
      data: [
        {
          id: 'a',
          type: 'llm',
          state: 'loaded',
          max_context_length: 131072,
          loaded_context_length: 32768,
        },
        {
          id: 'b',
          type: 'vlm',
          state: 'loading',
          max_context_length: 131072,
          loaded_context_length: 4096,
        },
        { id: 'c', type: 'llm', state: 'not-loaded', max_context_length: 131072 },
        { id: 'd', type: 'embeddings', state: 'loaded' },
      ],
    });
    const reading = readLmStudioV0(v0);
    expect(reading.models).toEqual(['a']);
    expect(reading.context).toEqual({ a: 32768 });
    expect(reading.installed.map((model) => [model.id, model.state])).toEqual([
      ['b', 'loading'],
      ['c', 'not_loaded'],
    ]);
    expect(reading.parallel).toBeUndefined();
  });
});
