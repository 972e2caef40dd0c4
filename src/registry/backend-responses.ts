import { z } from 'zod';

/**
 * The parts of llama-server, vLLM, Ollama and LM Studio probe answers we read. Loose objects: both servers add
 * fields over time (docs/reference/backends.md §1.2, §2.9–2.11), and unknown ones must not fail a probe.
 */

const positiveInt = z.number().int().positive();
/**
 * A window as the server sent it, whatever it is: read by probe-read's windowOf, which turns a value no server
 * means (negative, 0, 1e308, a string) into "unknown" with a warning instead of failing the whole answer.
 */
const windowField = z.unknown().optional();

export const ModelCardSchema = z.looseObject({
  id: z.string(),
  owned_by: z.string().optional(),
  // llama.cpp b9076+: per-slot window; never n_ctx_train (the model's training length).
  meta: z.looseObject({ n_ctx: windowField, n_ctx_train: z.unknown().optional() }).nullish(),
  // vLLM: null on LoRA cards, which name their base in `parent`.
  max_model_len: windowField,
  parent: z.string().nullish(),
  root: z.string().nullish(),
  // llama.cpp router mode: only loaded (or sleeping) models answer without a load.
  status: z.looseObject({ value: z.string() }).nullish(),
});

export const ModelListSchema = z.looseObject({
  data: z.array(ModelCardSchema),
  // llama.cpp adds an Ollama-style list; its presence alone says "llama.cpp".
  models: z.array(z.unknown()).optional(),
});

export const PropsSchema = z.looseObject({
  default_generation_settings: z.looseObject({ n_ctx: windowField }).optional(),
  total_slots: positiveInt.optional(),
  build_info: z.string().optional(),
  endpoint_metrics: z.boolean().optional(),
  endpoint_slots: z.boolean().optional(),
});

export const SlotsSchema = z.array(
  z.looseObject({ id: z.number(), n_ctx: windowField, is_processing: z.boolean() }),
);

export const VersionSchema = z.looseObject({ version: z.string() });

/** Both servers' error envelopes: llama.cpp `{error:{message,type,code}}`, vLLM `{error:"Unauthorized"}`. */
export const ErrorBodySchema = z.looseObject({
  error: z.union([
    z.string(),
    z.looseObject({ message: z.string().optional(), type: z.string().optional() }),
  ]),
});

export type ModelCard = z.output<typeof ModelCardSchema>;
export type ModelList = z.output<typeof ModelListSchema>;
export type Props = z.output<typeof PropsSchema>;
export type Slots = z.output<typeof SlotsSchema>;

/** Ollama `/api/ps`: the loaded models, each with the window a request gets now (ollama-lmstudio.md §3). */
export const OllamaPsSchema = z.looseObject({
  models: z
    .array(
      z.looseObject({
        name: z.string(),
        model: z.string().optional(),
        context_length: windowField,
      }),
    )
    .nullish(),
});

/** Ollama `/api/tags`: what is installed; `details.context_length` is the trained length (v0.30+). */
export const OllamaTagsSchema = z.looseObject({
  models: z
    .array(
      z.looseObject({
        name: z.string(),
        model: z.string().optional(),
        details: z.looseObject({ context_length: z.unknown().optional() }).nullish(),
      }),
    )
    .nullish(),
});

/** Ollama `POST /api/show`: the Modelfile's parameters (text lines) and the GGUF keys. */
export const OllamaShowSchema = z.looseObject({
  parameters: z.string().nullish(),
  model_info: z.record(z.string(), z.unknown()).nullish(),
});

/** LM Studio `GET /api/v1/models` (0.4+): each loaded instance's window and parallel predictions. */
export const LmStudioV1Schema = z.looseObject({
  models: z.array(
    z.looseObject({
      key: z.string(),
      type: z.string().optional(),
      max_context_length: z.unknown().optional(),
      loaded_instances: z
        .array(
          z.looseObject({
            id: z.string(),
            config: z
              .looseObject({ context_length: windowField, parallel: z.unknown().optional() })
              .nullish(),
          }),
        )
        .nullish(),
    }),
  ),
});

/** LM Studio `GET /api/v0/models` (0.3.6+): state loaded / not-loaded / loading and the loaded window. */
export const LmStudioV0Schema = z.looseObject({
  data: z.array(
    z.looseObject({
      id: z.string(),
      type: z.string().optional(),
      state: z.string(),
      max_context_length: z.unknown().optional(),
      loaded_context_length: windowField,
    }),
  ),
});

export type OllamaPs = z.output<typeof OllamaPsSchema>;
export type OllamaTags = z.output<typeof OllamaTagsSchema>;
export type OllamaShow = z.output<typeof OllamaShowSchema>;
export type LmStudioV1 = z.output<typeof LmStudioV1Schema>;
export type LmStudioV0 = z.output<typeof LmStudioV0Schema>;
