import type { OllamaPs, OllamaShow, OllamaTags } from './backend-responses.js';
import { windowOf, type InstalledModel, type LoadedModels } from './probe-read.js';

/**
 * Ollama's probe answers (docs/reference/ollama-lmstudio.md §3), read: `/api/ps` is the only reliable window (the
 * one each request gets now); `/api/tags` lists what is installed; `/api/show` predicts an unloaded model's window.
 */

/** The Modelfile's `PARAMETER num_ctx`, shown by /api/show as a `num_ctx   <n>` line. */
export function modelfileNumCtx(show: OllamaShow | undefined): number | undefined {
  const match = /^num_ctx\s+(\d+)\s*$/m.exec(show?.parameters ?? '');
  return match ? Number(match[1]) : undefined;
}

/** The trained length: `<arch>.context_length` in the GGUF keys, else /api/tags `details.context_length` (v0.30+). */
export function trainedLength(
  show: OllamaShow | undefined,
  tagged: unknown,
  problems: string[],
): number | undefined {
  const info = show?.model_info ?? {};
  const arch = info['general.architecture'];
  const fromShow = typeof arch === 'string' ? info[`${arch}.context_length`] : undefined;
  return windowOf(fromShow ?? tagged, 'trained context_length', problems);
}

/** What Ollama will give a model when it loads: its num_ctx capped at the trained length, or what decides it. */
export function predictOllamaWindow(
  id: string,
  show: OllamaShow | undefined,
  tagged: unknown,
  problems: string[],
): InstalledModel {
  const trained = trainedLength(show, tagged, problems);
  const numCtx = modelfileNumCtx(show);
  const model: InstalledModel = { id, state: 'not_loaded', note: '' };
  if (trained !== undefined) model.trained = trained;
  if (numCtx !== undefined) {
    const window = trained === undefined ? numCtx : Math.min(numCtx, trained);
    model.context = window;
    model.note =
      window < numCtx
        ? `gets ${window} tokens when it loads (num_ctx ${numCtx} in its Modelfile, capped at its trained length)`
        : `gets ${window} tokens when it loads (num_ctx in its Modelfile)`;
    return model;
  }
  const cap = trained === undefined ? '' : `, capped at its trained ${trained}`;
  model.note = `its window when it loads depends on the server: OLLAMA_CONTEXT_LENGTH if set, else 4096, 32768 or 262144 by GPU memory${cap}`;
  return model;
}

/** Loaded models with their windows, and the installed ones that are not loaded (predictions from `shows`). */
export function readOllama(
  ps: OllamaPs,
  tags: OllamaTags | undefined,
  shows: ReadonlyMap<string, OllamaShow>,
): LoadedModels {
  const problems: string[] = [];
  const context: Record<string, number> = {};
  const models: string[] = [];
  for (const entry of ps.models ?? []) {
    if (models.includes(entry.name)) continue;
    models.push(entry.name);
    const window = windowOf(entry.context_length, `/api/ps ${entry.name} context_length`, problems);
    if (window !== undefined) context[entry.name] = window;
  }
  const installed = (tags?.models ?? [])
    .filter((entry) => !models.includes(entry.name))
    .map((entry) =>
      predictOllamaWindow(
        entry.name,
        shows.get(entry.name),
        entry.details?.context_length,
        problems,
      ),
    );
  return { models, context, installed, problems: [...new Set(problems)] };
}

/** The installed models a probe asks /api/show about: the ones not loaded (a loaded one's window is in /api/ps). */
export function unloadedNames(ps: OllamaPs | undefined, tags: OllamaTags | undefined): string[] {
  const loaded = new Set((ps?.models ?? []).map((entry) => entry.name));
  return (tags?.models ?? []).map((entry) => entry.name).filter((name) => !loaded.has(name));
}
