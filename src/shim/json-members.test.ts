import { describe, expect, it } from 'vitest';
import { spliceMembers, topLevelMembers } from './json-members.js';

/** Each member's value as text, by key. */
function values(json: string): Record<string, string> | undefined {
  const raw = Buffer.from(json);
  const members = topLevelMembers(raw);
  if (!members) return undefined;
  return Object.fromEntries(
    [...members].map(([key, span]) => [key, raw.toString('utf8', span.start, span.end)]),
  );
}

describe('topLevelMembers', () => {
  it('delimits every kind of value, whatever strings and nesting hold', () => {
    const json =
      ' { "a" : "x\\"}]{\\\\" , "b":[1,{"c":"]"},[]],"\\u0064":{"e":{"f":null}},"g":-1.5e3 ,"h":true,"i":null}\n';
    expect(values(json)).toEqual({
      a: '"x\\"}]{\\\\"',
      b: '[1,{"c":"]"},[]]',
      d: '{"e":{"f":null}}',
      g: '-1.5e3',
      h: 'true',
      i: 'null',
    });
    expect(values('{}')).toEqual({});
  });

  it.each([
    ['not an object', '[1,2]'],
    ['cut short in a string', '{"a":"xyz'],
    ['cut short in a value', '{"a":[1,2'],
    ['missing colon', '{"a" 1}'],
    ['trailing bytes', '{"a":1} x'],
    ['a repeated key', '{"a":1,"a":2}'],
    ['an empty value', '{"a":}'],
  ])('gives up on %s', (_what, json) => {
    expect(values(json)).toBeUndefined();
  });
});

describe('spliceMembers', () => {
  it('replaces the given values and keeps every other byte', () => {
    const raw = Buffer.from('{"a": [1, 2],  "b" :"keep me" , "c":3}');
    const members = topLevelMembers(raw);
    const a = members?.get('a');
    const c = members?.get('c');
    if (!a || !c) throw new Error('members not found');
    const out = spliceMembers(raw, [
      { span: c, json: '"three"' },
      { span: a, json: '[]' },
    ]);
    expect(out.toString()).toBe('{"a": [],  "b" :"keep me" , "c":"three"}');
  });
});
