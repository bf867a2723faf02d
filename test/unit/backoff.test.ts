import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from '../../src/kube/backoff.js';

const SETTINGS = { initialMs: 100, maxMs: 1000 };

describe('backoffDelayMs', () => {
  it.each([
    [0, 0, 50],
    [0, 0.999999, 100],
    [1, 0, 100],
    [2, 0.5, 300],
    [3, 1, 800],
    [4, 1, 1000],
    [40, 0, 500],
  ])('attempt %i with random %d waits %i ms', (attempt, random, expected) => {
    expect(backoffDelayMs(attempt, SETTINGS, () => random)).toBe(expected);
  });

  it('never waits less than half the ceiling nor more than maxMs', () => {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const delay = backoffDelayMs(attempt, SETTINGS);
      const ceiling = Math.min(1000, 100 * 2 ** attempt);
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
    }
  });
});
