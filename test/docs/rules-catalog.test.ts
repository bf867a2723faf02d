// docs/rules.md's rule catalog is the catalog hookguard ships (catalogOf(builtInRules), what `hookguard rules`
// prints): every rule once, in order, with its webhook and operation and where it takes effect, and what the
// admission policies of `hookguard policies` cover of it (src/policies/coverage.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ruleCoverage } from '../../src/policies/coverage.js';
import { builtInRules, catalogOf, describeStages } from '../../src/rules/index.js';
import { repoRoot } from '../support/k8s-tools.js';

function catalogTable(): string[][] {
  const docs = readFileSync(join(repoRoot, 'docs', 'rules.md'), 'utf8');
  const section = docs.slice(docs.indexOf('\n## The rule catalog\n'));
  const header =
    '| id | webhook | takes effect at | when | what it does | [without a webhook](policies.md) |\n|---|---|---|---|---|---|\n';
  const start = section.indexOf(header);
  if (start < 0) throw new Error('docs/rules.md: no catalog table with the expected header');
  const rows = /^((?:\|.*\n)+)/.exec(section.slice(start + header.length))?.[1] ?? '';
  // Cells are split on pipes that are not escaped (`a\|b` stays one cell).
  return rows
    .trimEnd()
    .split('\n')
    .map((row) =>
      row
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

describe('docs/rules.md', () => {
  it('lists every rule of the catalog once, in order, with its webhook, operation and stages', () => {
    expect(catalogTable().map(([id, webhook, stages]) => [id, webhook, stages])).toEqual(
      catalogOf(builtInRules).map((rule) => [
        `\`${rule.id}\``,
        `${rule.webhook}, ${rule.operation}`,
        describeStages(rule.stages),
      ]),
    );
  });

  it('says for every rule what hookguard policies --explain says: policy, partial, webhook only or render time', () => {
    expect(catalogTable().map((cells) => cells[5])).toEqual(ruleCoverage().map((rule) => rule.coverage));
  });
});
