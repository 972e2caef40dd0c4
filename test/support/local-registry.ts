/**
 * A tiny npm registry on 127.0.0.1 for installing this package the way a user does, offline. Its
 * packuments are built from package-lock.json; its tarballs are the files `npm ci` left in the npm cache
 * (cacache, content addressed by the lockfile's `integrity`). Nothing is fetched from anywhere else: npm is
 * told to use this server as its registry and as its proxy, so a request meant for any other host arrives
 * here too, is refused and is listed in `outside`. Every answer says `cache-control: no-store`, so the
 * npm cache gains no entries keyed by this server's passing port.
 */
import { execFile } from 'node:child_process';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';

const run = promisify(execFile);

const LockEntry = z.looseObject({
  name: z.string().optional(),
  version: z.string().optional(),
  integrity: z.string().optional(),
  link: z.boolean().optional(),
  dependencies: z.record(z.string(), z.string()).optional(),
  optionalDependencies: z.record(z.string(), z.string()).optional(),
  peerDependencies: z.record(z.string(), z.string()).optional(),
  peerDependenciesMeta: z.record(z.string(), z.unknown()).optional(),
  bin: z.union([z.string(), z.record(z.string(), z.string())]).optional(),
  engines: z.union([z.record(z.string(), z.string()), z.array(z.string())]).optional(),
  os: z.array(z.string()).optional(),
  cpu: z.array(z.string()).optional(),
  libc: z.array(z.string()).optional(),
});
type LockEntry = z.infer<typeof LockEntry>;
const Lockfile = z.looseObject({ packages: z.record(z.string(), LockEntry) });

/** The manifest fields npm reads to resolve and place a version (copied from the lockfile as they are). */
const MANIFEST_FIELDS = [
  'dependencies',
  'optionalDependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'bin',
  'engines',
  'os',
  'cpu',
  'libc',
] as const;

export interface RegistryRequest {
  method: string;
  /** As received (scoped names may arrive as `@scope%2fname`). */
  url: string;
  status: number;
  /** Why a request was refused, for the assertion message. */
  reason?: string;
}

export interface LocalRegistry {
  /** `http://127.0.0.1:PORT/` */
  url: string;
  /** Every request answered, in arrival order. */
  requests: readonly RegistryRequest[];
  /** Requests that were meant for another host (proxied or CONNECT): should stay empty. */
  outside: readonly string[];
  /**
   * The npm configuration that installs from this registry and the given cache only: registry, cache,
   * prefer-offline, no audit/fund/update check, no retries, and this server as the proxy for every other host.
   */
  npmEnv: Record<string, string>;
  close(): Promise<void>;
}

interface Version {
  manifest: Record<string, unknown>;
  integrity: string;
  file: string;
}

/** The cacache content path of one `integrity` (the first of its hashes present in the cache), else undefined. */
export function cachedTarball(cacheDir: string, integrity: string): string | undefined {
  for (const hash of integrity.split(/\s+/)) {
    const dash = hash.indexOf('-');
    if (dash < 0) continue;
    const algorithm = hash.slice(0, dash);
    const hex = Buffer.from(hash.slice(dash + 1), 'base64').toString('hex');
    const file = join(
      cacheDir,
      '_cacache',
      'content-v2',
      algorithm,
      hex.slice(0, 2),
      hex.slice(2, 4),
      hex.slice(4),
    );
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** The npm cache directory the current user's npm uses (`npm config get cache`). */
export async function npmCacheDir(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { stdout } = await run('npm', ['config', 'get', 'cache'], { env, timeout: 30_000 });
  return stdout.trim();
}

function compareVersions(a: string, b: string): number {
  const parse = (version: string): { core: number[]; pre: string } => {
    const [core = '', pre = ''] = version.split(/-(.*)/s);
    return { core: core.split('.').map(Number), pre };
  };
  const left = parse(a);
  const right = parse(b);
  for (let i = 0; i < 3; i++) {
    const diff = (left.core[i] ?? 0) - (right.core[i] ?? 0);
    if (diff !== 0) return diff;
  }
  if (left.pre === right.pre) return 0;
  if (left.pre === '') return 1;
  if (right.pre === '') return -1;
  return left.pre < right.pre ? -1 : 1;
}

function tarballPath(name: string, version: string): string {
  return `/${name}/-/${name.replace(/^@[^/]+\//, '')}-${version}.tgz`;
}

function packageName(path: string, entry: LockEntry): string {
  return entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

/** name → version → manifest, from every installed (non-link) entry of the lockfile. */
function versionsFromLockfile(
  lockfile: z.infer<typeof Lockfile>,
): Map<string, Map<string, Version>> {
  const names = new Map<string, Map<string, Version>>();
  for (const [path, entry] of Object.entries(lockfile.packages)) {
    if (!path.includes('node_modules/') || entry.link === true) continue;
    if (entry.version === undefined || entry.integrity === undefined) continue;
    const name = packageName(path, entry);
    const manifest: Record<string, unknown> = { name, version: entry.version };
    for (const field of MANIFEST_FIELDS)
      if (entry[field] !== undefined) manifest[field] = entry[field];
    const versions = names.get(name) ?? new Map<string, Version>();
    names.set(name, versions);
    versions.set(entry.version, {
      manifest,
      integrity: entry.integrity,
      file: tarballPath(name, entry.version),
    });
  }
  return names;
}

function packument(
  name: string,
  versions: Map<string, Version>,
  base: string,
): Record<string, unknown> {
  const sorted = [...versions.entries()].sort(([a], [b]) => compareVersions(a, b));
  return {
    name,
    'dist-tags': { latest: sorted.at(-1)?.[0] },
    versions: Object.fromEntries(
      sorted.map(([version, { manifest, integrity, file }]) => [
        version,
        { ...manifest, dist: { tarball: `${base}${file.slice(1)}`, integrity } },
      ]),
    ),
  };
}

/**
 * Starts the registry for `lockfilePath`, serving tarballs out of `cacheDir` (the npm cache that `npm ci`
 * of that lockfile filled). A package the lockfile lists but the cache lacks (another platform's optional
 * binary) still has its packument, so npm can see its os/cpu and skip it; its tarball answers 404.
 */
export async function startLocalRegistry(options: {
  lockfilePath: string;
  cacheDir: string;
}): Promise<LocalRegistry> {
  const lockfile = Lockfile.parse(JSON.parse(await readFile(options.lockfilePath, 'utf8')));
  const names = versionsFromLockfile(lockfile);
  const byTarball = new Map<string, Version>();
  for (const versions of names.values())
    for (const version of versions.values()) byTarball.set(version.file, version);

  const requests: RegistryRequest[] = [];
  const outside: string[] = [];
  let base = '';

  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    status: number,
    body: string,
    reason?: string,
  ): void => {
    requests.push({
      method: request.method ?? '?',
      url: request.url ?? '?',
      status,
      ...(reason === undefined ? {} : { reason }),
    });
    response.writeHead(status, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(body),
    });
    response.end(body);
  };
  const refuse = (
    request: IncomingMessage,
    response: ServerResponse,
    status: number,
    reason: string,
  ): void => answer(request, response, status, JSON.stringify({ error: reason }), reason);

  const server = createServer((request, response) => {
    const raw = request.url ?? '/';
    if (!raw.startsWith('/')) {
      outside.push(`${request.method ?? '?'} ${raw}`);
      refuse(request, response, 403, `the test registry refuses to proxy ${raw}`);
      return;
    }
    if (request.method !== 'GET') {
      refuse(request, response, 405, `${request.method ?? '?'} is not served by the test registry`);
      return;
    }
    const path = decodeURIComponent(raw.split('?')[0] ?? '/');
    if (path.includes('/-/')) {
      const version = byTarball.get(path);
      if (version === undefined) {
        refuse(request, response, 404, `${path} is not a tarball of package-lock.json`);
        return;
      }
      const file = cachedTarball(options.cacheDir, version.integrity);
      if (file === undefined) {
        refuse(
          request,
          response,
          404,
          `${path} (${version.integrity}) is not in the npm cache ${options.cacheDir}: npm ci of this lockfile puts it there, unless it is another platform's optional package`,
        );
        return;
      }
      requests.push({ method: 'GET', url: raw, status: 200 });
      response.writeHead(200, {
        'content-type': 'application/octet-stream',
        'cache-control': 'no-store',
        'content-length': statSync(file).size,
      });
      createReadStream(file).pipe(response);
      return;
    }
    const name = path.slice(1);
    const versions = names.get(name);
    if (versions === undefined) {
      refuse(request, response, 404, `${name} is not in package-lock.json`);
      return;
    }
    answer(request, response, 200, JSON.stringify(packument(name, versions, base)));
  });
  server.on('connect', (request: IncomingMessage, socket) => {
    outside.push(`CONNECT ${request.url ?? '?'}`);
    requests.push({
      method: 'CONNECT',
      url: request.url ?? '?',
      status: 403,
      reason: 'the test registry is no proxy',
    });
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}/`;

  return {
    url: base,
    requests,
    outside,
    npmEnv: {
      npm_config_registry: base,
      npm_config_cache: options.cacheDir,
      npm_config_prefer_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
      npm_config_fetch_retries: '0',
      npm_config_proxy: base,
      npm_config_https_proxy: base,
      npm_config_noproxy: '127.0.0.1',
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
