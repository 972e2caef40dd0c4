import type { BackendKind, ContextSource, PermissionMode } from '../kinds.js';
import type { ReadyResolution } from '../registry/resolve.js';
import type { RouteConfig } from '../shim/route.js';

/** The part of a registry resolution a job needs (registry Resolution, kind 'ready'). */
export interface ReadyEndpoint {
  endpoint: {
    name: string;
    base_url: string;
    backend: BackendKind;
    env: Record<string, string>;
  };
  servedId: string;
  /** Every id the backend serves: the shim leaves these names alone. */
  servedIds?: string[] | undefined;
  apiKeyEnv?: string | undefined;
  /** The per-request window; undefined when nothing (probe or menu) says it. */
  contextTokens: number | undefined;
  contextSource: ContextSource;
  apiKey?: string | undefined;
  /** The menu entry's own settings for sessions on this model (over defaults; a tool argument still wins). */
  modelSettings?: ModelSettings | undefined;
}

export interface ModelSettings {
  /** Applied after the endpoint's env. */
  env?: Record<string, string> | undefined;
  max_turns?: number | undefined;
  permission_mode?: PermissionMode | undefined;
  verify?: string | undefined;
}

/** The part of a ready resolution a job needs, with the resolution's warnings for the record. */
export function readyEndpoint(resolution: ReadyResolution): ReadyEndpoint & { warnings: string[] } {
  return {
    endpoint: resolution.endpoint,
    servedId: resolution.servedId,
    // An installed model is named as it is too (Ollama and LM Studio load it on its first request).
    servedIds: [...resolution.probe.models, ...(resolution.probe.installed ?? []).map((m) => m.id)],
    apiKey: resolution.apiKey,
    apiKeyEnv: resolution.endpoint.api_key_env,
    contextTokens: resolution.contextTokens,
    contextSource: resolution.contextSource,
    warnings: resolution.warnings,
    modelSettings: modelSettingsOf(resolution),
  };
}

function modelSettingsOf({ menuEntry }: ReadyResolution): ModelSettings | undefined {
  if (!menuEntry) return undefined;
  const { env, max_turns, permission_mode, verify } = menuEntry;
  if (
    env === undefined &&
    max_turns === undefined &&
    permission_mode === undefined &&
    verify === undefined
  )
    return undefined;
  return { env, max_turns, permission_mode, verify };
}

/**
 * The shim's route to a ready endpoint: the one conversion that jobs, local_complete and
 * `localagents proxy` share, so that what the shim knows of a backend cannot differ between them.
 */
export function routeConfigFor(
  ready: ReadyEndpoint,
  extras: Pick<
    RouteConfig,
    'logDir' | 'dumpFullRequests' | 'keepaliveMs' | 'apiKeyFrom' | 'watch'
  > = {},
): RouteConfig {
  return {
    backendUrl: ready.endpoint.base_url,
    backend: ready.endpoint.backend,
    servedId: ready.servedId,
    ...(ready.servedIds === undefined ? {} : { servedIds: ready.servedIds }),
    ...(ready.contextTokens === undefined ? {} : { contextTokens: ready.contextTokens }),
    ...(ready.apiKey === undefined ? {} : { apiKey: ready.apiKey }),
    ...(ready.apiKeyEnv === undefined ? {} : { apiKeyEnv: ready.apiKeyEnv }),
    endpointName: ready.endpoint.name,
    ...extras,
  };
}
