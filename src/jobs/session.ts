import { query, type Options } from '@anthropic-ai/claude-agent-sdk';
import type { DelegateMcpPolicy } from './delegate-mcp.js';
import type { PermissionMode, SettingSource } from '../kinds.js';
import { spawnClaudeProcess } from './process.js';
import { pinnedSettingsEnv } from './session-env.js';

export interface SessionOptions {
  prompt: string;
  cwd: string;
  /** The child's whole environment (buildSessionEnv). */
  env: Record<string, string>;
  model: string;
  /** Appended to the claude_code preset system prompt. */
  systemPromptAppend: string;
  permissionMode: PermissionMode;
  allowedTools: string[];
  disallowedTools: string[];
  /** The whole tool set (an agent's tools); undefined: Claude Code's default set. */
  tools?: string[] | undefined;
  settingSources: SettingSource[];
  /** The user's MCP servers: which are denied (localagents itself), or none at all. */
  mcp: DelegateMcpPolicy;
  maxTurns: number;
  /** Session id of an earlier job to continue (same cwd). */
  resume?: string | undefined;
  /** The user's own `claude` instead of the SDK's bundled binary. */
  claudePath?: string | undefined;
  signal: AbortSignal;
  onSpawn: (pid: number) => void;
  /** The child exited (its pid may be reused from now on). */
  onExit?: () => void;
  onStderr: (text: string) => void;
}

function sessionOptions(options: SessionOptions, abortController: AbortController): Options {
  return {
    cwd: options.cwd,
    env: options.env,
    model: options.model,
    systemPrompt: { type: 'preset', preset: 'claude_code', append: options.systemPromptAppend },
    permissionMode: options.permissionMode,
    allowDangerouslySkipPermissions: options.permissionMode === 'bypassPermissions',
    allowedTools: options.allowedTools,
    disallowedTools: options.disallowedTools,
    ...(options.tools === undefined ? {} : { tools: options.tools }),
    settingSources: options.settingSources,
    settings: {
      env: pinnedSettingsEnv(options.env),
      ...(options.mcp.deniedMcpServers.length > 0
        ? { deniedMcpServers: options.mcp.deniedMcpServers }
        : {}),
    },
    ...(options.mcp.strictMcpConfig ? { strictMcpConfig: true } : {}),
    ...(Object.keys(options.mcp.servers).length > 0 ? { mcpServers: options.mcp.servers } : {}),
    maxTurns: options.maxTurns,
    abortController,
    ...(options.resume === undefined ? {} : { resume: options.resume }),
    ...(options.claudePath === undefined ? {} : { pathToClaudeCodeExecutable: options.claudePath }),
    spawnClaudeCodeProcess: (spawnOptions) =>
      spawnClaudeProcess(spawnOptions, {
        onSpawn: options.onSpawn,
        onStderr: options.onStderr,
        onExit: () => options.onExit?.(),
      }),
  };
}

/**
 * One headless Claude Code session: every SDK message, raw (the runner parses what it reads). After an
 * `is_error` result the SDK throws "Claude Code returned an error result" (contract §0.9); that throw
 * carries nothing new, so it ends the stream quietly. Any other failure (spawn, abort) is rethrown.
 */
export async function* runSession(
  options: SessionOptions,
): AsyncGenerator<unknown, void, undefined> {
  const abortController = new AbortController();
  const abort = (): void => abortController.abort();
  if (options.signal.aborted) abort();
  options.signal.addEventListener('abort', abort, { once: true });
  let sawErrorResult = false;
  const session = query({
    prompt: options.prompt,
    options: sessionOptions(options, abortController),
  });
  try {
    for await (const message of session) {
      if (message.type === 'result' && message.is_error) sawErrorResult = true;
      yield message;
    }
  } catch (error) {
    if (sawErrorResult && !options.signal.aborted) return;
    throw error;
  } finally {
    options.signal.removeEventListener('abort', abort);
    session.close();
  }
}
