import { readFile, realpath } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { DelegateMcp } from '../kinds.js';

/**
 * Which of the user's MCP servers a delegate loads. A delegate is a Claude Code session in the user's
 * tree, so it reads the user's MCP configuration, localagents included: every stdio job would start
 * another `localagents serve` under it, its prompt would carry our tools and instructions on every
 * request, and under bypassPermissions a delegate could delegate. Claude Code's `deniedMcpServers`
 * setting (passed as flag settings) keeps a server from starting or connecting at all; ours is named
 * there by the name the user registered it under, whatever that is, found by its command or URL.
 * The user's own servers (user and local scope, from ~/.claude.json) are passed to the delegate
 * explicitly: it loads only project and local settings, and runs in a worktree whose path has no
 * local scope. A project's `.mcp.json` is left to Claude Code's own approval of project servers.
 */
export type DeniedMcpServer = { serverName: string } | { serverUrl: string };

const PassedServerSchema = z.union([
  z.looseObject({
    type: z.literal('stdio').optional(),
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
  }),
  z.looseObject({
    type: z.enum(['http', 'sse']),
    url: z.string().min(1),
    headers: z.record(z.string(), z.string()).optional(),
  }),
]);
export type PassedMcpServer = z.infer<typeof PassedServerSchema>;

export interface DelegateMcpPolicy {
  /** `--strict-mcp-config` with no servers: the delegate loads no MCP server at all. */
  strictMcpConfig: boolean;
  deniedMcpServers: DeniedMcpServer[];
  /** The user's own servers, localagents left out, passed to the delegate as `mcpServers`. */
  servers: Record<string, PassedMcpServer>;
}

/** How to recognise this program in someone's MCP configuration. */
export interface SelfIdentity {
  /** The package's root directory, as found and as its real path: a `node <root>/dist/cli/main.js` entry. */
  packageRoots: string[];
  /** The streamable-HTTP URLs this process serves MCP on (`serve --http`). */
  mcpUrls: string[];
}

export interface ConfiguredMcpServer {
  name: string;
  config: unknown;
  /** As Claude Code names them: user and local live in ~/.claude.json, project in .mcp.json. */
  scope: 'user' | 'local' | 'project';
  /** The file it came from, for diagnostics. */
  file: string;
}

const RUNNERS = new Set(['npx', 'npm', 'pnpm', 'pnpx', 'bunx', 'yarn', 'dlx']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === 'string') : [];
}

/** The program's name without directory (either slash: a Windows path in a shared .mcp.json) or extension. */
function programName(path: string): string {
  return (path.split(/[\\/]/).pop() ?? path).replace(/\.(cmd|exe|js|mjs|ps1)$/i, '');
}

function sameMcpUrl(configured: string, served: string): boolean {
  try {
    const a = new URL(configured);
    const b = new URL(served);
    return (
      LOOPBACK.has(a.hostname) &&
      LOOPBACK.has(b.hostname) &&
      a.port === b.port &&
      a.pathname.replace(/\/+$/, '') === b.pathname.replace(/\/+$/, '')
    );
  } catch {
    return false;
  }
}

/** Is this configured MCP server localagents? (pure) */
export function isLocalagentsServer(config: unknown, self: SelfIdentity): boolean {
  if (!isRecord(config)) return false;
  if (typeof config.url === 'string') {
    const url = config.url;
    return self.mcpUrls.some((served) => sameMcpUrl(url, served));
  }
  if (typeof config.command !== 'string') return false;
  const argv = [config.command, ...strings(config.args)];
  if (programName(config.command) === 'localagents') return true;
  // npx localagents, npx -y localagents@1.2.0, pnpm dlx localagents …
  if (
    RUNNERS.has(programName(config.command)) &&
    argv.some((arg) => /^localagents(@[\w.^~<>=*-]+)?$/.test(arg))
  )
    return true;
  // node /path/to/clone/dist/cli/main.js
  return argv.some(
    (arg) =>
      /[\\/]cli[\\/]main\.[jt]s$/.test(arg) &&
      self.packageRoots.some((root) => resolve(arg).startsWith(root + sep)),
  );
}

/** The policy for one delegate (pure). */
export function delegateMcpPolicy(
  mode: DelegateMcp,
  configured: readonly ConfiguredMcpServer[],
  self: SelfIdentity,
): DelegateMcpPolicy {
  if (mode === 'none') return { strictMcpConfig: true, deniedMcpServers: [], servers: {} };
  const names = new Set(
    configured
      .filter((server) => isLocalagentsServer(server.config, self))
      .map((server) => server.name),
  );
  const servers: Record<string, PassedMcpServer> = {};
  // Local scope after user scope: the later entry of a name wins, as in Claude Code.
  for (const scope of ['user', 'local'] as const) {
    for (const server of configured) {
      if (server.scope !== scope || names.has(server.name)) continue;
      const passed = PassedServerSchema.safeParse(server.config);
      if (passed.success) servers[server.name] = passed.data;
    }
  }
  const urls = self.mcpUrls.flatMap((served) => {
    const url = new URL(served);
    return ['127.0.0.1', 'localhost'].map(
      (host) => `${url.protocol}//${host}:${url.port}${url.pathname}`,
    );
  });
  return {
    strictMcpConfig: false,
    servers,
    deniedMcpServers: [
      ...[...names].sort().map((serverName) => ({ serverName })),
      ...[...new Set(urls)].map((serverUrl) => ({ serverUrl })),
    ],
  };
}

function ancestors(dir: string): string[] {
  const found = [resolve(dir)];
  for (let parent = dirname(found[0] ?? dir); !found.includes(parent); parent = dirname(parent))
    found.push(parent);
  return found;
}

async function readJson(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch {
    return undefined; // absent or unreadable: Claude Code would load nothing from it either
  }
}

function entriesOf(
  servers: unknown,
  file: string,
  scope: ConfiguredMcpServer['scope'],
): ConfiguredMcpServer[] {
  if (!isRecord(servers)) return [];
  return Object.entries(servers).map(([name, config]) => ({ name, config, file, scope }));
}

/**
 * The MCP servers Claude Code would load for a session in `dirs`, from the places a user registers them:
 * user scope (`mcpServers` in ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json), local scope (its
 * `projects[<dir>].mcpServers`) and project scope (`.mcp.json`), for each directory and its parents.
 */
export async function configuredMcpServers(input: {
  home: string;
  claudeConfigDir?: string | undefined;
  dirs: readonly string[];
}): Promise<ConfiguredMcpServer[]> {
  const globalFile = join(input.claudeConfigDir ?? input.home, '.claude.json');
  const global = await readJson(globalFile);
  const found: ConfiguredMcpServer[] = [];
  if (isRecord(global)) found.push(...entriesOf(global.mcpServers, globalFile, 'user'));
  const dirs = [...new Set(input.dirs.flatMap(ancestors))];
  const projects = isRecord(global) && isRecord(global.projects) ? global.projects : {};
  for (const dir of dirs) {
    const local = projects[dir];
    if (isRecord(local)) found.push(...entriesOf(local.mcpServers, globalFile, 'local'));
  }
  const projectFiles = await Promise.all(
    dirs.map(async (dir) => ({
      file: join(dir, '.mcp.json'),
      json: await readJson(join(dir, '.mcp.json')),
    })),
  );
  for (const { file, json } of projectFiles)
    if (isRecord(json)) found.push(...entriesOf(json.mcpServers, file, 'project'));
  return found;
}

/** This package's root, as found from this module (src/jobs or dist/jobs) and as its real path. */
export async function ownPackageRoots(): Promise<string[]> {
  const root = fileURLToPath(new URL('../../', import.meta.url)).replace(/[\\/]$/, '');
  const real = await realpath(root).catch(() => root);
  return [...new Set([root, real])];
}
