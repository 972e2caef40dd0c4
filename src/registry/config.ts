import { readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveUserConfigPath } from '../paths.js';
import { parseLayer, parseProjectLayer, type ParsedLayer } from './config-parse.js';
import { mergeLayers } from './config-rules.js';
import type { ConfigIssue, ConfigPaths, ConfigResult } from './config-types.js';

/** models.example.yaml ships at the package root: ../../ from both src/registry and dist/registry. */
export const EXAMPLE_CONFIG_PATH = fileURLToPath(
  new URL('../../models.example.yaml', import.meta.url),
);

export function configPaths(options: {
  configFlag?: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
}): ConfigPaths {
  const user = resolve(options.cwd, resolveUserConfigPath(options.configFlag, options.env));
  const project = join(options.cwd, 'models.yaml');
  const sidecar = join(dirname(user), 'models.local.yaml');
  const named = Boolean(options.configFlag) || Boolean(options.env.LOCALAGENTS_CONFIG);
  const paths: ConfigPaths =
    project === user || project === sidecar ? { user, sidecar } : { user, project, sidecar };
  if (named) paths.userNamed = true;
  return paths;
}

interface CacheEntry {
  mtimeMs: number;
  size: number;
  parsed: ParsedLayer;
}

/** Parsed layers keyed by path; an entry is reused only while the file's mtime and size are unchanged. */
export type ConfigCache = Map<string, CacheEntry>;

export function createConfigCache(): ConfigCache {
  return new Map();
}

/** What a configuration file may cost: models.yaml files are a few kilobytes; parsing is super-linear. */
export const MAX_CONFIG_BYTES = 1024 * 1024;
const READ_TIMEOUT_MS = 5000;

function refused(file: string, message: string, fix: string): ParsedLayer {
  return {
    file,
    errors: [{ file, path: '', message, fix }],
    warnings: [],
    lineOf: () => undefined,
  };
}

async function readLayer(
  file: string,
  cache: ConfigCache,
  parse: (text: string, file: string) => ParsedLayer = parseLayer,
): Promise<ParsedLayer | undefined> {
  let info;
  try {
    info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      cache.delete(file);
      return undefined;
    }
    return unreadable(file, error);
  }
  // A FIFO would block the read forever and a device would never end: only regular files are read.
  if (!info.isFile() && !info.isDirectory())
    return refused(file, 'not a regular file', 'point the config at a YAML file');
  if (info.size > MAX_CONFIG_BYTES)
    return refused(
      file,
      `${info.size} bytes, over the ${MAX_CONFIG_BYTES}-byte limit for a models.yaml`,
      'a models.yaml is a few kilobytes: check that this is the right file',
    );
  const cached = cache.get(file);
  if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.parsed;
  let text: string;
  try {
    text = await readFile(file, { encoding: 'utf8', signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
  } catch (error) {
    return unreadable(file, error);
  }
  const parsed = parse(text, file);
  cache.set(file, { mtimeMs: info.mtimeMs, size: info.size, parsed });
  return parsed;
}

function unreadable(file: string, error: unknown): ParsedLayer {
  const code = (error as NodeJS.ErrnoException).code ?? 'error';
  return refused(
    file,
    `cannot read the file (${code})`,
    'check that it is a readable file, not a directory',
  );
}

// A file named with --config or LOCALAGENTS_CONFIG that is not there is most likely a typo.
function missingNamedFile(file: string): ConfigIssue {
  return {
    file,
    path: '',
    message: 'not found; using the other layers only',
    fix: `check the path, or start from the example: cp "${EXAMPLE_CONFIG_PATH}" "${file}"`,
  };
}

/**
 * Reads the user file, the project file and the sidecar (lowest first) and merges them.
 * Pass the same `cache` on every call (the registry does) to skip re-parsing unchanged files;
 * without one every call parses every file. Never throws for bad or missing files.
 */
export async function loadRegistryConfig(
  paths: ConfigPaths,
  cache: ConfigCache = createConfigCache(),
): Promise<ConfigResult> {
  const files = [paths.user, paths.project, paths.sidecar].filter(
    (file, index, all): file is string => file !== undefined && all.indexOf(file) === index,
  );
  const read = await Promise.all(
    files.map((file) =>
      readLayer(file, cache, file === paths.project ? parseProjectLayer : parseLayer),
    ),
  );
  const present = read.filter((layer): layer is ParsedLayer => layer !== undefined);
  const layers = present.filter((layer) => layer.ignored !== true);
  const parseErrors = layers.flatMap((layer) => layer.errors);
  const parseWarnings = present.flatMap((layer) => layer.warnings);
  if (paths.userNamed && read[0] === undefined) parseWarnings.unshift(missingNamedFile(paths.user));
  const readFiles = layers.map((layer) => layer.file);
  if (parseErrors.length > 0)
    return { ok: false, issues: parseErrors, warnings: parseWarnings, files: readFiles };
  const merged = mergeLayers(layers, EXAMPLE_CONFIG_PATH, paths.user);
  const warnings = [...parseWarnings, ...merged.warnings];
  if (merged.errors.length > 0)
    return { ok: false, issues: merged.errors, warnings, files: readFiles };
  return { ok: true, config: merged.config, warnings };
}
