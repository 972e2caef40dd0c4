import picomatch from 'picomatch';

const GLOB_CHARS = /[*?[\]{}!]/;

/** Lower case, letters and digits only: `Qwen3.8-27B` and `qwen3.8-27b` both become `qwen3827b`. */
export function squash(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9]/g, '');
}

// `bash: true` lets `*` cross `/`, because served ids are repo paths (`unsloth/Qwen3…`), not file paths.
function globMatcher(pattern: string): (id: string) => boolean {
  return picomatch(pattern, { bash: true, nocase: true, dot: true });
}

/** How well a served id matched a name; lower is better. Across endpoints the best kind wins first. */
export type MatchKind = 'exact' | 'case' | 'glob' | 'substring';
export const MATCH_KIND_ORDER: readonly MatchKind[] = ['exact', 'case', 'glob', 'substring'];

export interface ServedIdMatch {
  id: string;
  kind: MatchKind;
}

function exactOrGlob(pattern: string, servedIds: string[]): ServedIdMatch | undefined {
  const exact = servedIds.find((id) => id === pattern);
  if (exact !== undefined) return { id: exact, kind: 'exact' };
  const folded = servedIds.find((id) => id.toLowerCase() === pattern.toLowerCase());
  if (folded !== undefined) return { id: folded, kind: 'case' };
  if (!GLOB_CHARS.test(pattern)) return undefined;
  const globbed = servedIds.find(globMatcher(pattern));
  return globbed === undefined ? undefined : { id: globbed, kind: 'glob' };
}

/**
 * Name → the served id to send: exact, then case-insensitive, then glob, then squashed case-folded
 * substring (`qwen3.8-27b` finds `unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL`; the shortest such id wins).
 * A menu `served_name` pins the match: only it is tried, exactly or as a glob.
 */
export function matchServedIdWithKind(
  name: string,
  servedIds: string[],
  servedNameOverride?: string,
): ServedIdMatch | undefined {
  if (servedNameOverride !== undefined) return exactOrGlob(servedNameOverride, servedIds);
  const direct = exactOrGlob(name, servedIds);
  if (direct !== undefined || GLOB_CHARS.test(name)) return direct;
  const needle = squash(name);
  if (needle === '') return undefined;
  const hits = servedIds.filter((id) => squash(id).includes(needle));
  const shortest = hits.reduce<string | undefined>(
    (best, id) => (best === undefined || id.length < best.length ? id : best),
    undefined,
  );
  return shortest === undefined ? undefined : { id: shortest, kind: 'substring' };
}

/** {@link matchServedIdWithKind}, the id alone. */
export function matchServedId(
  name: string,
  servedIds: string[],
  servedNameOverride?: string,
): string | undefined {
  return matchServedIdWithKind(name, servedIds, servedNameOverride)?.id;
}
