// The README's table of exit statuses lists every status the CLI exits with (src/errors.ts, EXIT).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMAND_NAMES, runHookguard } from '../../src/cli/hookguard.js';
import { EXIT } from '../../src/errors.js';
import { repoRoot } from '../support/k8s-tools.js';

describe('README.md', () => {
  it('lists every exit status of the CLI, once each', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Exit status\n'));
    const table = /\n\| status \| meaning \|\n\|---\|---\|\n((?:\|.*\n)+)/.exec(section)?.[1] ?? '';
    const listed = [...table.matchAll(/^\| (\d+) \|/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual([...new Set(Object.values(EXIT))].sort());
  });

  it('names, for status 1, every command hookguard --help says exits 1 (why among them)', async () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const row = /\n\| 1 \| (.*) \|\n/.exec(readme.slice(readme.indexOf('\n## Exit status\n')))?.[1] ?? '';
    let help = '';
    await runHookguard(['--help'], {
      stdout: (text) => (help += text),
      stderr: () => undefined,
      readStdin: () => Promise.resolve(''),
      env: {},
    });
    const statusOne = /\n {2}1 {2}((?:.*\n)(?: {5}.*\n)*)/.exec(help)?.[1] ?? '';
    const named = COMMAND_NAMES.filter((name) => new RegExp(`(^|; |\\s)${name}:`).test(statusOne));
    expect(named).toContain('why');
    for (const name of named) expect(row).toContain(`\`${name}\`:`);
  });
});
