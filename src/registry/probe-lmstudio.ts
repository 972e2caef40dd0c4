import type { LmStudioV0, LmStudioV1 } from './backend-responses.js';
import { windowOf, type InstalledModel, type LoadedModels } from './probe-read.js';

/**
 * LM Studio's probe answers (docs/reference/ollama-lmstudio.md §6), read: `/api/v1/models` (0.4+) gives each loaded
 * instance's window (`config.context_length`) and parallel predictions; `/api/v0/models` (0.3.6+) is the fallback,
 * with `state` and `loaded_context_length`. Embedding models are left out: they cannot run an agent.
 */

const isChatModel = (type: string | undefined): boolean =>
  type === undefined || type === 'llm' || type === 'vlm';

function unloaded(
  id: string,
  state: InstalledModel['state'],
  max: unknown,
  problems: string[],
): InstalledModel {
  const trained = windowOf(max, `${id} max_context_length`, problems);
  const model: InstalledModel = {
    id,
    state,
    note: `loads with the context length of its load settings (LM Studio's default is often 4096${trained === undefined ? '' : `; at most ${trained}`})`,
  };
  if (trained !== undefined) model.trained = trained;
  return model;
}

export function readLmStudioV1(body: LmStudioV1): LoadedModels {
  const problems: string[] = [];
  const reading: LoadedModels = { models: [], context: {}, installed: [], problems };
  let parallel = 0;
  let parallelKnown = false;
  for (const model of body.models) {
    if (!isChatModel(model.type)) continue;
    const instances = model.loaded_instances ?? [];
    if (instances.length === 0) {
      reading.installed.push(unloaded(model.key, 'not_loaded', model.max_context_length, problems));
      continue;
    }
    for (const instance of instances) {
      reading.models.push(instance.id);
      const window = windowOf(
        instance.config?.context_length,
        `${instance.id} config.context_length`,
        problems,
      );
      if (window !== undefined) reading.context[instance.id] = window;
      const slots = instance.config?.parallel;
      if (typeof slots === 'number' && Number.isInteger(slots) && slots > 0) {
        parallel += slots;
        parallelKnown = true;
      }
    }
  }
  if (parallelKnown) reading.parallel = parallel;
  reading.problems = [...new Set(problems)];
  return reading;
}

export function readLmStudioV0(body: LmStudioV0): LoadedModels {
  const problems: string[] = [];
  const reading: LoadedModels = { models: [], context: {}, installed: [], problems };
  for (const model of body.data) {
    if (!isChatModel(model.type)) continue;
    if (model.state === 'loaded') {
      reading.models.push(model.id);
      const window = windowOf(
        model.loaded_context_length,
        `${model.id} loaded_context_length`,
        problems,
      );
      if (window !== undefined) reading.context[model.id] = window;
    } else {
      const state = model.state === 'loading' ? 'loading' : 'not_loaded';
      reading.installed.push(unloaded(model.id, state, model.max_context_length, problems));
    }
  }
  reading.problems = [...new Set(problems)];
  return reading;
}
