// truncate (src/core/warnings.ts): what every warning and Event text is cut with, counted in code points as clients
// show them; held to the spread-the-string reading it replaced, over any text, astral and lone surrogates included.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { truncate } from '../../../src/core/warnings.js';

function bySpreading(text: string, limit: number): string {
  const chars = [...text];
  return chars.length <= limit ? text : `${chars.slice(0, limit - 1).join('')}…`;
}

describe('truncate', () => {
  it.each([
    ['short', 10, 'short'],
    ['exactly10!', 10, 'exactly10!'],
    ['eleven char', 10, 'eleven ch…'],
    ['😀😀😀😀😀', 5, '😀😀😀😀😀'],
    ['😀😀😀😀😀😀', 5, '😀😀😀😀…'],
    ['ab', 1, '…'],
  ])('%j cut to %i code points is %j', (text, limit, expected) => {
    expect(truncate(text, limit)).toBe(expected);
  });

  it('answers as the spread of the string into code points did, for any text and limit', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.oneof(fc.constantFrom('😀', '\ud800', '\udc00', 'é'), fc.string({ maxLength: 1 })) }),
        fc.integer({ min: 1, max: 40 }),
        (text, limit) => truncate(text, limit) === bySpreading(text, limit),
      ),
      { numRuns: 2000 },
    );
  });
});
