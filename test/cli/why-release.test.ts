// `hookguard why --release` against the stand-in for kube-apiserver (test/support/fake-apiserver.ts): a release record
// stored as Helm stores it, in a Secret (base64 of Helm's base64 of gzip on the wire) or, under HELM_DRIVER=configmap,
// a ConfigMap; its hook Job is test/golden/why/'s failed-exit-code. The real Helm's records are read in
// test/cluster/why-release.test.ts.
import { gzipSync } from 'node:zlib';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { relocated, seedWhy, whyFixture } from '../support/why-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-why-release-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let server: FakeApiServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const RELEASE = {
  name: 'web',
  namespace: 'shop',
  version: 2,
  info: {
    status: 'failed',
    description: 'Upgrade "web" failed: pre-upgrade hooks failed: job db-migrate failed: BackoffLimitExceeded',
    first_deployed: '2026-11-27T10:00:00Z',
    last_deployed: '2026-11-27T10:42:00Z',
  },
  chart: { metadata: { name: 'web', version: '1.2.0' } },
  hooks: [
    {
      name: 'db-migrate',
      kind: 'Job',
      path: 'web/templates/migrate.yaml',
      manifest: 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: db-migrate\n',
      events: ['pre-upgrade'],
      last_run: { started_at: '2026-11-27T10:42:02Z', completed_at: '2026-11-27T10:43:03Z', phase: 'Failed' },
      delete_policies: ['before-hook-creation'],
    },
    {
      name: 'cache-flush',
      kind: 'Job',
      path: 'web/templates/cache.yaml',
      manifest: 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: cache-flush\n',
      events: ['pre-upgrade'],
      weight: -5,
      last_run: { started_at: '2026-11-27T10:42:00Z', completed_at: '2026-11-27T10:42:01Z', phase: 'Succeeded' },
      delete_policies: ['hook-succeeded'],
    },
  ],
};

/** data.release as Helm writes it: base64 of gzip of the JSON (pkg/storage/driver/util.go encodeRelease). */
const helmEncoded = Buffer.from(gzipSync(JSON.stringify(RELEASE))).toString('base64');

async function cluster(driver: 'Secret' | 'ConfigMap'): Promise<Record<string, string>> {
  server = await new FakeApiServer().start();
  if (driver === 'ConfigMap') server.serve({ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' });
  seedWhy(server, relocated(whyFixture('failed-exit-code'), Date.now(), 'shop'));
  const labels = { owner: 'helm', name: 'web', version: '2', status: 'failed' };
  server.put({
    apiVersion: 'v1',
    kind: driver,
    metadata: { name: 'sh.helm.release.v1.web.v2', namespace: 'shop', labels },
    ...(driver === 'Secret'
      ? { type: 'helm.sh/release.v1', data: { release: Buffer.from(helmEncoded).toString('base64') } }
      : { data: { release: helmEncoded } }),
  });
  const kubeconfig = join(dir, `kubeconfig-${server.port}`);
  writeFileSync(kubeconfig, server.kubeConfig('developer').exportConfig());
  return { KUBECONFIG: kubeconfig };
}

const steady = (text: string) => text.replace(/ since \S+ \([0-9dhms]+\)/g, ' since TIME (AGE)');

describe('hookguard why --release', () => {
  for (const driver of ['Secret', 'ConfigMap'] as const) {
    it(`reads the newest revision from a ${driver}: the release, its hooks as recorded, the Job explained; exit 1`, async () => {
      const env = await cluster(driver);
      const run = await runCommand(['why', '--release', 'shop/web'], undefined, env);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(1);
      expect(steady(run.stdout).split('\n').slice(0, 8)).toEqual([
        'Release shop/web revision 2: Failed (failed) since TIME (AGE)',
        '  revision 2 failed: Upgrade "web" failed: pre-upgrade hooks failed: job db-migrate failed: BackoffLimitExceeded',
        `  chart web-1.2.0, read from ${driver} shop/sh.helm.release.v1.web.v2`,
        '  next step: Fix hook Job db-migrate (below: Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate), then upgrade again; or go back: helm rollback web -n shop.',
        '  hooks, as Helm recorded them:',
        '    Job cache-flush [pre-upgrade; weight -5; delete policy hook-succeeded; last run Succeeded]: Succeeded, then deleted by its delete policy hook-succeeded, as Helm does',
        '    Job db-migrate [pre-upgrade; weight 0; delete policy before-hook-creation; last run Failed]: Helm recorded it as Failed; its Job is Failed',
        '',
      ]);
      expect(steady(run.stdout)).toContain('Job shop/db-migrate: Failed (ContainerFailed) since TIME (AGE)\n');
    });
  }

  it('--output json: the release, and the Job in hooks', async () => {
    const env = await cluster('Secret');
    const run = await runCommand(['why', '--release', 'shop/web', '-o', 'json'], undefined, env);
    const report = JSON.parse(run.stdout) as { releases: Record<string, unknown>[]; hooks: Array<{ name: string }> };
    expect(report.releases).toHaveLength(1);
    expect(report.releases[0]).toMatchObject({
      revision: 2,
      status: 'failed',
      state: 'Failed',
      since: '2026-11-27T10:42:00Z',
    });
    expect(report.hooks.map((hook) => hook.name)).toEqual(['db-migrate']);
  });

  it('-A: the failed release beside the failing hooks, and exit 1', async () => {
    const env = await cluster('Secret');
    // An older revision of another release that failed, since upgraded: history, not shown.
    server!.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'sh.helm.release.v1.api.v1',
        namespace: 'shop',
        labels: { owner: 'helm', name: 'api', version: '1', status: 'failed' },
      },
      data: { release: Buffer.from(helmEncoded).toString('base64') },
    });
    server!.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'sh.helm.release.v1.api.v2',
        namespace: 'shop',
        labels: { owner: 'helm', name: 'api', version: '2', status: 'deployed' },
      },
      data: { release: Buffer.from(helmEncoded).toString('base64') },
    });
    const run = await runCommand(['why', '-A', '-o', 'json'], undefined, env);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout) as { releases: Record<string, unknown>[]; hooks: Array<{ name: string }> };
    expect(report.releases.map((release) => [release.namespace, release.name, release.status])).toEqual([
      ['shop', 'web', 'failed'],
    ]);
    expect(report.hooks.map((hook) => hook.name)).toEqual(['db-migrate']);
  });

  const refused: Array<[string[], string]> = [
    [['why', '-A', '--revision', '2'], 'hookguard why: --revision goes with --release\n'],
    [
      ['why', '--release', 'shop/web', '--revision', '0'],
      'hookguard why: --revision "0" is not a revision number (1, 2, …)\n',
    ],
    [['why', '--release', 'web'], 'hookguard why: --release "web" is not NAMESPACE/NAME\n'],
    [
      ['why', '--release', 'shop/web', '--revision', '3'],
      'hookguard why: Helm release shop/web revision 3 not found (no Secret or ConfigMap sh.helm.release.v1.web.v* labelled owner=helm in shop)\n',
    ],
    [
      ['why', '--release', 'shop/api'],
      'hookguard why: Helm release shop/api not found (no Secret or ConfigMap sh.helm.release.v1.api.v* labelled owner=helm in shop)\n',
    ],
    [['why', '--helmrelease', 'flux-system/web'], 'hookguard why: HelmRelease flux-system/web not found\n'],
  ];
  for (const [args, stderr] of refused) {
    it(args.join(' '), async () => {
      const env = await cluster('Secret');
      const run = await runCommand(args, undefined, env);
      expect(run.stderr).toBe(stderr);
      expect(run.stdout).toBe('');
      expect(run.status).toBe(2);
    });
  }
});
