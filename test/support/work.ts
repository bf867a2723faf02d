// Work counted, not timed: a test that asserts linear work compares counts of what two runs did.
import { vi } from 'vitest';

/**
 * The characters String.prototype.slice copies while `run` runs: rebuilding a text per edit, or parsing it again per
 * edit (the yaml package's lexer slices what it reads), shows as a multiple of the text.
 */
export function charactersSliced(run: () => void): number {
  let copied = 0;
  const slice = String.prototype.slice;
  const spy = vi.spyOn(String.prototype, 'slice').mockImplementation(function (this: string, ...range) {
    const piece = slice.apply(this, range);
    copied += piece.length;
    return piece;
  });
  try {
    run();
  } finally {
    spy.mockRestore();
  }
  return copied;
}
