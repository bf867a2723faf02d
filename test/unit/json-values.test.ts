// cloneJson and jsonEqual replace structuredClone and util.isDeepStrictEqual on the decision's hot path (see the
// bench): for JSON values they must give exactly the same answers.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cloneJson, jsonEqual } from '../../src/core/objects.js';

describe('cloneJson', () => {
  it('copies any JSON value into an equal value that shares nothing with the original', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = cloneJson(value);
        expect(copy).toStrictEqual(structuredClone(value));
        if (typeof value === 'object' && value !== null) expect(copy).not.toBe(value);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps an own __proto__ key a plain key: the copy has Object.prototype and the key as data', () => {
    const parsed = JSON.parse('{"metadata":{"__proto__":{"polluted":true},"name":"x"}}') as {
      metadata: Record<string, unknown>;
    };
    const copy = cloneJson(parsed);
    expect(Object.getPrototypeOf(copy.metadata)).toBe(Object.prototype);
    expect(Object.keys(copy.metadata)).toEqual(['__proto__', 'name']);
    expect(Object.getOwnPropertyDescriptor(copy.metadata, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('jsonEqual', () => {
  it.each([
    [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, true],
    [{ a: 1 }, { a: 1, b: undefined }, false],
    [{ a: [1, 2] }, { a: [2, 1] }, false],
    [[], {}, false],
    [{ a: null }, { a: {} }, false],
    [{ a: '1' }, { a: 1 }, false],
    [{ a: { b: { c: 'x' } } }, { a: { b: { c: 'x' } } }, true],
  ])('jsonEqual(%j, %j) is %s', (a, b, expected) => {
    expect(jsonEqual(a, b)).toBe(expected);
  });

  it('agrees with util.isDeepStrictEqual on JSON values, equal or not', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(jsonEqual(a, b)).toBe(isDeepStrictEqual(a, b));
        expect(jsonEqual(a, cloneJson(a))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
