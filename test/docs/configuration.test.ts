// docs/configuration.md's table of keys is the one the declaration (src/config/keys.ts) renders.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withConfigurationTable } from '../../src/config/docs.js';
import { repoRoot } from '../support/k8s-tools.js';

const DOCS = 'docs/configuration.md';

/** Lines of `actual` missing from `expected` and the other way round, said so that the fix is obvious. */
function difference(actual: string, expected: string): string {
  const [have, want] = [actual.split('\n'), expected.split('\n')];
  return [
    ...want.filter((line) => !have.includes(line)).map((line) => `  declared, missing from ${DOCS}: ${line}`),
    ...have.filter((line) => !want.includes(line)).map((line) => `  in ${DOCS}, not declared:       ${line}`),
  ].join('\n');
}

describe(DOCS, () => {
  it('holds the configuration table of src/config/keys.ts', () => {
    const docs = readFileSync(join(repoRoot, DOCS), 'utf8');
    const expected = withConfigurationTable(docs);
    if (docs !== expected) {
      expect.fail(
        `${DOCS}'s configuration table disagrees with src/config/keys.ts:\n${difference(docs, expected)}\n` +
          'Run `npm run docs:config` to rewrite the table from the declaration.',
      );
    }
  });
});
