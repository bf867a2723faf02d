// The cache of values worked out from tenants' texts (src/core/bounded-cache.ts): it never holds more than its bounds,
// however many distinct texts arrive.
import { describe, expect, it } from 'vitest';
import { BoundedCache } from '../../src/core/bounded-cache.js';

describe('BoundedCache', () => {
  it('works a value out once per key and hands it back after', () => {
    const cache = new BoundedCache<string>(4, 1000, (value) => value.length);
    let computed = 0;
    const upper = (key: string) => (computed++, key.toUpperCase());
    expect(cache.get('abc', upper)).toBe('ABC');
    expect(cache.get('abc', upper)).toBe('ABC');
    expect(computed).toBe(1);
    expect(cache.held).toEqual({ entries: 1, chars: 6 });
  });

  it('holds at most its entries and its characters, whatever number of distinct keys arrives', () => {
    const cache = new BoundedCache<string>(30, 400, (value) => value.length);
    for (let index = 0; index < 10_000; index++) {
      cache.get(`key-${index}`, (key) => key);
      expect(cache.held.entries).toBeLessThanOrEqual(30);
      expect(cache.held.chars).toBeLessThanOrEqual(400);
    }
    // The last keys hold 2 x 8 characters each: the characters bound the entries below 30.
    expect(cache.held).toEqual({ entries: 25, chars: 400 });
  });

  it('lets the least recently used key go first', () => {
    const cache = new BoundedCache<number>(2, 1000, () => 0);
    let computed = 0;
    const count = () => ++computed;
    cache.get('a', count);
    cache.get('b', count);
    cache.get('a', count); // a is now the most recent: c pushes b out
    cache.get('c', count);
    expect(computed).toBe(3);
    cache.get('a', count);
    expect(computed).toBe(3);
    cache.get('b', count);
    expect(computed).toBe(4);
  });

  it('never keeps a value larger than a sixteenth of its characters', () => {
    const cache = new BoundedCache<string>(8, 160, (value) => value.length);
    const large = 'x'.repeat(6);
    expect(cache.get(large, (key) => key)).toBe(large);
    expect(cache.held).toEqual({ entries: 0, chars: 0 });
  });
});
