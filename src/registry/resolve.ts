import type { BackendKind, ContextSource } from '../kinds.js';
import {
  CLAUDE_CODE_FIXED_PROMPT_TOKENS,
  COMFORTABLE_CONTEXT_TOKENS,
  MIN_JOB_CONTEXT_TOKENS,
  SUGGESTED_CONTEXT_TOKENS,
} from './config-defaults.js';
import { formatConfigIssue } from './config-messages.js';
import type {
  ConfigIssue,
  ConfigResult,
  EndpointConfig,
  ModelEntry,
  RegistryConfig,
} from './config-types.js';
import {
  MATCH_KIND_ORDER,
  matchServedId,
  matchServedIdWithKind,
  squash,
  type MatchKind,
} from './match.js';
import type { EndpointProbe } from './probe.js';
import type { InstalledModel } from './probe-read.js';

export type Resolution =
  | {
      kind: 'ready';
      /** As configured, except `backend`: the probe's detected kind wins over `other`. */
      endpoint: EndpointConfig;
      probe: EndpointProbe;
      servedId: string;
      /** The per-request window; undefined exactly when contextSource is 'unknown'. */
      contextTokens: number | undefined;
      contextSource: ContextSource;
      /** Non-enumerable (like EndpointProbe.apiKey): read it, but JSON.stringify and spreads never carry it. */
      apiKey?: string;
      menuEntry?: ModelEntry;
      warnings: string[];
    }
  | {
      kind: 'unavailable';
      name: string;
      host?: string;
      notes?: string;
      bring_up?: string;
      servedNow: { endpoint: string; models: string[] }[];
      message: string;
    }
  /** The request named an endpoint models.yaml does not have: a wrong argument, not a model to bring up. */
  | { kind: 'unknown_endpoint'; endpoint: string; known: string[]; message: string }
  /** The name is part of several served ids, equally well: which one is meant is the caller's to say. */
  | {
      kind: 'ambiguous';
      name: string;
      candidates: { endpoint: string; served_model: string }[];
      message: string;
    }
  | { kind: 'config_error'; issues: ConfigIssue[]; message: string };

export type ReadyResolution = Extract<Resolution, { kind: 'ready' }>;
/** Every answer but ready: passed on to the caller as it is (the sentence for Claude, the config issues). */
export type NotReadyResolution = Exclude<Resolution, { kind: 'ready' }>;

export interface ResolveRequest {
  model?: string;
  endpoint?: string;
}

/** The menu entry for a requested name: exact, else the same name squashed (`Qwen3.8 27B` = `qwen3.8-27b`). */
export function findMenuEntry(config: RegistryConfig, name: string): ModelEntry | undefined {
  return (
    config.models.find((entry) => entry.name === name) ??
    config.models.find((entry) => squash(entry.name) === squash(name) && squash(name) !== '')
  );
}

export interface Hit {
  probe: EndpointProbe;
  servedId: string;
  match: MatchKind;
  /** Every id on this endpoint the name fits on the same terms (more than one: ambiguous). */
  servedIds: string[];
  /** The model is installed but not loaded (Ollama, LM Studio): its first request would load it. */
  installed?: InstalledModel;
}

/**
 * Live endpoints (config order) where `name` matches; only `endpointName` when the request names one (a hard
 * choice). A menu entry's endpoint and host narrow nothing here: see choose(). `among: 'installed'` looks at the
 * models servers have but have not loaded (Ollama, LM Studio), which is asked only when no loaded one fits.
 */
export function findHits(
  probes: EndpointProbe[],
  name: string,
  menuEntry: ModelEntry | undefined,
  endpointName?: string,
  among: 'loaded' | 'installed' = 'loaded',
): Hit[] {
  const hits: Hit[] = [];
  for (const probe of probes) {
    if (!probe.up) continue;
    if (endpointName !== undefined && probe.name !== endpointName) continue;
    const installed = among === 'installed' ? (probe.installed ?? []) : [];
    const ids = among === 'installed' ? installed.map((model) => model.id) : probe.models;
    const matched = matchServedIdWithKind(name, ids, menuEntry?.served_name);
    if (matched === undefined) continue;
    const hit: Hit = { probe, servedId: matched.id, match: matched.kind, servedIds: matched.ids };
    const model = installed.find((candidate) => candidate.id === matched.id);
    if (model) hit.installed = model;
    hits.push(hit);
  }
  return hits;
}

export type Choice =
  | { kind: 'hit'; hit: Hit }
  | { kind: 'ambiguous'; candidates: { endpoint: string; served_model: string }[] }
  | { kind: 'none' };

/**
 * The hit to use. The menu entry's endpoint is tried first: when it serves the model, it is used. Otherwise the
 * best kind of match across all endpoints wins. A guess (squashed or substring) that fits several different ids
 * is ambiguous; the same id on several endpoints is not (spare capacity decides).
 */
export function choose(hits: Hit[], menuEntry: ModelEntry | undefined): Choice {
  const preferred = hits.filter((hit) => hit.probe.name === menuEntry?.endpoint);
  const pool = preferred.length > 0 ? preferred : hits;
  const best = pickHit(pool);
  if (best === undefined) return { kind: 'none' };
  const tied = pool.filter((hit) => hit.match === best.match);
  const candidates = tied.flatMap((hit) =>
    hit.servedIds.map((id) => ({ endpoint: hit.probe.name, served_model: id })),
  );
  const distinct = new Set(candidates.map((candidate) => candidate.served_model));
  if (distinct.size > 1) return { kind: 'ambiguous', candidates };
  return { kind: 'hit', hit: best };
}

// Free llama.cpp slots first, then an idle vLLM queue; ties keep config order.
function spareCapacity(probe: EndpointProbe): number {
  if (probe.slots) return probe.slots.free > 0 ? 2 : 0;
  if (probe.vllm) return probe.vllm.waiting === 0 ? 1 : 0;
  return 1;
}

/**
 * The hit to use: the best kind of match across all endpoints (an exact id on a later endpoint beats a
 * substring hit on an earlier one), then spare capacity among equally good matches, then config order.
 */
export function pickHit(hits: Hit[]): Hit | undefined {
  const rank = (hit: Hit): number => MATCH_KIND_ORDER.indexOf(hit.match);
  return hits.reduce<Hit | undefined>((chosen, hit) => {
    if (chosen === undefined || rank(hit) < rank(chosen)) return hit;
    if (rank(hit) === rank(chosen) && spareCapacity(hit.probe) > spareCapacity(chosen.probe))
      return hit;
    return chosen;
  }, undefined);
}

/**
 * The window a job gets: what the backend reports, unless the menu asks for less (headroom is a legitimate
 * choice); a menu window larger than the server's would only produce overflows, so it is ignored with a warning.
 * The menu's window stands in when the backend reports none.
 */
export function effectiveContext(
  probed: number | undefined,
  menuEntry: ModelEntry | undefined,
  where: { endpoint: string; servedId: string },
  /** 'predicted': `probed` is the window an unloaded model will get (its Modelfile's num_ctx). */
  probedSource: 'probe' | 'predicted' = 'probe',
): { tokens: number | undefined; source: ContextSource; warning?: string } {
  const menu = menuEntry?.context;
  if (probed === undefined) {
    if (menu !== undefined) return { tokens: menu, source: 'menu' };
    return {
      tokens: undefined,
      source: 'unknown',
      warning: `${where.endpoint} does not report the window of ${where.servedId}: set context: N for this model in models.yaml`,
    };
  }
  if (menu === undefined || menu === probed) return { tokens: probed, source: probedSource };
  if (menu < probed) return { tokens: menu, source: 'menu' };
  return {
    tokens: probed,
    source: probedSource,
    warning: `models.yaml sets context ${menu} for ${menuEntry?.name ?? where.servedId}, larger than the ${probed} tokens ${where.endpoint} reports per request: using ${probed} (a larger window would only produce overflows)`,
  };
}

/** How the user gives a model a larger window on each server: the one clause a bring-up answer needs. */
export function raiseWindowHint(
  backend: BackendKind,
  servedId: string,
  slots = 1,
  size = SUGGESTED_CONTEXT_TOKENS,
): string {
  switch (backend) {
    case 'ollama':
      return `restart Ollama with OLLAMA_CONTEXT_LENGTH=${size} (or give the model PARAMETER num_ctx ${size} in a Modelfile) and load ${servedId} again`;
    case 'lmstudio':
      return `reload it with \`lms load ${servedId} --context-length ${size}\` (or raise Context Length in its load settings)`;
    case 'llama.cpp':
      return `restart llama-server with a larger -c: each of its ${slots} slot(s) gets -c divided by --parallel, so -c ${size * slots}`;
    case 'vllm':
      return `restart vLLM with --max-model-len ${size}`;
    case 'other':
      return `restart the server with a window of at least ${size} tokens`;
  }
}

/** How the user loads an installed model with a known window: what run_agent asks for when none is known. */
function loadHint(backend: BackendKind, servedId: string): string {
  const size = SUGGESTED_CONTEXT_TOKENS;
  return backend === 'lmstudio'
    ? `\`lms load ${servedId} --context-length ${size}\``
    : `start Ollama with OLLAMA_CONTEXT_LENGTH=${size} and load it (\`ollama run ${servedId}\`), or give it PARAMETER num_ctx ${size} in a Modelfile`;
}

/** The window a hit gets: what the server reports, or what an unloaded model will get, with models.yaml's rule. */
function hitContext(hit: Hit, menuEntry: ModelEntry | undefined, endpoint: string) {
  const where = { endpoint, servedId: hit.servedId };
  return hit.installed
    ? effectiveContext(hit.installed.context, menuEntry, where, 'predicted')
    : effectiveContext(hit.probe.context[hit.servedId], menuEntry, where);
}

/**
 * A job starts only on a window that holds Claude Code's first prompt (and, for a model not loaded yet, only on
 * one that is known before it loads): otherwise the answer asks the user for a larger window, with the numbers.
 */
function windowRefusal(
  hit: Hit,
  context: { tokens: number | undefined; source: ContextSource },
  menuEntry: ModelEntry | undefined,
  endpoint: string,
): string | undefined {
  const on = menuEntry?.host ? ` on ${menuEntry.host}` : '';
  const { backend } = hit.probe;
  if (hit.installed && context.tokens === undefined) {
    return `${hit.servedId} is installed on ${endpoint} but not loaded, and the window it would get is unknown until it loads: it ${hit.installed.note}. A job needs at least ${MIN_JOB_CONTEXT_TOKENS} tokens. Ask the user to load it with a window of at least ${SUGGESTED_CONTEXT_TOKENS}${on}: ${loadHint(backend, hit.servedId)}.`;
  }
  if (context.tokens === undefined || context.tokens >= MIN_JOB_CONTEXT_TOKENS) return undefined;
  const fix =
    context.source === 'menu'
      ? `raise context for ${menuEntry?.name ?? hit.servedId} in models.yaml (or remove it to use the server's window)`
      : raiseWindowHint(backend, hit.servedId, hit.probe.slots?.total ?? 1);
  const what = context.source === 'predicted' ? 'would load with' : 'has';
  return `${hit.servedId} on ${endpoint} ${what} a ${context.tokens}-token window${context.source === 'menu' ? ' (context in models.yaml)' : ''}, too small for Claude Code: its fixed prompt alone is about ${CLAUDE_CODE_FIXED_PROMPT_TOKENS} tokens, and a job needs at least ${MIN_JOB_CONTEXT_TOKENS}. Ask the user to give it a window of at least ${SUGGESTED_CONTEXT_TOKENS}${on}: ${fix}.`;
}

/** What a job on this hit would get: its window (and where it came from), or why none would start. */
export function assessHit(
  hit: Hit,
  menuEntry: ModelEntry | undefined,
): { context: ReturnType<typeof effectiveContext>; refusal: string | undefined } {
  const context = hitContext(hit, menuEntry, hit.probe.name);
  return { context, refusal: windowRefusal(hit, context, menuEntry, hit.probe.name) };
}

/** The hit for a name: a loaded model first; an installed one only when no server has the model loaded. */
export function chooseHit(
  probes: EndpointProbe[],
  name: string,
  menuEntry: ModelEntry | undefined,
  endpointName?: string,
): Choice {
  const loaded = choose(findHits(probes, name, menuEntry, endpointName), menuEntry);
  if (loaded.kind !== 'none') return loaded;
  return choose(findHits(probes, name, menuEntry, endpointName, 'installed'), menuEntry);
}

function ready(
  config: RegistryConfig,
  hit: Hit,
  menuEntry: ModelEntry | undefined,
  probes: EndpointProbe[],
  name: string,
): Resolution {
  const endpoint = config.endpoints.find((candidate) => candidate.name === hit.probe.name);
  if (!endpoint) throw new Error(`probe ${hit.probe.name} has no endpoint in the config`);
  const warnings: string[] = [];
  const { context, refusal } = assessHit(hit, menuEntry);
  if (refusal !== undefined) return unavailable(name, menuEntry, probes, refusal);
  const contextTokens = context.tokens;
  const contextSource = context.source;
  if (context.warning !== undefined) warnings.push(context.warning);
  if (hit.installed)
    warnings.push(
      `${hit.servedId} is not loaded on ${endpoint.name}: the job's first request loads it, which takes seconds to minutes`,
    );
  if (contextTokens !== undefined && contextTokens < COMFORTABLE_CONTEXT_TOKENS) {
    warnings.push(
      `${hit.servedId} has a ${contextTokens}-token window; Claude Code's fixed prompt and compaction need about 128k to work without thrashing, so expect early compaction or "prompt is too long"`,
    );
  }
  const resolution: Resolution = {
    kind: 'ready',
    // A `backend: other` endpoint that is llama.cpp must not be treated like vLLM (which would clamp
    // max_tokens needlessly): what the probe detected is the backend every user of the answer sees.
    endpoint: { ...endpoint, backend: hit.probe.backend },
    probe: hit.probe,
    servedId: hit.servedId,
    contextTokens,
    contextSource,
    warnings,
  };
  if (hit.probe.apiKey !== undefined) {
    Object.defineProperty(resolution, 'apiKey', { value: hit.probe.apiKey, enumerable: false });
  }
  if (menuEntry) resolution.menuEntry = menuEntry;
  return resolution;
}

function servedNow(probes: EndpointProbe[]): { endpoint: string; models: string[] }[] {
  return probes
    .filter((probe) => probe.up && probe.models.length > 0)
    .map((probe) => ({ endpoint: probe.name, models: probe.models }));
}

function describeServed(served: { endpoint: string; models: string[] }[]): string {
  return served.length === 0
    ? 'Nothing is being served right now.'
    : `Running now: ${served.map((entry) => `${entry.models.join(', ')} on ${entry.endpoint}`).join('; ')}.`;
}

function unavailable(
  name: string,
  menuEntry: ModelEntry | undefined,
  probes: EndpointProbe[],
  lead: string,
): Resolution {
  const served = servedNow(probes);
  // The Python original's wording: "'NAME' is not running anywhere. Ask the user to bring it up on HOST.",
  // "Notes: …", "Start command on file (may be stale): …", then what runs now.
  const parts = [lead];
  if (menuEntry?.notes)
    parts.push(`Notes: ${menuEntry.notes}${/[.!?]$/.test(menuEntry.notes) ? '' : '.'}`);
  if (menuEntry?.bring_up)
    parts.push(`Start command on file (may be stale): ${menuEntry.bring_up}`);
  const down = probes.filter((probe) => !probe.up && probe.error);
  if (down.length > 0)
    parts.push(
      `Down: ${down.map((probe) => `${probe.name} (${probe.error ?? probe.status})`).join('; ')}.`,
    );
  parts.push(describeServed(served));
  const result: Resolution = {
    kind: 'unavailable',
    name,
    servedNow: served,
    message: parts.join(' '),
  };
  if (menuEntry?.host !== undefined) result.host = menuEntry.host;
  if (menuEntry?.notes !== undefined) result.notes = menuEntry.notes;
  if (menuEntry?.bring_up !== undefined) result.bring_up = menuEntry.bring_up;
  return result;
}

/** Name → where to run it, from one config and one round of probes. Never throws for expected failures. */
export function resolveModel(
  configResult: ConfigResult,
  probes: EndpointProbe[],
  request: ResolveRequest,
): Resolution {
  if (!configResult.ok) {
    return {
      kind: 'config_error',
      issues: configResult.issues,
      message: `models.yaml is invalid; fix it and ask again:\n${configResult.issues.map(formatConfigIssue).join('\n')}`,
    };
  }
  const { config } = configResult;
  if (
    request.endpoint !== undefined &&
    !config.endpoints.some((endpoint) => endpoint.name === request.endpoint)
  ) {
    const known = config.endpoints.map((endpoint) => endpoint.name);
    return {
      kind: 'unknown_endpoint',
      endpoint: request.endpoint,
      known,
      message: `There is no endpoint named "${request.endpoint}" (configured: ${known.join(', ')}).`,
    };
  }
  const name = request.model ?? config.defaults.model;
  if (name === undefined) {
    const live = probes.find(
      (probe) =>
        probe.up &&
        probe.models.length > 0 &&
        (request.endpoint === undefined || probe.name === request.endpoint),
    );
    const first = live?.models[0];
    if (live && first !== undefined)
      return ready(
        config,
        { probe: live, servedId: first, match: 'exact', servedIds: [first] },
        undefined,
        probes,
        first,
      );
    return unavailable(
      '(any model)',
      undefined,
      probes,
      'No endpoint is serving a model right now. Ask the user to bring one up.',
    );
  }
  const menuEntry = findMenuEntry(config, name);
  const choice = chooseHit(probes, name, menuEntry, request.endpoint);
  if (choice.kind === 'hit') return ready(config, choice.hit, menuEntry, probes, name);
  if (choice.kind === 'ambiguous') {
    const listed = choice.candidates
      .map((candidate) => `${candidate.served_model} on ${candidate.endpoint}`)
      .join('; ');
    return {
      kind: 'ambiguous',
      name,
      candidates: choice.candidates,
      message: `"${name}" matches several served models: ${listed}. Name the one you mean (its full id), or give the model a served_name in models.yaml.`,
    };
  }
  const where = request.endpoint;
  const listedButLocked = probes.find(
    (probe) =>
      probe.status === 'unauthorized' && matchServedId(name, probe.models, menuEntry?.served_name),
  );
  const lead = listedButLocked
    ? `${name} is served on ${listedButLocked.name}, but it cannot be used: ${listedButLocked.error ?? 'unauthorized'}. Ask the user to fix the key.`
    : `'${name}' is not running ${where ? `on ${where}` : 'anywhere'}. Ask the user to bring it up${menuEntry?.host ? ` on ${menuEntry.host}` : ''}.`;
  return unavailable(name, menuEntry, probes, lead);
}

/** Every live endpoint a job on this request could run on, best first by the rules of resolveModel. */
export type Placements = { kind: 'ready'; options: ReadyResolution[] } | NotReadyResolution;

/**
 * resolveModel's answer, and besides its choice every other live endpoint serving the same id (loaded, or
 * installed with a known window), each as ready as the first: the scheduler puts a job on whichever has room.
 * A request that names an endpoint gets that endpoint only.
 */
export function resolvePlacements(
  configResult: ConfigResult,
  probes: EndpointProbe[],
  request: ResolveRequest,
): Placements {
  const first = resolveModel(configResult, probes, request);
  if (first.kind !== 'ready') return first;
  if (!configResult.ok) return { kind: 'ready', options: [first] };
  const options: ReadyResolution[] = [first];
  const name = request.model ?? configResult.config.defaults.model ?? first.servedId;
  for (const probe of probes) {
    if (!probe.up || probe.name === first.probe.name) continue;
    if (request.endpoint !== undefined && probe.name !== request.endpoint) continue;
    const installed = probe.installed?.find((model) => model.id === first.servedId);
    if (!probe.models.includes(first.servedId) && !installed) continue;
    const hit: Hit = {
      probe,
      servedId: first.servedId,
      match: 'exact',
      servedIds: [first.servedId],
    };
    if (!probe.models.includes(first.servedId) && installed) hit.installed = installed;
    const other = ready(configResult.config, hit, first.menuEntry, probes, name);
    if (other.kind === 'ready') options.push(other);
  }
  return { kind: 'ready', options };
}
