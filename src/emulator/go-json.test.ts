import { describe, expect, it } from 'vitest';
import { goArguments, goDecode, goJson, goTime } from './go-json.js';

describe('Go encoding/json as Ollama shows it (ollama-lmstudio.md §1)', () => {
  it('escapes <, >, &, U+2028 and U+2029 like json.Marshal', () => {
    expect(goJson({ a: '<b> & \u2028\u2029' })).toBe(
      '{"a":"\\u003cb\\u003e \\u0026 \\u2028\\u2029"}',
    );
  });

  it('keeps the top-level order of tool arguments and sorts the maps below', () => {
    expect(JSON.stringify(goArguments({ z: 1, a: { y: 1, b: [{ d: 1, c: 2 }] } }))).toBe(
      '{"z":1,"a":{"b":[{"c":2,"d":1}],"y":1}}',
    );
  });

  it.each([
    ['', 'EOF'],
    ['   ', 'EOF'],
    ['x', "invalid character 'x' looking for beginning of value"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', "invalid character '\"' after object key:value pair"],
    ['{,}', "invalid character ',' looking for beginning of object key string"],
    ['[1 2]', "invalid character '2' after array element"],
    ['{"a":tru}', "invalid character '}' in literal true (expecting 'e')"],
    ['{"a":-x}', "invalid character 'x' in numeric literal"],
    ['{"a":1.}', "invalid character '}' after decimal point in numeric literal"],
    ['{"a":"\\q"}', "invalid character 'q' in string escape code"],
    ['{"a":"\n"}', "invalid character '\\n' in string literal"],
    ['{"a":', 'unexpected EOF'],
    ["'", "invalid character '\\'' looking for beginning of value"],
  ])('decodes %j with the decoder error %s', (text, message) => {
    expect(goDecode(text)).toEqual({ kind: 'error', message });
  });

  it('reads the first value and ignores what follows, as json.Decoder does', () => {
    expect(goDecode('{"a":1} trailing garbage')).toEqual({ kind: 'ok', value: { a: 1 } });
  });

  it('writes times as RFC 3339 with trailing zeros of the fraction dropped', () => {
    expect(goTime(Date.UTC(2026, 7, 21, 18, 53, 22, 100))).toBe('2026-08-21T18:53:22.1Z');
    expect(goTime(Date.UTC(2026, 7, 21, 18, 53, 22, 0))).toBe('2026-08-21T18:53:22Z');
  });
});
