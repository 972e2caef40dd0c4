/**
 * Go's encoding/json as Ollama shows it on the wire (reference §1): marshalling escapes `<`, `>`, `&`,
 * U+2028 and U+2029 as `\u` escapes and writes `map[string]any` keys sorted; request bodies are read
 * by a json.Decoder (gin's ShouldBindJSON), which takes the first value and ignores what follows,
 * with the decoder's own error texts (`invalid character 'x' looking for beginning of value`, `EOF`).
 */

const GO_ESCAPES: Readonly<Record<string, string>> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** json.Marshal's text for a value whose object keys are already in Go's order. */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => GO_ESCAPES[c] ?? c);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A decoded `any`: Go marshals maps with their keys sorted. */
export function goSorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(goSorted);
  if (!isRecord(value)) return value;
  const keys = Object.keys(value).sort();
  return Object.fromEntries(keys.map((key) => [key, goSorted(value[key])]));
}

/**
 * Tool-call arguments (`api.ToolCallFunctionArguments`): an ordered map at the top, plain `any`
 * (sorted maps) below it.
 */
export function goArguments(input: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).map(([key, value]) => [key, goSorted(value)]));
}

/** time.Time as RFC 3339 with nanoseconds, trailing zeros dropped (the server's zone taken as UTC). */
export function goTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.?0+Z$/, 'Z');
}

/** strconv.Quote of one character, in the single quotes of the scanner's messages. */
function quoteChar(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '"') return "'\"'";
  const named: Record<string, string> = {
    '\x07': '\\a',
    '\b': '\\b',
    '\f': '\\f',
    '\n': '\\n',
    '\r': '\\r',
    '\t': '\\t',
    '\v': '\\v',
    '\\': '\\\\',
  };
  const code = c.charCodeAt(0);
  const quoted =
    named[c] ?? (code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : c);
  return `'${quoted}'`;
}

// The scanner unwinds with an Error of this name; any other error is a bug and propagates.
const SYNTAX = 'GoSyntaxError';

export type GoDecoded = { kind: 'ok'; value: unknown } | { kind: 'error'; message: string };

const WHITESPACE = new Set([' ', '\t', '\r', '\n']);
const HEX = /^[0-9a-fA-F]$/;
const DIGIT = /^[0-9]$/;

/** The scanner: the end of the first JSON value of `text`, or the Go error for it. */
function scanValue(text: string, start: number): number {
  let at = start;
  const fail = (context: string): never => {
    const c = text[at];
    const message =
      c === undefined ? 'unexpected EOF' : `invalid character ${quoteChar(c)} ${context}`;
    throw Object.assign(new Error(message), { name: SYNTAX });
  };
  const skip = (): void => {
    while (at < text.length && WHITESPACE.has(text[at] ?? '')) at += 1;
  };
  const literal = (word: string): void => {
    for (let index = 1; index < word.length; index += 1) {
      at += 1;
      if (text[at] !== word[index])
        fail(`in literal ${word} (expecting ${quoteChar(word[index] ?? '')})`);
    }
    at += 1;
  };
  const string = (): void => {
    at += 1;
    for (;;) {
      const c = text[at];
      if (c === undefined) fail('');
      if (c === '"') {
        at += 1;
        return;
      }
      if (c === '\\') {
        at += 1;
        const escape = text[at];
        if (escape === 'u') {
          for (let index = 0; index < 4; index += 1) {
            at += 1;
            if (!HEX.test(text[at] ?? '')) fail('in \\u hexadecimal character escape');
          }
        } else if (escape === undefined || !'"\\/bfnrt'.includes(escape)) {
          fail('in string escape code');
        }
      } else if ((c ?? '').charCodeAt(0) < 0x20) {
        fail('in string literal');
      }
      at += 1;
    }
  };
  const digits = (): void => {
    while (DIGIT.test(text[at] ?? '')) at += 1;
  };
  const number = (): void => {
    if (text[at] === '-') {
      at += 1;
      if (!DIGIT.test(text[at] ?? '')) fail('in numeric literal');
    }
    if (text[at] === '0') at += 1;
    else digits();
    if (text[at] === '.') {
      at += 1;
      if (!DIGIT.test(text[at] ?? '')) fail('after decimal point in numeric literal');
      digits();
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at += 1;
      if (text[at] === '+' || text[at] === '-') at += 1;
      if (!DIGIT.test(text[at] ?? '')) fail('in exponent of numeric literal');
      digits();
    }
  };
  const value = (): void => {
    skip();
    const c = text[at];
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    if (c === '-' || DIGIT.test(c ?? '')) return number();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    fail('looking for beginning of value');
  };
  const object = (): void => {
    at += 1;
    skip();
    if (text[at] === '}') {
      at += 1;
      return;
    }
    for (;;) {
      skip();
      if (text[at] !== '"') fail('looking for beginning of object key string');
      string();
      skip();
      if (text[at] !== ':') fail('after object key');
      at += 1;
      value();
      skip();
      if (text[at] === '}') {
        at += 1;
        return;
      }
      if (text[at] !== ',') fail('after object key:value pair');
      at += 1;
    }
  };
  const array = (): void => {
    at += 1;
    skip();
    if (text[at] === ']') {
      at += 1;
      return;
    }
    for (;;) {
      value();
      skip();
      if (text[at] === ']') {
        at += 1;
        return;
      }
      if (text[at] !== ',') fail('after array element');
      at += 1;
    }
  };
  value();
  return at;
}

/** json.NewDecoder(body).Decode(&v): the first value of the body, or the decoder's error text. */
export function goDecode(text: string): GoDecoded {
  if (text.trim() === '') return { kind: 'error', message: 'EOF' };
  try {
    const end = scanValue(text, 0);
    return { kind: 'ok', value: JSON.parse(text.slice(0, end)) as unknown };
  } catch (error) {
    if (error instanceof Error && error.name === SYNTAX)
      return { kind: 'error', message: error.message };
    throw error;
  }
}

/** The JSON kind Go names in an UnmarshalTypeError (`string`, `number`, `object`, …). */
export function goKind(value: unknown): string {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return 'array';
  return 'object';
}
