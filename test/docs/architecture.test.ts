// ARCHITECTURE.md stays true: the rules it lists for each shape are the built-in RuleSet's, in its order, and every
// file or folder of `src/` it names exists.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtInRules } from '../../src/rules/index.js';
import { repoRoot } from '../support/k8s-tools.js';

const architecture = readFileSync(join(repoRoot, 'ARCHITECTURE.md'), 'utf8');

/**
 * The rule ids ARCHITECTURE.md lists after "the rule set's `<shape>`": the backticked kebab-case names in the
 * parenthesis that follows.
 */
function listedRules(shape: 'mutations' | 'updateJudges' | 'createValidators'): string[] {
  const list = new RegExp(`the rule set's \`${shape}\`[^(]*\\(([^)]*)\\)`).exec(architecture)?.[1];
  if (list === undefined) throw new Error(`ARCHITECTURE.md: no list of the rule set's \`${shape}\``);
  return [...list.matchAll(/`([a-z]+(?:-[a-z]+)*)`/g)].map((match) => match[1] as string);
}

describe('ARCHITECTURE.md', () => {
  it.each(['mutations', 'updateJudges', 'createValidators'] as const)(
    "lists the built-in RuleSet's %s, in order",
    (shape) => {
      expect(listedRules(shape)).toEqual(builtInRules[shape].map((rule) => rule.id));
    },
  );

  it('names only files and folders of src/ that exist', () => {
    const named = [...new Set([...architecture.matchAll(/`(src\/[^`\s]*)`/g)].map((match) => match[1] as string))];
    expect(named.length).toBeGreaterThan(50);
    expect(named.filter((path) => !existsSync(join(repoRoot, path)))).toEqual([]);
  });
});
