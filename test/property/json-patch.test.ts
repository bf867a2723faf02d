// Property: hookguard's own diff (src/core/json-patch.ts compare, which shares the mutated copy's values instead of
// deep-copying them) makes exactly the patch fast-json-patch's compare makes, the oracle the goldens were written
// with, and that patch turns the first document into the second.
import fc from 'fast-check';
import jsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { applyPatch, compare } from '../../src/core/json-patch.js';

// Keys that need escaping in a JSON pointer, array-index lookalikes and __proto__ among ordinary ones.
const key = fc.constantFrom('a', 'b', 'spec', 'x/y', 'm~n', '~1', '0', '1', '__proto__', 'metadata', '');
const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, 1, 'text', ''),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  ),
})).value;
const document = fc.dictionary(key, json, { maxKeys: 6 });

interface Edit {
  path: number[];
  how: number;
  key: string;
  value: unknown;
}

/** The second document as a rule makes it: an edited copy of the first (keys set, deleted, items pushed, spliced). */
const edit: fc.Arbitrary<Edit[]> = fc.array(
  fc.record({ path: fc.array(fc.nat(5), { maxLength: 3 }), how: fc.nat(3), key, value: json }),
  {
    maxLength: 5,
  },
);

function edited(base: Record<string, unknown>, edits: Edit[]): Record<string, unknown> {
  const copy = structuredClone(base);
  for (const { path, how, key: name, value } of edits) {
    let target: unknown = copy;
    for (const step of path) {
      const children = Object.values(target as object).filter((child) => typeof child === 'object' && child !== null);
      if (children.length === 0) break;
      target = children[step % children.length];
    }
    if (Array.isArray(target)) {
      if (how === 0) target.push(value);
      else if (how === 1) target.splice(0, 1);
      else if (target.length > 0) target[how % target.length] = value;
    } else {
      const record = target as Record<string, unknown>;
      if (how === 1) delete record[name];
      else Object.defineProperty(record, name, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy;
}

describe('compare', () => {
  it('makes fast-json-patch’s patch for an edited copy, and the patch reproduces the copy', () => {
    fc.assert(
      fc.property(document, edit, (before, edits) => {
        const after = edited(before, edits);
        const patch = compare(before, after);
        expect(patch).toEqual(jsonPatch.compare(before, after));
        // fast-json-patch refuses to apply a patch that writes __proto__ (the diff itself handles it, as above).
        if (!patch.some((operation) => operation.path.includes('__proto__')))
          expect(applyPatch(structuredClone(before), patch, false, false).newDocument).toEqual(after);
      }),
      { numRuns: 2000 },
    );
  });

  it('makes fast-json-patch’s patch for two unrelated documents', () => {
    fc.assert(
      fc.property(document, document, (before, after) => {
        expect(compare(before, after)).toEqual(jsonPatch.compare(before, after));
      }),
      { numRuns: 2000 },
    );
  });

  it('is empty for equal documents, and for the same one', () => {
    fc.assert(
      fc.property(document, (value) => {
        expect(compare(value, structuredClone(value))).toEqual([]);
        expect(compare(value, value)).toEqual([]);
      }),
    );
  });
});
