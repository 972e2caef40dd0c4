/**
 * The models an Ollama or LM Studio server has on disk, and which of them are in memory (loaded,
 * loading, not loaded) with which window. A request for a model on disk that is not loaded loads it
 * just in time (ollama-lmstudio.md §4, §6 "Loading"): the request blocks `jitLoadMs`, then the model is
 * loaded with the JIT window. LM Studio's Auto-Evict unloads the earlier JIT-loaded models first.
 */
import { LocalAgentsError } from '../errors.js';

export type LoadState = 'loaded' | 'loading' | 'not-loaded';

/** Ollama's default keep-alive (OLLAMA_KEEP_ALIVE, 5m): /api/ps `expires_at`. */
const KEEP_ALIVE_MS = 5 * 60_000;

export interface LocalModel {
  /** As installed: Ollama's name (`qwen3-coder:30b`), LM Studio's model key. */
  name: string;
  state: LoadState;
  /** The window of the loaded or loading instance; undefined when not loaded. */
  contextLength: number | undefined;
  /** Loaded by a request rather than at start (LM Studio evicts these first). */
  jit: boolean;
  modifiedAtMs: number;
  expiresAtMs: number;
  load: Promise<void> | undefined;
}

export interface LocalModels {
  /** Newest first. */
  models: LocalModel[];
  find(requested: string): LocalModel | undefined;
  /** Loads `model` if it is not loaded; false when the request was aborted before it was. */
  ensureLoaded(model: LocalModel, signal: AbortSignal): Promise<boolean>;
  /** A request used the model: Ollama's keep-alive starts again. */
  touch(model: LocalModel): void;
}

export interface LocalModelsOptions {
  names: readonly string[];
  loaded: readonly string[];
  window: number;
  jitWindow: number;
  jitLoadMs: number;
  /** Whether `requested` names the installed model `name` (each server's own matching). */
  matches: (name: string, requested: string) => boolean;
  autoEvict: boolean;
}

function waitUnlessAborted(promise: Promise<void>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(!signal.aborted);
    });
  });
}

export function createLocalModels(options: LocalModelsOptions): LocalModels {
  const now = Date.now();
  const models: LocalModel[] = options.names.map((name, index) => ({
    name,
    state: 'not-loaded',
    contextLength: undefined,
    jit: false,
    // Listed newest first, a minute apart.
    modifiedAtMs: now - index * 60_000,
    expiresAtMs: now + KEEP_ALIVE_MS,
    load: undefined,
  }));
  for (const name of options.loaded) {
    const model = models.find((candidate) => candidate.name === name);
    if (!model) {
      throw new LocalAgentsError(
        'BAD_ARGUMENT',
        `emulator: loaded model "${name}" is not among the installed ones (${options.names.join(', ')})`,
      );
    }
    model.state = 'loaded';
    model.contextLength = options.window;
  }

  const startLoad = (model: LocalModel): Promise<void> => {
    if (options.autoEvict) {
      for (const other of models) {
        if (other !== model && other.jit && other.state === 'loaded') {
          other.state = 'not-loaded';
          other.contextLength = undefined;
          other.jit = false;
        }
      }
    }
    model.state = 'loading';
    model.contextLength = options.jitWindow;
    model.jit = true;
    model.expiresAtMs = Date.now() + KEEP_ALIVE_MS;
    // The load goes on when the client that asked for it leaves, as on the real servers.
    return new Promise<void>((resolve) => {
      setTimeout(() => {
        model.state = 'loaded';
        model.load = undefined;
        resolve();
      }, options.jitLoadMs).unref();
    });
  };

  return {
    models,
    find: (requested) => models.find((model) => options.matches(model.name, requested)),
    ensureLoaded: (model, signal) => {
      if (model.state === 'loaded') return Promise.resolve(!signal.aborted);
      model.load ??= startLoad(model);
      return waitUnlessAborted(model.load, signal);
    },
    touch: (model) => {
      model.expiresAtMs = Date.now() + KEEP_ALIVE_MS;
    },
  };
}
