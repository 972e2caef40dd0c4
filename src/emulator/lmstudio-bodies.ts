/**
 * LM Studio's model lists (ollama-lmstudio.md §6): the native v1 list (`loaded_instances[].config`
 * holds the window and the slot count; `[]` when not loaded), the v0 list (`state` loaded / not-loaded
 * / loading, `loaded_context_length` on the loaded and loading ones; zed#33938) and the OpenAI
 * /v1/models (every downloaded model, JIT loading being on). Lists are pretty-printed with two spaces,
 * as the captured curl outputs show. Every model is the same emulated Qwen3-Coder-30B-A3B GGUF.
 */
import type { LocalModel } from './local-models.js';
import type { LoadState } from './local-models.js';
import type { EmulatorState } from './state.js';

const SIZE_BYTES = 18_556_700_761;
const ARCH = 'qwen3moe';
const QUANTIZATION = 'Q4_K_M';

/** LM Studio names a model by `publisher/name`; a request may also use the name alone or `key@variant`. */
export function lmstudioNamesMatch(key: string, requested: string): boolean {
  const wanted = requested.split('@')[0]?.toLowerCase() ?? '';
  const lower = key.toLowerCase();
  return lower === wanted || lower.slice(lower.indexOf('/') + 1) === wanted;
}

function publisher(key: string): string {
  return key.includes('/') ? (key.split('/')[0] ?? '') : 'lmstudio-community';
}

/** `qwen/qwen3-coder-30b` → `Qwen3 Coder 30B`. */
function displayName(key: string): string {
  const name = key.slice(key.indexOf('/') + 1);
  return name
    .split('-')
    .map((word) =>
      /^\d+b$/i.test(word) ? word.toUpperCase() : word.charAt(0).toUpperCase() + word.slice(1),
    )
    .join(' ');
}

/** The state a list reports: a loaded model shows as loading while setLoading(true) holds it. */
function stateOf(state: EmulatorState, model: LocalModel): LoadState {
  return state.loading && model.state === 'loaded' ? 'loading' : model.state;
}

function pretty(body: unknown): string {
  return JSON.stringify(body, null, 2);
}

function v1Model(state: EmulatorState, model: LocalModel): unknown {
  const variant = `${model.name}@${QUANTIZATION.toLowerCase()}`;
  const loaded = stateOf(state, model) === 'loaded';
  const instances = loaded
    ? [
        {
          id: model.name,
          config: {
            context_length: model.contextLength,
            eval_batch_size: 512,
            parallel: state.pool.slots.length,
            flash_attention: true,
            num_experts: 8,
            offload_kv_cache_to_gpu: true,
          },
        },
      ]
    : [];
  return {
    type: 'llm',
    publisher: publisher(model.name),
    key: model.name,
    display_name: displayName(model.name),
    architecture: ARCH,
    quantization: { name: QUANTIZATION, bits_per_weight: 4 },
    size_bytes: SIZE_BYTES,
    params_string: '30B-A3B',
    loaded_instances: instances,
    max_context_length: state.local.nCtxTrain,
    format: 'gguf',
    capabilities: {
      vision: false,
      trained_for_tool_use: true,
      // The emulated model thinks unless told not to.
      reasoning: { allowed_options: ['off', 'on'], default: 'on' },
    },
    description: null,
    variants: [variant],
    selected_variant: variant,
  };
}

export function lmstudioV1ModelsBody(state: EmulatorState): string {
  return pretty({ models: state.local.models.models.map((model) => v1Model(state, model)) });
}

function v0Model(state: EmulatorState, model: LocalModel): unknown {
  const modelState = stateOf(state, model);
  return {
    id: model.name,
    object: 'model',
    type: 'llm',
    publisher: publisher(model.name),
    arch: ARCH,
    compatibility_type: 'gguf',
    quantization: QUANTIZATION,
    state: modelState,
    max_context_length: state.local.nCtxTrain,
    ...(modelState === 'not-loaded' ? {} : { loaded_context_length: model.contextLength }),
    capabilities: ['tool_use'],
  };
}

export function lmstudioV0ModelsBody(state: EmulatorState): string {
  const data = state.local.models.models.map((model) => v0Model(state, model));
  return pretty({ data, object: 'list' });
}

export function lmstudioV0ModelBody(state: EmulatorState, model: LocalModel): string {
  return pretty(v0Model(state, model));
}

/** The OpenAI list [inferred shape, from memory]. */
export function lmstudioOpenAiModelsBody(state: EmulatorState): string {
  const data = state.local.models.models.map((model) => ({
    id: model.name,
    object: 'model',
    owned_by: 'organization_owner',
  }));
  return pretty({ data, object: 'list' });
}
