import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/temp-dir.js';
import {
  configuredMcpServers,
  delegateMcpPolicy,
  isLocalagentsServer,
  ownPackageRoots,
  type SelfIdentity,
} from './delegate-mcp.js';

const self: SelfIdentity = {
  packageRoots: ['/opt/clones/localagents'],
  mcpUrls: ['http://127.0.0.1:7400/mcp'],
};

describe('isLocalagentsServer', () => {
  it.each([
    [{ command: 'localagents', args: ['--config', '~/.config/localagents/models.yaml'] }, true],
    [{ type: 'stdio', command: '/usr/local/bin/localagents', args: [] }, true],
    [{ command: 'C:\\npm\\localagents.cmd' }, true],
    [{ command: 'npx', args: ['-y', 'localagents@0.2.0', 'serve'] }, true],
    [{ command: 'node', args: ['/opt/clones/localagents/dist/cli/main.js', 'serve'] }, true],
    [{ type: 'http', url: 'http://localhost:7400/mcp/' }, true],
    [{ type: 'http', url: 'http://127.0.0.1:7401/mcp' }, false],
    [{ command: 'node', args: ['/opt/other/dist/cli/main.js'] }, false],
    [{ command: 'npx', args: ['-y', '@acme/localagents-helper'] }, false],
    [{ command: 'uvx', args: ['mcp-server-git'] }, false],
    ['not an entry', false],
  ])('%j → %s', (config, expected) => {
    expect(isLocalagentsServer(config, self)).toBe(expected);
  });
});

describe('delegateMcpPolicy', () => {
  const configured = [
    { name: 'local', config: { command: 'localagents' }, file: 'a', scope: 'user' },
    { name: 'git', config: { command: 'uvx', args: ['mcp-server-git'] }, file: 'a', scope: 'user' },
    { name: 'git', config: { command: 'uvx', args: ['git-2'] }, file: 'a', scope: 'local' },
    { name: 'web', config: { type: 'http', url: 'https://x/mcp' }, file: 'a', scope: 'user' },
    { name: 'broken', config: { args: [] }, file: 'a', scope: 'user' },
    { name: 'team', config: { command: 'team-tool' }, file: '.mcp.json', scope: 'project' },
    {
      name: 'llm-box',
      config: { command: 'npx', args: ['localagents'] },
      file: 'b',
      scope: 'local',
    },
  ] as const;

  it("inherit: passes the user's own servers, denies localagents by every name and its own URLs", () => {
    expect(delegateMcpPolicy('inherit', configured, self)).toEqual({
      strictMcpConfig: false,
      // The local-scope git wins over the user-scope one; project servers stay with Claude Code's approval.
      servers: {
        git: { command: 'uvx', args: ['git-2'] },
        web: { type: 'http', url: 'https://x/mcp' },
      },
      deniedMcpServers: [
        { serverName: 'llm-box' },
        { serverName: 'local' },
        { serverUrl: 'http://127.0.0.1:7400/mcp' },
        { serverUrl: 'http://localhost:7400/mcp' },
      ],
    });
  });

  it('none: no MCP server at all', () => {
    expect(delegateMcpPolicy('none', configured, self)).toEqual({
      strictMcpConfig: true,
      deniedMcpServers: [],
      servers: {},
    });
  });
});

describe('configuredMcpServers', () => {
  it('reads user, local and project scopes for the directory and its parents', async () => {
    const home = await tempDir();
    const repo = join(home, 'work', 'repo');
    await mkdir(join(repo, 'sub'), { recursive: true });
    await writeFile(
      join(home, '.claude.json'),
      JSON.stringify({
        mcpServers: { local: { command: 'localagents' } },
        projects: {
          [repo]: { mcpServers: { scoped: { command: 'node', args: ['x.js'] } } },
          '/elsewhere': { mcpServers: { other: { command: 'y' } } },
        },
      }),
    );
    await writeFile(
      join(repo, '.mcp.json'),
      JSON.stringify({ mcpServers: { team: { type: 'http', url: 'http://127.0.0.1:9/mcp' } } }),
    );
    const found = await configuredMcpServers({ home, dirs: [join(repo, 'sub')] });
    expect(found.map((server) => server.name).sort()).toEqual(['local', 'scoped', 'team']);
    expect(found.find((server) => server.name === 'team')?.file).toBe(join(repo, '.mcp.json'));
  });

  it('finds nothing, without failing, where there is no configuration', async () => {
    const home = await tempDir();
    expect(await configuredMcpServers({ home, dirs: [home] })).toEqual([]);
  });
});

describe('ownPackageRoots', () => {
  it('is the directory holding package.json', async () => {
    const roots = await ownPackageRoots();
    expect(roots.length).toBeGreaterThan(0);
    for (const root of roots) expect(root.endsWith('/')).toBe(false);
    const { existsSync } = await import('node:fs');
    expect(existsSync(join(roots[0] ?? '/nonexistent', 'package.json'))).toBe(true);
  });
});
