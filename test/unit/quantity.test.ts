// Quantities as kubernetes/apimachinery v0.36.2 pkg/api/resource reads them (quantity.go ParseQuantity, suffix.go);
// the examples are the ones its docs and tests use ("128974848, 129e6, 129M, 123Mi" for memory, "0.1m" rounding).
import { describe, expect, it } from 'vitest';
import { milliValue, parseQuantity } from '../../src/core/quantity.js';

const GIB = 1024n ** 3n;

describe('parseQuantity', () => {
  it.each([
    ['100m', 100_000_000n],
    ['0.5', 500_000_000n],
    ['1', 1_000_000_000n],
    ['.5', 500_000_000n],
    ['1.', 1_000_000_000n],
    ['1.G', 1_000_000_000n * 10n ** 9n],
    ['+2', 2_000_000_000n],
    ['-1', -1_000_000_000n],
    ['0', 0n],
    // Go reads a missing number as 0, whatever the suffix.
    ['Gi', 0n],
    ['16Mi', 16n * 1024n ** 2n * 10n ** 9n],
    ['1Gi', GIB * 10n ** 9n],
    ['1.5Gi', (3n * GIB * 10n ** 9n) / 2n],
    ['1Ei', 1024n ** 6n * 10n ** 9n],
    ['1G', 10n ** 18n],
    ['1k', 10n ** 12n],
    ['1E', 10n ** 27n],
    ['128974848', 128_974_848n * 10n ** 9n],
    ['129e6', 129n * 10n ** 15n],
    ['129M', 129n * 10n ** 15n],
    ['123Mi', 123n * 1024n ** 2n * 10n ** 9n],
    ['12E6', 12n * 10n ** 15n],
    ['5e-3', 5_000_000n],
    ['1n', 1n],
    ['1u', 1000n],
    // Finer than a nano-unit rounds up to one ("if you want some resources, you should get some").
    ['0.5n', 1n],
    ['0.1m', 100_000n],
  ])('%s is %s nano-units', (text, nano) => {
    expect(parseQuantity(text)).toBe(nano);
  });

  it.each(['', 'abc', '1K', '1ki', '1e', '1 Gi', ' 1', '1.5.5', '1Mi5', '1m5', '1e+', '1GiB', '--1', '0x10'])(
    '%j is no quantity',
    (text) => {
      expect(parseQuantity(text)).toBeUndefined();
    },
  );
});

describe('milliValue', () => {
  it.each([
    ['100m', 100n],
    ['1', 1000n],
    ['0.1m', 1n],
    ['1m', 1n],
    ['1n', 1n],
    ['16Mi', 16_777_216_000n],
    ['-1.5m', -1n],
  ])('%s is %s milli-units (rounded up, as LimitRanger compares them)', (text, milli) => {
    expect(milliValue(parseQuantity(text)!)).toBe(milli);
  });
});
