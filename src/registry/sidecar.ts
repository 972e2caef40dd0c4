import { open, readFile, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseDocument } from 'yaml';
import { LocalAgentsError } from '../errors.js';
import { mkdirPrivate, writeFileAtomic } from '../private-fs.js';
import { z } from 'zod';
import { describeIssue, formatConfigIssue, formatPath, type IssueLike } from './config-messages.js';
import { EndpointSchema, ModelSchema } from './config-schema.js';
import type { ConfigIssue, ConfigPaths } from './config-types.js';
import { loadRegistryConfig } from './config.js';

/** register_endpoint / register_model: they write models.local.yaml only, never the user's models.yaml. */

const name = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/);
export const RegisterEndpointInputSchema = EndpointSchema.extend({ name });
export const RegisterModelInputSchema = ModelSchema.extend({ name });
export type RegisterEndpointInput = z.input<typeof RegisterEndpointInputSchema>;
export type RegisterModelInput = z.input<typeof RegisterModelInputSchema>;

export type SidecarResult =
  | {
      kind: 'written';
      file: string;
      section: 'endpoints' | 'models';
      name: string;
      replaced: boolean;
      /** What was written for the entry. */
      entry: Record<string, unknown>;
    }
  | { kind: 'invalid'; issues: ConfigIssue[]; message: string };

const HEADER =
  ' Written by `localagents models add-endpoint|add-model` and the register_* tools.\n' +
  ' Entries here replace same-named entries of models.yaml; edit or delete them freely.';

const LOCK_WAIT_MS = 5000;
const LOCK_STALE_MS = 10_000;

/** An exclusive lock file beside the sidecar, so concurrent writers (even other processes) take turns. */
async function withLock<T>(file: string, work: () => Promise<T>): Promise<T> {
  const lock = `${file}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lock, 'wx');
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = await stat(lock).then(
        (info) => Date.now() - info.mtimeMs,
        () => 0,
      );
      if (age > LOCK_STALE_MS) await unlink(lock).catch(() => undefined);
      else if (Date.now() > deadline)
        throw new LocalAgentsError('IO_FAILED', `${lock} is held by another writer`, {
          hint: 'if no localagents process is writing, delete the lock file',
          cause: error,
        });
      else await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 20));
    }
  }
  try {
    return await work();
  } finally {
    await unlink(lock).catch(() => undefined);
  }
}

function invalid(
  tool: string,
  section: string,
  entryName: string,
  issues: readonly IssueLike[],
): SidecarResult {
  const rendered = issues.map((issue): ConfigIssue => {
    const path = issue.path[0] === 'name' ? ['name'] : [section, entryName, ...issue.path];
    return { file: tool, path: formatPath(path), ...describeIssue({ ...issue, path }) };
  });
  return { kind: 'invalid', issues: rendered, message: rendered.map(formatConfigIssue).join('\n') };
}

async function writeEntry(
  paths: ConfigPaths,
  section: 'endpoints' | 'models',
  entryName: string,
  value: Record<string, unknown>,
): Promise<SidecarResult> {
  const file = paths.sidecar;
  await mkdirPrivate(dirname(file));
  return withLock(file, async () => {
    const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    const doc = parseDocument(text ?? '');
    if (doc.errors.length > 0) {
      const issue: ConfigIssue = {
        file,
        path: '',
        message: `not valid YAML (${doc.errors[0]?.message.split('\n')[0] ?? ''}); not overwriting it`,
        fix: 'fix or delete the file, then register again',
      };
      return { kind: 'invalid', issues: [issue], message: formatConfigIssue(issue) };
    }
    if (text === undefined || doc.contents === null) doc.commentBefore = HEADER;
    const replaced = doc.hasIn([section, entryName]);
    doc.setIn([section, entryName], doc.createNode(value));
    await writeFileAtomic(file, doc.toString({ lineWidth: 100 }));
    return { kind: 'written', file, section, name: entryName, replaced, entry: value };
  });
}

/** Keys in a readable order, undefined ones left out. */
function pick(source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(
    keys.filter((key) => source[key] !== undefined).map((key) => [key, source[key]]),
  );
}

export async function registerEndpoint(paths: ConfigPaths, input: unknown): Promise<SidecarResult> {
  const parsed = RegisterEndpointInputSchema.safeParse(input, { reportInput: true });
  const entryName =
    typeof (input as { name?: unknown } | null)?.name === 'string'
      ? String((input as { name: string }).name)
      : 'NAME';
  if (!parsed.success)
    return invalid('register_endpoint', 'endpoints', entryName, parsed.error.issues);
  const { name: endpointName, ...rest } = parsed.data;
  const base = rest.base_url.replace(/\/+$/, '').replace(/\/v1$/, '');
  return writeEntry(
    paths,
    'endpoints',
    endpointName,
    pick({ ...rest, base_url: base }, [
      'base_url',
      'backend',
      'host',
      'notes',
      'api_key_env',
      'max_concurrent',
      'env',
    ]),
  );
}

/**
 * A model preferring an endpoint no layer defines would only earn a warning in the file, but a registration
 * naming one is a typo best fixed now: refuse it.
 */
async function missingEndpoint(
  paths: ConfigPaths,
  endpoint: string,
): Promise<ConfigIssue | undefined> {
  const current = await loadRegistryConfig(paths);
  if (!current.ok) return undefined;
  const names = current.config.endpoints.map((entry) => entry.name);
  if (names.includes(endpoint)) return undefined;
  return {
    file: 'register_model',
    path: 'endpoint',
    message: `no endpoint is named "${endpoint}"`,
    fix:
      names.length > 0
        ? `use one of: ${names.join(', ')}, or register the endpoint first`
        : 'register the endpoint first',
  };
}

export async function registerModel(paths: ConfigPaths, input: unknown): Promise<SidecarResult> {
  const parsed = RegisterModelInputSchema.safeParse(input, { reportInput: true });
  const entryName =
    typeof (input as { name?: unknown } | null)?.name === 'string'
      ? String((input as { name: string }).name)
      : 'NAME';
  if (!parsed.success) return invalid('register_model', 'models', entryName, parsed.error.issues);
  const { name: modelName, ...rest } = parsed.data;
  const unknown =
    rest.endpoint === undefined ? undefined : await missingEndpoint(paths, rest.endpoint);
  if (unknown) return { kind: 'invalid', issues: [unknown], message: formatConfigIssue(unknown) };
  return writeEntry(
    paths,
    'models',
    modelName,
    pick(rest, [
      'notes',
      'host',
      'served_name',
      'endpoint',
      'context',
      'bring_up',
      'tags',
      'env',
      'max_turns',
      'permission_mode',
    ]),
  );
}
