import { describe, expect, it } from 'vitest';
import { matchServedId, matchServedIdWithKind } from './match.js';

const LLAMA = ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'];
const VLLM = ['deepseek-v4-flash', 'deepseek-v4-flash-lora-sql', 'qwen3-coder'];
const PATHS = ['/models/tiny-qwen3-tame.gguf'];

describe('matchServedId', () => {
  it.each([
    ['qwen3.8-27b', LLAMA, undefined, 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
    [
      'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
      LLAMA,
      undefined,
      'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
    ],
    [
      'UNSLOTH/qwen3.8-27b-gguf:ud-q4_k_xl',
      LLAMA,
      undefined,
      'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL',
    ],
    ['*qwen3.8*', LLAMA, undefined, 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
    ['unsloth/*', LLAMA, undefined, 'unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL'],
    ['qwen3.9-27b', LLAMA, undefined, undefined],
    ['deepseek-v4-flash', VLLM, undefined, 'deepseek-v4-flash'],
    ['deepseek', VLLM, undefined, 'deepseek-v4-flash'],
    ['lora-sql', VLLM, undefined, 'deepseek-v4-flash-lora-sql'],
    ['deepseek-v4-*', VLLM, undefined, 'deepseek-v4-flash'],
    ['*-sql', VLLM, undefined, 'deepseek-v4-flash-lora-sql'],
    ['anything', VLLM, 'qwen3-coder', 'qwen3-coder'],
    ['anything', VLLM, '*lora*', 'deepseek-v4-flash-lora-sql'],
    ['qwen3-coder', VLLM, 'missing-name', undefined],
    ['tiny-qwen3', PATHS, undefined, '/models/tiny-qwen3-tame.gguf'],
    ['tiny*', PATHS, undefined, undefined],
    ['*tiny*', PATHS, undefined, '/models/tiny-qwen3-tame.gguf'],
    ['---', VLLM, undefined, undefined],
    ['qwen', [], undefined, undefined],
  ])('matches %j among %j (served_name %j) → %j', (name, ids, override, expected) => {
    expect(matchServedId(name, ids, override)).toBe(expected);
  });

  it('prefers an exact id over a longer id that also contains the name', () => {
    expect(matchServedId('qwen3', ['qwen3-coder-30b', 'qwen3'])).toBe('qwen3');
  });

  it('lists every id a squashed substring fits, and never picks among them', () => {
    expect(
      matchServedIdWithKind('Qwen 3 Coder', [
        'org/qwen3-coder-30b-a3b-instruct',
        'qwen3-coder-30b',
        'llama-3',
      ]),
    ).toEqual({
      id: 'org/qwen3-coder-30b-a3b-instruct',
      kind: 'substring',
      ids: ['org/qwen3-coder-30b-a3b-instruct', 'qwen3-coder-30b'],
    });
  });

  it('takes a whole id that squashes to the name over ids that merely contain it', () => {
    expect(
      matchServedIdWithKind('Qwen3 Coder 30B', ['qwen3-coder-30b', 'org/qwen3-coder-30b-gguf']),
    ).toEqual({ id: 'qwen3-coder-30b', kind: 'squashed', ids: ['qwen3-coder-30b'] });
  });

  it.each(['x', 'q', '27', 'Q4'])(
    'never matches part of an id with a squashed name under 3 characters (%s)',
    (name) => {
      expect(
        matchServedId(name, ['unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL', 'qwen3', 'x1']),
      ).toBeUndefined();
    },
  );

  it.each([
    ['qwen3', ['qwen3'], undefined, 'exact'],
    ['QWEN3', ['qwen3'], undefined, 'case'],
    ['qwen*', ['qwen3'], undefined, 'glob'],
    ['qwen', ['qwen3'], undefined, 'substring'],
    ['anything', ['qwen3'], 'qwen3', 'exact'],
    ['anything', ['qwen3'], 'q*', 'glob'],
  ])('says %j matched %j (served_name %j) as %j', (name, ids, override, kind) => {
    expect(matchServedIdWithKind(name, ids, override)?.kind).toBe(kind);
  });
});
