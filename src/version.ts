import { readFileSync } from 'node:fs';

let cached: string | undefined;

/**
 * The version in package.json, the one source of truth: `--version`, the MCP server info and the
 * delegate's client-app tag all read it. Read once, on first use (no I/O at import), from the package
 * root, which is one level above both src/ (tests) and dist/ (the installed package).
 */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  const raw: unknown = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  );
  const version =
    typeof raw === 'object' && raw !== null && 'version' in raw && typeof raw.version === 'string'
      ? raw.version
      : undefined;
  if (version === undefined) throw new Error('package.json has no version');
  cached = version;
  return version;
}
