/** Bodies of llama-server's probe endpoints, shaped like the b10108 captures (A03, A05, A06, A63). */
import type { SlotPool, SlotState } from './slots.js';

export const LLAMA_BUILD_INFO = 'b10108-0a50d99';
export const DEFAULT_LLAMA_MODEL = '/models/tiny-qwen3-tame.gguf';

export interface LlamaIdentity {
  /** The id replies report: the smallest alias, else the model path. */
  id: string;
  aliases: string[];
  modelPath: string;
  nCtxTrain: number;
  created: number;
}

export function llamaIdentity(
  servedNames: readonly string[] | undefined,
  nCtxTrain: number,
): LlamaIdentity {
  const aliases =
    servedNames && servedNames.length > 0
      ? [...new Set(servedNames)].sort()
      : [DEFAULT_LLAMA_MODEL];
  return {
    id: aliases[0] ?? DEFAULT_LLAMA_MODEL,
    aliases,
    modelPath: DEFAULT_LLAMA_MODEL,
    nCtxTrain,
    created: Math.floor(Date.now() / 1000),
  };
}

export function llamaModelsBody(identity: LlamaIdentity, nCtxSlot: number): unknown {
  const details = {
    parent_model: '',
    format: 'gguf',
    family: '',
    families: [''],
    parameter_size: '',
    quantization_level: '',
  };
  return {
    models: [
      {
        name: identity.id,
        model: identity.id,
        modified_at: '',
        size: '',
        digest: '',
        type: 'model',
        description: '',
        tags: [''],
        capabilities: ['completion'],
        parameters: '',
        details,
      },
    ],
    object: 'list',
    data: [
      {
        id: identity.id,
        aliases: identity.aliases,
        tags: [],
        object: 'model',
        created: identity.created,
        owned_by: 'llamacpp',
        meta: {
          vocab_type: 2,
          n_vocab: 50304,
          n_ctx: nCtxSlot,
          n_ctx_train: identity.nCtxTrain,
          n_embd: 64,
          n_params: 6513024,
          size: 26052096,
          ftype: 'all F32',
        },
      },
    ],
  };
}

export function samplingParams(task?: {
  maxTokens: number;
  stream: boolean;
  nCtx: number;
}): Record<string, unknown> {
  return {
    seed: 4294967295,
    temperature: 0.800000011920929,
    dynatemp_range: 0.0,
    dynatemp_exponent: 1.0,
    top_k: 40,
    top_p: 0.949999988079071,
    min_p: 0.05000000074505806,
    top_n_sigma: -1.0,
    xtc_probability: 0.0,
    xtc_threshold: 0.10000000149011612,
    typical_p: 1.0,
    repeat_last_n: 64,
    repeat_penalty: 1.0,
    presence_penalty: 0.0,
    frequency_penalty: 0.0,
    dry_multiplier: 0.0,
    dry_base: 1.75,
    dry_allowed_length: 2,
    dry_penalty_last_n: task ? task.nCtx : -1,
    mirostat: 0,
    mirostat_tau: 5.0,
    mirostat_eta: 0.10000000149011612,
    max_tokens: task ? task.maxTokens : -1,
    n_predict: task ? task.maxTokens : -1,
    n_keep: 0,
    n_discard: 0,
    ignore_eos: false,
    stream: task ? task.stream : false,
    n_probs: 0,
    min_keep: 0,
    chat_format: task ? 'peg-native' : 'Content-only',
    reasoning_format: task ? 'deepseek' : 'none',
    reasoning_in_content: false,
    generation_prompt: task ? '<|im_start|>assistant\n<think>\n' : '',
    samplers: [
      'penalties',
      'dry',
      'top_n_sigma',
      'top_k',
      'typ_p',
      'top_p',
      'min_p',
      'xtc',
      'temperature',
    ],
    'speculative.types': 'none',
    timings_per_token: false,
    post_sampling_probs: false,
    backend_sampling: false,
    lora: [],
  };
}

// The real template is 9 kB of Jinja; the emulator reports its start and renders it in render.ts.
const CHAT_TEMPLATE =
  "{%- if not messages %}\n    {{- raise_exception('No messages provided.') }}\n{%- endif %}\n{#- Qwen3.5 chat template (abridged by the localagents emulator) #}\n";

export function llamaPropsBody(
  identity: LlamaIdentity,
  pool: SlotPool,
  endpoints: { slots: boolean; metrics: boolean },
): unknown {
  return {
    default_generation_settings: { params: samplingParams(), n_ctx: pool.window.nCtxSlot },
    total_slots: pool.window.slots,
    model_alias: identity.id,
    model_ftype: 'all F32',
    model_path: identity.modelPath,
    modalities: { vision: false, video: false, audio: false },
    media_marker: '<__media_emulatoremulatoremulatoremulato__>',
    endpoint_slots: endpoints.slots,
    endpoint_props: false,
    endpoint_metrics: endpoints.metrics,
    ui: true,
    ui_settings: {},
    chat_template: CHAT_TEMPLATE,
    chat_template_caps: {
      supports_object_arguments: true,
      supports_parallel_tool_calls: true,
      supports_preserve_reasoning: false,
      supports_string_content: true,
      supports_system_role: true,
      supports_tool_calls: true,
      supports_tools: true,
      supports_typed_content: false,
    },
    bos_token: '<|endoftext|>',
    eos_token: '<|im_end|>',
    build_info: LLAMA_BUILD_INFO,
    is_sleeping: false,
    cors_proxy_enabled: false,
  };
}

function slotJson(slot: SlotState, nCtx: number): unknown {
  const head = { id: slot.id, n_ctx: nCtx, speculative: false, is_processing: slot.processing };
  const task = slot.task;
  if (!task) return head;
  const remain = Math.max(task.maxTokens - task.decoded, 0);
  return {
    ...head,
    id_task: task.idTask,
    n_prompt_tokens: task.promptTokens,
    n_prompt_tokens_processed: task.promptTokens - task.cachedTokens,
    n_prompt_tokens_cache: task.cachedTokens,
    params: samplingParams({ maxTokens: task.maxTokens, stream: task.stream, nCtx }),
    next_token: [
      {
        has_next_token: slot.processing,
        has_new_line: false,
        n_remain: remain,
        n_decoded: task.decoded,
      },
    ],
  };
}

export function llamaSlotsBody(pool: SlotPool): unknown[] {
  return pool.slots.map((slot) => slotJson(slot, pool.window.nCtxSlot));
}
