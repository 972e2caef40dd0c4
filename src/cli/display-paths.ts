import { isAbsolute, relative, sep } from 'node:path';

/** Where the reader stands: paths inside `cwd` are shown relative to it, those under `home` with `~`. */
export interface PathView {
  cwd: string;
  home?: string | undefined;
}

function inside(path: string, base: string): boolean {
  return (
    base.length > 0 && (path === base || path.startsWith(base.endsWith(sep) ? base : base + sep))
  );
}

/** A path as a person reads it: `src/a.ts` inside the current directory, `~/…` under home, else whole. */
export function shortPath(path: string, view: PathView): string {
  if (!isAbsolute(path)) return path;
  if (inside(path, view.cwd)) return relative(view.cwd, path) || '.';
  if (view.home !== undefined && view.home !== sep && inside(path, view.home))
    return path === view.home ? '~' : `~${sep}${relative(view.home, path)}`;
  return path;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Free text (a tool call, a command) with every absolute path under one of `bases` shortened: the
 * first base that holds it wins, so list the most specific first. A base is replaced only where a
 * path starts (after a space, bracket, quote, `=` or `:`), never inside a longer path.
 */
export function shortenPathsIn(
  text: string,
  bases: readonly { path: string; as: string }[],
): string {
  let out = text;
  for (const base of bases) {
    if (base.path.length <= 1) continue;
    const pattern = new RegExp(
      `(^|[\\s(\\[{'"=:,])${escapeRegExp(base.path)}(?=${escapeRegExp(sep)}|$|[\\s)\\]}'",:;])(${escapeRegExp(sep)})?`,
      'g',
    );
    out = out.replace(pattern, (_match, before: string, slash: string | undefined) =>
      slash === undefined
        ? `${before}${base.as || '.'}`
        : `${before}${base.as ? base.as + sep : ''}`,
    );
  }
  return out;
}

/** The bases for text seen from `view`: a job's own directory first (its paths relative), then cwd, then home. */
export function textBases(view: PathView, jobDir?: string | null): { path: string; as: string }[] {
  const bases: { path: string; as: string }[] = [];
  if (jobDir) bases.push({ path: jobDir, as: '' });
  bases.push({ path: view.cwd, as: '' });
  if (view.home !== undefined) bases.push({ path: view.home, as: '~' });
  return bases;
}
