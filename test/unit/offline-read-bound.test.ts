// A scalar Kubernetes could never store is refused before the yaml package composes it (issue 25 finding 5): the
// composer builds a double-quoted scalar a character at a time, so one 30 MB string cost 15 s and 1.2 GiB to read.
import { describe, expect, it, vi } from 'vitest';
import { Composer } from 'yaml';
import { InputError } from '../../src/errors.js';
import { readDocuments } from '../../src/offline/read.js';
import { charactersSliced } from '../support/work.js';

const configMap = (name: string, value: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  key: ${value}\n`;

describe('readDocuments() and check.maxScalarBytes', () => {
  it('reads a scalar up to the bound, in each of YAML styles', () => {
    const text = 'x'.repeat(1000);
    for (const value of [`"${text}"`, `'${text}'`, `|\n    ${text}`, text]) {
      const [document] = readDocuments(configMap('fits', value), '-', undefined, 1024);
      expect(document?.objects[0]?.object.data).toEqual({ key: value.startsWith('|') ? `${text}\n` : text });
    }
  });

  it('refuses a longer one naming the file, the document, the line and the bound', () => {
    const long = `"${'x'.repeat(1023)}"`;
    const text = `${configMap('first', 'short')}---\n${configMap('second', long)}`;
    expect(() => readDocuments(text, 'chart.yaml', undefined, 1024)).toThrow(
      new InputError(
        'chart.yaml document 2, line 13: a scalar of 1025 characters is longer than 1024 bytes (check.maxScalarBytes); Kubernetes stores no object that large (the API server refuses a request body over 3 MiB, etcd a value over 1.5 MiB)',
      ),
    );
  });

  it('bounds keys, block scalars and flow collections too', () => {
    const long = 'y'.repeat(2000);
    for (const [value, length] of [
      [`|\n    ${long}`, 2005],
      [`[a, "${long}"]`, 2002],
      [`{${long}: 1}`, 2000],
    ] as const)
      expect(() => readDocuments(configMap('x', value), '-', undefined, 1024)).toThrow(
        `stdin document 1, line 6: a scalar of ${length} characters is longer than 1024 bytes`,
      );
    expect(() => readDocuments(`${long}: 1\n`, '-', undefined, 1024)).toThrow(
      /^stdin document 1, line 1: a scalar of 2000 characters/,
    );
  });

  // Counted, not timed: refused, a 4 MiB double-quoted string costs the CST's slices of the text (twice its length),
  // and no value is composed; composing it is what cost 15 s and 1.2 GiB at 30 MB.
  it('refuses a 4 MiB double-quoted string in work linear in it, composing nothing', () => {
    const text = configMap('big', `"${'z'.repeat(4 * 1024 * 1024)}"`);
    const compose = vi.spyOn(Composer.prototype, 'compose');
    let refused: unknown;
    try {
      const sliced = charactersSliced(() => {
        try {
          readDocuments(text, '-');
        } catch (error) {
          refused = error;
        }
      });
      expect(sliced / text.length).toBeLessThan(2.5);
      expect(compose).not.toHaveBeenCalled();
    } finally {
      compose.mockRestore();
    }
    expect(refused).toEqual(
      new InputError(
        `stdin document 1, line 6: a scalar of ${4 * 1024 * 1024 + 2} characters is longer than 3145728 bytes (check.maxScalarBytes); Kubernetes stores no object that large (the API server refuses a request body over 3 MiB, etcd a value over 1.5 MiB)`,
      ),
    );
  });
});
