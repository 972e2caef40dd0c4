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

/**
 * How well a served id matched a name; lower is better. Across endpoints the best kind wins first. `squashed`: the
 * whole id squashed is the name squashed (`Qwen3.8 27B` for `qwen3.8-27b`); `substring`: part of it.
 */
export type MatchKind = 'exact' | 'case' | 'glob' | 'squashed' | 'substring';
export const MATCH_KIND_ORDER: readonly MatchKind[] = [
  'exact',
  'case',
  'glob',
  'squashed',
  'substring',
];

/** The Python original's rule: a squashed name this short never matches part of an id (`q`, `x`, `27`). */
export const MIN_SUBSTRING_LENGTH = 3;

export interface ServedIdMatch {
  id: string;
  kind: MatchKind;
  /**
   * Every served id that matched on the same terms, `id` first. More than one only for squashed and substring
   * matches, which are guesses: the caller asks which one is meant rather than picking.
   */
  ids: string[];
}

function exactOrGlob(pattern: string, servedIds: string[]): ServedIdMatch | undefined {
  const exact = servedIds.find((id) => id === pattern);
  if (exact !== undefined) return { id: exact, kind: 'exact', ids: [exact] };
  const folded = servedIds.find((id) => id.toLowerCase() === pattern.toLowerCase());
  if (folded !== undefined) return { id: folded, kind: 'case', ids: [folded] };
  if (!GLOB_CHARS.test(pattern)) return undefined;
  // A glob is the user's own "any of these": the first match is taken, as the original did.
  const globbed = servedIds.find(globMatcher(pattern));
  return globbed === undefined ? undefined : { id: globbed, kind: 'glob', ids: [globbed] };
}

function guessed(kind: 'squashed' | 'substring', ids: string[]): ServedIdMatch | undefined {
  const [id] = ids;
  return id === undefined ? undefined : { id, kind, ids };
}

/**
 * Name → the served id to send: exact, then case-insensitive, then glob, then the whole id squashed, then a
 * squashed substring of at least MIN_SUBSTRING_LENGTH characters (`qwen3.8-27b` finds
 * `unsloth/Qwen3.8-27B-GGUF:UD-Q4_K_XL`); `ids` lists every id a guess fits. A menu `served_name` pins the
 * match: only it is tried, exactly or as a glob.
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
  const whole = guessed(
    'squashed',
    servedIds.filter((id) => squash(id) === needle),
  );
  if (whole !== undefined || needle.length < MIN_SUBSTRING_LENGTH) return whole;
  return guessed(
    'substring',
    servedIds.filter((id) => squash(id).includes(needle)),
  );
}

/** {@link matchServedIdWithKind}, the id alone. */
export function matchServedId(
  name: string,
  servedIds: string[],
  servedNameOverride?: string,
): string | undefined {
  return matchServedIdWithKind(name, servedIds, servedNameOverride)?.id;
}
