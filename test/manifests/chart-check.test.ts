// hookguard's own chart under its own render-time check (issue 42 item 6): `hookguard check charts/hookguard` renders
// it with the real helm 4.3.2 and finds nothing to change, deny or warn about, in every format a CI reads.
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { helmAndKubectl } from '../support/k8s-tools.js';

let env: Record<string, string>;
beforeAll(async () => {
  env = { PATH: `${dirname((await helmAndKubectl()).helm)}:${process.env.PATH ?? ''}` };
});

describe('hookguard check charts/hookguard --helm-version 4.3.2', () => {
  it('finds every object allowed and unchanged, with no finding', () => {
    const run = runCli(['check', 'charts/hookguard', '--helm-version', '4.3.2', '--output', 'json'], undefined, env);
    expect([run.status, run.stderr]).toEqual([0, '']);
    const { results } = JSON.parse(run.stdout) as {
      results: { label: string; patch: unknown[]; findings: unknown[] }[];
    };
    expect(results.length).toBeGreaterThan(30);
    expect(results.filter((result) => result.patch.length > 0 || result.findings.length > 0)).toEqual([]);
  });

  it('writes no GitHub annotation, only the summary', () => {
    const run = runCli(['check', 'charts/hookguard', '--helm-version', '4.3.2', '-o', 'github'], undefined, env);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^hookguard check: \d+ object\(s\): 0 would be changed, 0 would be denied\n$/);
  });
});
