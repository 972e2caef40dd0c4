/** vLLM's `/v1/models` (backends.md §1.2): pydantic `model_dump()` order, nulls kept, LoRA cards. */
import { randomId } from './generate.js';
import type { EmulatorState } from './state.js';

const DEFAULT_ROOT = 'Qwen/Qwen3-Coder-30B-A3B-Instruct';

function modelCard(
  id: string,
  root: string,
  parent: string | null,
  maxModelLen: number | null,
): unknown {
  const created = Math.floor(Date.now() / 1000);
  const permission = {
    id: `modelperm-${randomId(32).toLowerCase()}`,
    object: 'model_permission',
    created,
    allow_create_engine: false,
    allow_sampling: true,
    allow_logprobs: true,
    allow_search_indices: false,
    allow_view: true,
    allow_fine_tuning: false,
    organization: '*',
    group: null,
    is_blocking: false,
  };
  return {
    id,
    object: 'model',
    created,
    owned_by: 'vllm',
    root,
    parent,
    max_model_len: maxModelLen,
    permission: [permission],
  };
}

export function vllmModelsBody(state: EmulatorState): unknown {
  const base = state.servedNames[0] ?? 'qwen3-coder';
  const cards = state.servedNames.map((name) => modelCard(name, DEFAULT_ROOT, null, state.window));
  for (const lora of state.loras)
    cards.push(modelCard(lora.name, `/adapters/${lora.name}`, lora.base ?? base, null));
  return { object: 'list', data: cards };
}
