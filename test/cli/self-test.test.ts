// `hookguard self-test` (what the chart's `helm test` Pod runs) and `hookguard chart-hook` refusing bad input before
// they talk to any cluster. Against the real API server: the self-test's exit status in
// test/cluster/self-test.test.ts, delete-webhooks and upgrade-crds in test/cluster/upgrade-crds.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-self-test-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hookguard self-test (helm test)', () => {
  it('says there is no cluster, exit 2', async () => {
    const run = await runCommand(['self-test'], undefined, { HOME: dir });
    expect([run.status, run.stderr]).toEqual([
      2,
      'hookguard self-test: no cluster: set KUBECONFIG, or run in a pod with a service account\n',
    ]);
  });
});

describe('hookguard chart-hook', () => {
  it.each([
    [[], 'hookguard chart-hook: chart-hook takes upgrade-crds or delete-webhooks, got nothing\n'],
    [['upgrade-crds'], 'hookguard chart-hook: upgrade-crds takes the CRD files\n'],
    [['delete-webhooks'], 'hookguard chart-hook: delete-webhooks takes a name\n'],
  ])('%j: %s', async (args, message) => {
    const run = await runCommand(['chart-hook', ...args], undefined, { HOME: dir });
    expect([run.status, run.stderr]).toEqual([2, message]);
  });

  it('refuses a file that is not a CRD before it talks to any cluster', async () => {
    const file = join(dir, 'not-a-crd.yaml');
    writeFileSync(file, 'kind: ConfigMap\n');
    const run = await runCommand(['chart-hook', 'upgrade-crds', file], undefined, { HOME: dir });
    expect([run.status, run.stderr]).toEqual([2, `hookguard chart-hook: ${file}: not a CustomResourceDefinition\n`]);
  });
});
