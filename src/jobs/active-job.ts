import type { Diagnostics } from '../diagnostics.js';
import type { DelegateMcp, PermissionMode, SettingSource } from '../kinds.js';
import type { RouteConfig } from '../shim/route.js';
import type { JobRecord } from './job.js';
import type { JobStore } from './store.js';

/** The part of a registry resolution a job needs (registry Resolution, kind 'ready'). */
export interface ReadyEndpoint {
  endpoint: {
    name: string;
    base_url: string;
    backend: RouteConfig['backend'];
    env: Record<string, string>;
  };
  servedId: string;
  /** Every id the backend serves: the shim leaves these names alone. */
  servedIds?: string[] | undefined;
  apiKeyEnv?: string | undefined;
  contextTokens: number;
  contextSource: 'probe' | 'menu' | 'unknown';
  apiKey?: string | undefined;
}

/** The part of the shim a job needs (src/shim/server.ts). */
export interface JobShim {
  addRoute(config: RouteConfig): { baseUrl: string; close(): Promise<void> | void };
}

export interface JobSettings {
  prompt: string;
  permissionMode: PermissionMode;
  allowedTools: string[];
  disallowedTools: string[];
  settingSources: SettingSource[];
  maxTurns: number;
  timeoutS: number;
  systemPromptAppend: string;
  resumeSessionId?: string | undefined;
  dumpRequests: boolean;
  keepaliveS: number;
  /** The user's MCP servers in the delegate: all but localagents itself, or none. */
  delegateMcp: DelegateMcp;
}

export type TerminationReason = 'timeout' | 'cancelled' | 'shutdown';

/** One job while it runs in this process. */
export interface ActiveJob {
  record: JobRecord;
  readonly controller: AbortController;
  termination: TerminationReason | undefined;
  /** Set when another job used the same endpoint while this one ran (speeds become server-wide). */
  overlapped: boolean;
  readonly listeners: Set<(record: JobRecord) => void>;
  done: Promise<void>;
}

export interface ExecuteDeps {
  store: JobStore;
  shim: () => Promise<JobShim>;
  baseEnv: Record<string, string | undefined>;
  diagnostics: Diagnostics;
  claudePath?: string | undefined;
  /** The streamable-HTTP URLs this process serves MCP on, so delegates never connect back to it. */
  mcpUrls?: () => readonly string[];
}
