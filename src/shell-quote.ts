/**
 * A value as one POSIX shell word: left bare when it holds only characters no shell treats specially
 * (so paths and URLs read as they are), else in single quotes. For commands and `NAME=value` lines that
 * a user pastes or `eval`s.
 */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
