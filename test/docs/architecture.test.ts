// ARCHITECTURE.md stays true: the rules it lists for each shape are the built-in RuleSet's, in its order, every file
// or folder of `src/` it names exists (a bare file name in a row of its layout table, under that row's folder), the
// modules it calls pure by choice are the ones the linter holds to it, and the chart and manifests name no `src/` file
// that is gone.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtInRules } from '../../src/rules/index.js';
import { repoRoot } from '../support/k8s-tools.js';

const architecture = readFileSync(join(repoRoot, 'ARCHITECTURE.md'), 'utf8');
/** `PURE_MODULES` as eslint.config.js declares it (read as text: the config is no TypeScript module). */
const PURE_MODULES = [
  ...(
    /const PURE_MODULES = \[([^\]]*)\]/.exec(readFileSync(join(repoRoot, 'eslint.config.js'), 'utf8'))?.[1] ?? ''
  ).matchAll(/'([^']+)'/g),
].map((match) => match[1]);

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

  it("names in each row of its layout table only files that exist under that row's folder", () => {
    const rows = [...architecture.matchAll(/^\| `(src\/[a-z]+\/)` \|(.*)$/gm)];
    expect(rows.length).toBeGreaterThan(5);
    const missing = rows.flatMap(([, folder, row]) => {
      const files = new Set(filesUnder(join(repoRoot, folder!)).map((file) => basename(file)));
      return [...row!.matchAll(/`([a-z][a-z0-9-]*\.ts)`/g)]
        .map((match) => match[1]!)
        .filter((name) => !files.has(name))
        .map((name) => `${folder}…/${name}`);
    });
    expect(missing).toEqual([]);
  });

  it('calls pure by choice exactly the modules eslint.config.js holds to importing only the core', () => {
    const paragraph = /pure by choice:([\s\S]*?)\n\n/.exec(architecture)?.[1] ?? '';
    const named = [...paragraph.matchAll(/`(src\/[^`]+\.ts)`/g)].map((match) => match[1]);
    expect(named.filter((path) => path !== 'src/sweep/application-lookup.ts').sort()).toEqual([...PURE_MODULES].sort());
  });
});

describe('the chart and the manifests', () => {
  it('name only src/ files that exist', () => {
    const texts = ['charts/hookguard/templates', 'manifests'].flatMap((dir) =>
      filesUnder(join(repoRoot, dir)).map((file) => readFileSync(file, 'utf8')),
    );
    const named = [
      ...new Set(texts.flatMap((text) => [...text.matchAll(/\bsrc\/[A-Za-z0-9/_.-]+\.ts\b/g)].map((m) => m[0]))),
    ];
    expect(named.length).toBeGreaterThan(2);
    expect(named.filter((path) => !existsSync(join(repoRoot, path)))).toEqual([]);
  });
});

/** Every file under `dir`, by its path. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}
