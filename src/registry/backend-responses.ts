import { z } from 'zod';

/**
 * The parts of llama-server and vLLM probe answers we read. Loose objects: both servers add
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
