// Reading YAML as Kubernetes does (src/offline/yaml11.ts). The expected values are what the real kubectl v1.34.5
// printed for the same text (`kubectl annotate --local -f FILE k=v -o json`); test/cli/check-input.test.ts runs
// kubectl itself over whole manifests.
import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { kubeValue, PARSE_OPTIONS } from '../../src/offline/yaml11.js';

function read(text: string): unknown {
  return kubeValue(parseDocument(text, PARSE_OPTIONS));
}

describe('scalars as go-yaml v2 resolves them', () => {
  it.each<[string, unknown]>([
    ['0777', 511],
    ['0400', 256],
    ['0o17', 15],
    ['0x1F', 31],
    ['0b101', 5],
    ['-0b101', -5],
    ['1_000', 1000],
    ['+12', 12],
    ['08', 8],
    ['1.5e3', 1500],
    ['1e3', 1000],
    ['.5', 0.5],
    ['1.', 1],
    ['1:20', '1:20'],
    ['2001-12-14', '2001-12-14'],
    ['2001-12-14T21:59:43.10Z', '2001-12-14T21:59:43.10Z'],
    ['1e400', '1e400'],
    ['1e400x', '1e400x'],
    ['1.2.3', '1.2.3'],
    ['y', true],
    ['Yes', true],
    ['ON', true],
    ['true', true],
    ['n', false],
    ['NO', false],
    ['off', false],
    ['False', false],
    ['~', null],
    ['null', null],
    ['', null],
    ['"0777"', '0777'],
    ["'yes'", 'yes'],
    ['!!str 0777', '0777'],
    ['!!int "12"', 12],
    ['!!float 1', 1],
    ['!!binary aGk=', 'hi'],
    ['!custom 0777', '0777'],
    ['|\n  0777\n', '0777\n'],
    ['<<', '<<'],
  ])('%s', (text, expected) => {
    expect(read(`value: ${text}`)).toEqual({ value: expected });
  });

  it('refuses what go-yaml cannot decode or JSON cannot hold', () => {
    expect(() => read('value: !!int abc')).toThrow('cannot decode !!str `abc` as a !!int');
    expect(() => read('value: .inf')).toThrow('.inf cannot be represented in JSON');
  });
});

describe('keys as sigs.k8s.io/yaml makes them strings', () => {
  it('names numbers, booleans and floats as convertToJSONableObject does; a later duplicate wins', () => {
    expect(read('1: a\n0777: b\nyes: c\n1.5: d\n1e6: e\n"on": f\nk: 1\nk: 2\n')).toEqual({
      '1': 'a',
      '511': 'b',
      true: 'c',
      '1.5': 'd',
      '1e+06': 'e',
      on: 'f',
      k: 2,
    });
  });

  it('refuses a null or a collection as a key', () => {
    expect(() => read('~: a\n')).toThrow('unsupported map key: null');
    expect(() => read('? [a]\n: b\n')).toThrow('invalid map key');
  });

  it('sets __proto__ as a key like any other', () => {
    const value = read('__proto__: {polluted: yes}\n') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__']);
  });
});

describe('merge keys with go-yaml v2 precedence', () => {
  it.each<[string, string, unknown]>([
    [
      'a key before a merge is overridden by it',
      'base: &b {a: 1, b: 2}\nm:\n  b: 20\n  <<: *b\n  c: 3\n',
      { a: 1, b: 2, c: 3 },
    ],
    ['a key after a merge overrides it', 'base: &b {a: 1, b: 2}\nm:\n  <<: *b\n  b: 20\n', { a: 1, b: 20 }],
    ['earlier maps of a merged list win', 'x: &x {a: 1}\ny: &y {a: 2, b: 2}\nm:\n  <<: [*x, *y]\n', { a: 1, b: 2 }],
    ['an inline merged map', 'm:\n  <<: {a: 1}\n  b: 2\n', { a: 1, b: 2 }],
    ['a quoted << is a plain key', 'm:\n  "<<": {a: 1}\n', { '<<': { a: 1 } }],
  ])('%s', (_name, text, expected) => {
    expect((read(text) as { m: unknown }).m).toEqual(expected);
  });

  it('refuses a merge of anything but maps', () => {
    expect(() => read('m:\n  <<: [1]\n')).toThrow('map merge requires map or sequence of maps as the value');
  });
});

describe('anchors and aliases', () => {
  it('an alias is the value anchored before it, not a later one of the same name', () => {
    expect(read('a: &x 1\nb: *x\nc: &x 2\nd: *x\n')).toEqual({ a: 1, b: 1, c: 2, d: 2 });
  });

  it('expanding an alias does not define its anchors again', () => {
    expect(read('a: &x {b: &y 1}\nc: &y 2\nd: *x\ne: *y\n')).toEqual({ a: { b: 1 }, c: 2, d: { b: 1 }, e: 2 });
  });

  it('refuses an unknown anchor', () => {
    expect(() => read('a: *nope\n')).toThrow("unknown anchor 'nope' referenced");
  });

  it('refuses a billion laughs as go-yaml does, without expanding it', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level++) {
      const name = String.fromCharCode(97 + level);
      const previous = `*${String.fromCharCode(96 + level)}`;
      levels.push(`${name}: &${name} [${Array(9).fill(previous).join(',')}]`);
    }
    expect(() => read(`${levels.join('\n')}\n`)).toThrow('document contains excessive aliasing');
  });
});
