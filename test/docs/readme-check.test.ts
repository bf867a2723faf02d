// The README's `hookguard check` examples print what the README shows: each ```sh block holding one
// `npm run hookguard --silent -- ARGS` line, followed by a plain ``` block, is run as the built CLI with ARGS.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';

const COMMAND = 'npm run hookguard --silent -- ';

function readmeExamples(): { args: string[]; output: string }[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const examples: { args: string[]; output: string }[] = [];
  for (const match of readme.matchAll(/```sh\n(.*)\n```\n\n```\n([\s\S]*?)```/g)) {
    const [, line, output] = match;
    if (line?.startsWith(COMMAND) && output !== undefined)
      examples.push({ args: line.slice(COMMAND.length).split(' '), output });
  }
  return examples;
}

// They run on examples/, which every clone has.
describe('README: the hookguard check examples', () => {
  const examples = readmeExamples();

  it('finds them', () => {
    expect(examples.length).toBeGreaterThanOrEqual(3);
    expect(examples.every(({ args }) => args.slice(1).every((arg) => !arg.includes('../')))).toBe(true);
  });

  it.each(examples.map((example) => [example.args.join(' '), example] as const))(
    '%s prints what the README shows',
    (_line, { args, output }) => {
      const run = runCli(args);
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe(output);
    },
  );
});
