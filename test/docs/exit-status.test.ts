// The README's table of exit statuses lists every status the CLI exits with (src/errors.ts, EXIT).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
});
