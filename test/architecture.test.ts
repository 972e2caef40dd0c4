import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

interface SourceFile {
  path: string; // relative to src/, with forward slashes
  imports: string[]; // resolved to src-relative paths for local imports, bare specifiers otherwise
  typeOnlyImports: string[];
  /** The subset of `imports` loaded by `import()` when the code runs, not when the module loads. */
  dynamicImports: string[];
}

async function listTs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory()
        ? listTs(join(dir, entry.name))
        : Promise.resolve([join(dir, entry.name)]),
    ),
  );
  return nested.flat().filter((file) => file.endsWith('.ts'));
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC_IMPORT = /import\(\s*['"]([^'"]+)['"]\s*\)/g;

async function readSources(): Promise<SourceFile[]> {
  const files = (await listTs(SRC)).filter((file) => !file.endsWith('.test.ts'));
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(file, 'utf8');
      const imports: string[] = [];
      const typeOnlyImports: string[] = [];
      const dynamicImports: string[] = [];
      const add = (specifier: string, typeOnly: boolean, dynamic = false): void => {
        const target = specifier.startsWith('.')
          ? relative(SRC, resolve(dirname(file), specifier))
              .replaceAll('\\', '/')
              .replace(/\.js$/, '.ts')
          : specifier;
        (typeOnly ? typeOnlyImports : imports).push(target);
        if (dynamic) dynamicImports.push(target);
      };
      for (const match of text.matchAll(IMPORT)) add(match[3] ?? '', match[2] !== undefined);
      for (const match of text.matchAll(DYNAMIC_IMPORT)) add(match[1] ?? '', false, true);
      return {
        path: relative(SRC, file).replaceAll('\\', '/'),
        imports,
        typeOnlyImports,
        dynamicImports,
      };
    }),
  );
}

const area = (path: string): string => (path.includes('/') ? (path.split('/')[0] ?? path) : path);
const isPackage = (specifier: string, name: string): boolean =>
  specifier === name || specifier.startsWith(`${name}/`);

/** Leaf modules at the root of src/: every area may import them, and they import no area. */
const LEAVES = [
  'errors.ts',
  'diagnostics.ts',
  'version.ts',
  'connect-errors.ts',
  'kinds.ts',
  'private-fs.ts',
  'redact.ts',
  'shell-quote.ts',
  'local-door.ts',
  'coalesce.ts',
];

/** Which top-level areas of src/ each area may import (besides itself, the leaves and node: built-ins). */
const ALLOWED_LOCAL: Record<string, readonly string[]> = {
  ...Object.fromEntries(LEAVES.map((leaf) => [leaf, []])),
  'paths.ts': [],
  shim: [...LEAVES],
  registry: [...LEAVES, 'paths.ts'],
  emulator: [...LEAVES],
  jobs: [...LEAVES, 'shim', 'registry', 'paths.ts'],
  mcp: [...LEAVES, 'jobs', 'registry', 'paths.ts'],
  'app.ts': [...LEAVES, 'mcp', 'jobs', 'shim', 'registry', 'paths.ts'],
  dashboard: [...LEAVES, 'jobs', 'shim', 'registry', 'paths.ts'],
  cli: [
    ...LEAVES,
    'app.ts',
    'mcp',
    'jobs',
    'shim',
    'registry',
    'emulator',
    'dashboard',
    'paths.ts',
  ],
};

describe('architecture', () => {
  it('keeps every area of src/ to the imports the design allows', async () => {
    const violations: string[] = [];
    for (const file of await readSources()) {
      const from = area(file.path);
      const allowed = ALLOWED_LOCAL[from];
      if (!allowed) {
        violations.push(
          `${file.path}: src/${from} is not a known area; add it to the design first`,
        );
        continue;
      }
      for (const target of [...file.imports, ...file.typeOnlyImports]) {
        if (!target.endsWith('.ts')) continue;
        const to = area(target);
        if (to !== from && !allowed.includes(to)) violations.push(`${file.path} imports ${target}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('confines the Agent SDK, child_process and the MCP SDK to their one home each', async () => {
    const violations: string[] = [];
    for (const file of await readSources()) {
      for (const specifier of file.imports) {
        if (
          isPackage(specifier, '@anthropic-ai/claude-agent-sdk') &&
          file.path !== 'jobs/session.ts'
        )
          violations.push(`${file.path} imports the Agent SDK (only jobs/session.ts may)`);
        if (
          (specifier === 'node:child_process' || specifier === 'child_process') &&
          !['jobs/git.ts', 'jobs/process.ts'].includes(file.path)
        )
          violations.push(`${file.path} imports child_process (only jobs/git.ts may)`);
        if (
          isPackage(specifier, '@modelcontextprotocol/sdk') &&
          !file.path.startsWith('mcp/') &&
          file.path !== 'cli/serve.ts'
        )
          violations.push(`${file.path} imports the MCP SDK (only mcp/ and cli/serve.ts may)`);
      }
      for (const specifier of file.typeOnlyImports) {
        if (
          isPackage(specifier, '@anthropic-ai/claude-agent-sdk') &&
          !['jobs/session.ts', 'jobs/transcript.ts'].includes(file.path)
        )
          violations.push(
            `${file.path} imports Agent SDK types (only jobs/session.ts and transcript.ts may)`,
          );
      }
    }
    expect(violations).toEqual([]);
  });

  it.each(['cli/emulate.ts', 'cli/models.ts', 'cli/proxy.ts'])(
    'keeps %s free of the Agent SDK and the MCP SDK, so the command starts fast',
    async (entry) => {
      const sources = new Map((await readSources()).map((file) => [file.path, file]));
      const seen = new Set<string>();
      const heavy: string[] = [];
      const visit = (path: string): void => {
        if (seen.has(path)) return;
        seen.add(path);
        const file = sources.get(path);
        if (!file) return;
        for (const target of file.imports) {
          if (target.endsWith('.ts')) visit(target);
          else if (
            isPackage(target, '@anthropic-ai/claude-agent-sdk') ||
            isPackage(target, '@modelcontextprotocol/sdk')
          )
            heavy.push(`${path} → ${target}`);
        }
      };
      visit(entry);
      expect(seen.size).toBeGreaterThan(1);
      expect(heavy).toEqual([]);
    },
  );

  it('loads no registry, job runner or dashboard before serve answers the MCP handshake', async () => {
    // What `localagents serve` loads before it can answer `initialize` is everything main.ts imports statically;
    // the rest comes in by import() while the client initializes (bench/serve-initialize: ~280 ms; a static
    // import of the registry through the dashboard once made it ~370 ms).
    const sources = new Map((await readSources()).map((file) => [file.path, file]));
    const loaded = new Set<string>();
    const visit = (path: string): void => {
      if (loaded.has(path)) return;
      loaded.add(path);
      const file = sources.get(path);
      for (const target of file?.imports ?? []) {
        if (target.endsWith('.ts') && !file?.dynamicImports.includes(target)) visit(target);
      }
    };
    visit('cli/main.ts');
    visit('cli/serve.ts');
    expect(loaded.has('cli/serve.ts')).toBe(true);
    // The app (the config's YAML and zod, the runner, the Agent SDK) and the dashboard come later.
    const later = ['app.ts', 'registry/registry.ts', 'registry/config.ts', 'jobs/runner.ts'];
    const heavy = [...loaded].filter(
      (path) => later.includes(path) || path.startsWith('dashboard/'),
    );
    expect(heavy).toEqual([]);
  });

  it('exports by name from the defining module only, and declares classes only for errors', async () => {
    const violations: string[] = [];
    for (const file of (await listTs(SRC)).filter((path) => !path.endsWith('.test.ts'))) {
      const text = await readFile(file, 'utf8');
      const path = relative(SRC, file);
      if (/^export default\b/m.test(text)) violations.push(`${path}: export default`);
      if (/^export (type )?(\*|\{[^}]*\})( from |;)/m.test(text))
        violations.push(`${path}: re-export (import the name from where it is defined)`);
      if (/^(export )?(abstract )?class /m.test(text) && path !== 'errors.ts')
        violations.push(`${path}: class (only src/errors.ts declares one)`);
    }
    expect(violations).toEqual([]);
  });

  it('names every source file in kebab-case', async () => {
    const files = await listTs(SRC);
    const badNames = files
      .map((file) => basename(file))
      .filter((name) => !/^[a-z0-9]+(-[a-z0-9]+)*(\.test)?\.ts$/.test(name));
    expect(badNames).toEqual([]);
  });
});
