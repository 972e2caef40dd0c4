import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { backendKindOf } from '../kinds.js';
import { describeIssue, formatPath, suggestKey } from './config-messages.js';
import { KNOWN_KEYS, LayerSchema, type Layer } from './config-schema.js';
import type { ConfigIssue } from './config-types.js';

/** One file, read → YAML → zod. `lineOf` finds where a dotted path sits, for later rules. */
export interface ParsedLayer {
  file: string;
  layer?: Layer;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  lineOf: (path: readonly PropertyKey[]) => number | undefined;
  /** A project file that is not ours: left out of the merge (its warning says why). */
  ignored?: boolean;
}

/** The node at `path`, or the key of the deepest entry that exists (a missing key points at its parent). */
function locate(
  doc: Document,
  counter: LineCounter,
  path: readonly PropertyKey[],
): number | undefined {
  let node: unknown = doc.contents;
  let offset: number | undefined = doc.contents?.range?.[0];
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (!pair) break;
      offset = (pair.key as Node).range?.[0] ?? offset;
      // A scalar value's own line is where the user will look; collections start on the key's line.
      if (isScalar(pair.value) && pair.value.range) offset = pair.value.range[0];
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset === undefined ? undefined : counter.linePos(offset).line;
}

/** Keys a user may write a secret under; models.yaml only ever names the variable that holds it. */
const SECRET_KEYS = new Set(['api_key', 'apikey', 'api-key', 'key', 'token', 'password', 'secret']);

function unknownKeyWarnings(
  file: string,
  value: unknown,
  lineOf: ParsedLayer['lineOf'],
): ConfigIssue[] {
  const warnings: ConfigIssue[] = [];
  const check = (object: unknown, known: readonly string[], at: PropertyKey[]): void => {
    if (object === null || typeof object !== 'object' || Array.isArray(object)) return;
    for (const key of Object.keys(object)) {
      if (known.includes(key)) continue;
      const path = [...at, key];
      if (at[0] === 'endpoints' && SECRET_KEYS.has(key.toLowerCase())) {
        warnings.push({
          file,
          line: lineOf(path),
          path: formatPath(path),
          message:
            'a key written into models.yaml is ignored (and should not be in the file at all)',
          fix: 'export it in an environment variable and name that variable here: api_key_env: LLAMA_API_KEY',
        });
        continue;
      }
      const suggestion = suggestKey(key, known);
      warnings.push({
        file,
        line: lineOf(path),
        path: formatPath(path),
        message: 'unknown key, ignored',
        fix: suggestion ? `did you mean ${suggestion}?` : `known keys here: ${known.join(', ')}`,
      });
    }
  };
  check(value, KNOWN_KEYS.top, []);
  if (value === null || typeof value !== 'object') return warnings;
  const root = value as Record<string, unknown>;
  check(root.defaults, KNOWN_KEYS.defaults, ['defaults']);
  for (const [section, known] of [
    ['endpoints', KNOWN_KEYS.endpoint],
    ['models', KNOWN_KEYS.model],
    ['agents', KNOWN_KEYS.agent],
  ] as const) {
    const entries = root[section];
    if (entries === null || typeof entries !== 'object') continue;
    for (const [name, entry] of Object.entries(entries)) check(entry, known, [section, name]);
  }
  return warnings;
}

/**
 * A `backend:` spelling no kind matches is probed as `other` (its kind detected) with a warning, never an
 * invalid configuration.
 */
function backendWarnings(file: string, layer: Layer, lineOf: ParsedLayer['lineOf']): ConfigIssue[] {
  return Object.entries(layer.endpoints ?? {}).flatMap(([name, endpoint]) => {
    const value = endpoint.backend;
    if (value === undefined) return [];
    const path = ['endpoints', name, 'backend'];
    const where = { file, line: lineOf(path), path: formatPath(path) };
    if (backendKindOf(value) === undefined)
      return [
        {
          ...where,
          message: `unknown backend "${value}"; probed as other (its kind is detected)`,
          fix: 'write one of llama.cpp, vllm, ollama, lmstudio, other',
        },
      ];
    return [];
  });
}

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Why a document is not a localagents models.yaml, or undefined when it is one: a mapping with endpoints, models
 * or defaults of our shape (mappings; endpoint entries mappings; menu entries empty, text, or a mapping with at
 * least one menu key). Many repositories have a models.yaml of their own (ML model lists, codegen configs).
 */
export function foreignShape(value: unknown): string | undefined {
  if (!isMapping(value)) return 'its top level is not a mapping';
  const ours = (['endpoints', 'models', 'defaults'] as const).filter((key) => key in value);
  if (ours.length === 0)
    return `it has none of endpoints, models, defaults (top-level keys: ${Object.keys(value).join(', ') || 'none'})`;
  for (const key of ours) {
    const section = value[key];
    if (section !== null && !isMapping(section)) return `its ${key} is not a mapping`;
  }
  const endpoints = isMapping(value.endpoints) ? Object.values(value.endpoints) : [];
  if (endpoints.some((entry) => !isMapping(entry))) return 'an endpoints entry is not a mapping';
  const menuKeys: readonly string[] = KNOWN_KEYS.model;
  const models = isMapping(value.models) ? Object.values(value.models) : [];
  const foreignEntry = models.find(
    (entry) =>
      entry !== null &&
      typeof entry !== 'string' &&
      !(isMapping(entry) && Object.keys(entry).some((key) => menuKeys.includes(key))),
  );
  if (foreignEntry !== undefined) return 'its models entries are not menu entries';
  return undefined;
}

/**
 * A project's ./models.yaml: read like any layer when it is a localagents file, otherwise (or when it is not even
 * YAML) left out with a warning, so another tool's file of the same name never breaks the configuration.
 */
export function parseProjectLayer(text: string, file: string): ParsedLayer {
  const read = readDocument(text);
  const why =
    read.doc.errors.length > 0
      ? 'it is not valid YAML'
      : read.aliasError !== undefined
        ? 'it expands into too many YAML aliases'
        : foreignShape(read.value ?? undefined);
  if (why === undefined) return layerOf(read, file);
  return {
    file,
    errors: [],
    warnings: [
      {
        file,
        path: '',
        message: `not a localagents models.yaml (${why}); ignored`,
        fix: 'nothing to do if it belongs to another tool; to use it for localagents, give it endpoints, models or defaults',
      },
    ],
    lineOf: () => undefined,
    ignored: true,
  };
}

/** Alias expansions a models.yaml may use; an alias bomb needs millions. */
const MAX_ALIASES = 100;

/** One YAML text, parsed once: the document (for line numbers) and its value, or why there is none. */
interface ReadDocument {
  doc: Document;
  counter: LineCounter;
  /** `toJS()` as it came (null for an empty document); absent when there are YAML errors or too many aliases. */
  value?: unknown;
  /** The yaml library's refusal of an alias bomb. */
  aliasError?: string;
}

function readDocument(text: string): ReadDocument {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) return { doc, counter };
  try {
    // The yaml library refuses an alias bomb ("billion laughs") here, past MAX_ALIASES expansions.
    return { doc, counter, value: doc.toJS({ maxAliasCount: MAX_ALIASES }) as unknown };
  } catch (error) {
    return { doc, counter, aliasError: error instanceof Error ? error.message : String(error) };
  }
}

export function parseLayer(text: string, file: string): ParsedLayer {
  return layerOf(readDocument(text), file);
}

function layerOf(
  { doc, counter, value: read, aliasError }: ReadDocument,
  file: string,
): ParsedLayer {
  const lineOf = (path: readonly PropertyKey[]): number | undefined => locate(doc, counter, path);
  const yamlIssue = (error: { message: string; pos: [number, number] }): ConfigIssue => ({
    file,
    line: counter.linePos(error.pos[0]).line,
    path: '',
    message: `not valid YAML: ${error.message.split('\n')[0] ?? error.message}`,
    fix: 'check the indentation and quoting on that line',
  });
  if (doc.errors.length > 0) {
    return { file, errors: doc.errors.map(yamlIssue), warnings: [], lineOf };
  }
  if (aliasError !== undefined) {
    return {
      file,
      errors: [
        {
          file,
          path: '',
          message: `too many YAML aliases (${aliasError})`,
          fix: 'write the values out instead of repeating anchors (*alias) that expand into more aliases',
        },
      ],
      warnings: [],
      lineOf,
    };
  }
  const value = read ?? {};
  const parsed = LayerSchema.safeParse(value, { reportInput: true });
  const warnings = unknownKeyWarnings(file, value, lineOf);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((issue) => {
      const path = issue.path;
      return {
        file,
        line: lineOf(path),
        path: formatPath(path),
        ...describeIssue(issue),
      };
    });
    return { file, errors: byLine(errors), warnings: byLine(warnings), lineOf };
  }
  warnings.push(...backendWarnings(file, parsed.data, lineOf));
  return { file, layer: parsed.data, errors: [], warnings: byLine(warnings), lineOf };
}

const byLine = (issues: ConfigIssue[]): ConfigIssue[] =>
  issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
