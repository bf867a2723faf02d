// `hookguard why --release` on the release records the real Helm writes, as text a person reads whole: Helm 4.3.2's
// Secret and Helm 3.21.4's ConfigMap (HELM_DRIVER=configmap) of a release failed on its pre-upgrade hook
// (test/cluster/release-chart), an older failed revision that a later upgrade fixed (history, not listed by -A), and
// the names why refuses. test/cluster/why-release.test.ts reads the same releases as JSON, pending ones and a Flux
// HelmRelease. Each release in a namespace of its own, out of the cluster hookguard's reach (the Jobs as the chart
// writes them), side by side.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';
import {
  AUDIT_NAMESPACE_LABEL,
  binDir,
  deleteNamespace,
  describeCluster,
  helm3Path,
  helm4Path,
  kubectl,
  kubectlJson,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import { helm, jobPods, why, type Json } from './support/why.js';

const chart = join(repoRoot, 'test', 'cluster', 'release-chart');
const helmReleaseCrd = join(repoRoot, 'test', 'cluster', 'flux', 'helm.toolkit.fluxcd.io_helmreleases.yaml');

let home = '';
const namespaces: string[] = [];

async function ownNamespace(): Promise<string> {
  const ns = await newNamespace('whyrel', { [AUDIT_NAMESPACE_LABEL]: 'why-release-cli' });
  namespaces.push(ns);
  return ns;
}

/** Install, then an upgrade whose pre-upgrade hook web-migrate exits 1: Helm fails revision 2. */
async function failingUpgrade(helmPath: string, ns: string, env: Record<string, string> = {}): Promise<void> {
  const install = await helm(helmPath, home, ['install', 'web', chart, '-n', ns], env);
  if (install.status !== 0) throw new Error(`helm install: ${install.stderr}`);
  const upgrade = await helm(helmPath, home, ['upgrade', 'web', chart, '-n', ns, '--set', 'migrateExit=1'], env);
  if (upgrade.status === 0 || !upgrade.stderr.includes('pre-upgrade hooks failed'))
    throw new Error(`helm upgrade did not fail on its hook (${upgrade.status}): ${upgrade.stderr}`);
}

/** What why --release prints of revision 2, stored in STORE (Secret or ConfigMap), Helm's DESCRIPTION quoted. */
async function failedRelease(ns: string, store: string, description: string): Promise<string> {
  const [migrate] = await jobPods(ns, 'web-migrate');
  const pod = migrate!.metadata.name as string;
  const setup = await kubectlJson<Json>(['get', 'job', 'web-setup', '-n', ns]);
  return [
    `Release ${ns}/web revision 2: Failed (failed) since TIME (AGE)`,
    `  revision 2 failed: ${description}`,
    `  chart release-hooks-0.1.0, read from ${store} ${ns}/sh.helm.release.v1.web.v2`,
    `  next step: Fix hook Job web-migrate (below: Read its log: kubectl logs -n ${ns} ${pod} -c migrate), then upgrade again; or go back: helm rollback web -n ${ns}.`,
    '  hooks, as Helm recorded them:',
    '    Job web-cache [pre-upgrade; weight -5; delete policy hook-succeeded; last run Succeeded]: Succeeded, then deleted by its delete policy hook-succeeded, as Helm does',
    '    Job web-migrate [pre-upgrade; weight 0; delete policy before-hook-creation; last run Failed]: Helm recorded it as Failed; its Job is Failed',
    `    Job web-setup [pre-install; weight 0; delete policy before-hook-creation; last run none]: not run in revision 2; a Job of this name exists from another run (created ${setup.metadata.creationTimestamp}): Succeeded`,
    '',
    `Job ${ns}/web-migrate: Failed (ContainerFailed) since TIME (AGE)`,
    `  container migrate of Pod ${pod} exited with code 1 (Error); Job web-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)`,
    `  next step: Read its log: kubectl logs -n ${ns} ${pod} -c migrate`,
    '',
  ].join('\n');
}

/** What `why -A -o json` finds in NS, asked once (the rest of the cluster changes under other test files). */
async function everywhere(ns: string): Promise<{ releases: Json[]; hooks: Json[] }> {
  const answer = await run(process.execPath, [cliPath, 'why', '-A', '-o', 'json']);
  const report = JSON.parse(answer.stdout) as Json;
  if (report.overCap !== 0)
    throw new Error(`why -A looked at only part of the cluster: ${answer.stdout.slice(0, 300)}`);
  return {
    releases: ((report.releases as Json[] | undefined) ?? []).filter((release) => release.namespace === ns),
    hooks: ((report.hooks as Json[] | undefined) ?? []).filter((hook) => hook.namespace === ns),
  };
}

describeCluster('hookguard why --release: the text of what the real Helm records', () => {
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'hookguard-why-release-cli-'));
    // The HelmRelease kind, for --helmrelease to find none of (applied alike by why-release.test.ts).
    await kubectl(['apply', '--server-side', '-f', helmReleaseCrd]);
    await waitUntil(
      'the HelmRelease CRD to be served',
      async () =>
        (await run(join(binDir, 'kubectl'), ['get', 'helmreleases.helm.toolkit.fluxcd.io', '-A'])).status === 0,
    );
  });
  afterAll(async () => {
    for (const ns of namespaces) await deleteNamespace(ns);
    await rm(home, { recursive: true, force: true });
  });

  describe.concurrent('a release failed on its pre-upgrade hook', () => {
    it('Helm 4.3.2, a Secret: exit 1; upgraded again, revision 3 is deployed and -A lists neither', async ({
      expect,
    }) => {
      const ns = await ownNamespace();
      await failingUpgrade(helm4Path, ns);
      const answer = await why(['--release', `${ns}/web`]);
      expect(answer.stderr).toBe('');
      // Helm 4.3.2 words the hook's failure from its kstatus wait (pkg/action/hooks.go, pkg/kube/statuswait.go).
      expect(answer.text).toBe(
        await failedRelease(
          ns,
          'Secret',
          `Upgrade "web" failed: pre-upgrade hooks failed: resource Job/${ns}/web-migrate not ready. status: Failed, message: Job Failed. failed: 1/1`,
        ),
      );
      expect(answer.status).toBe(1);

      // -A lists it among the releases of the whole cluster (other files' too: only this namespace is looked at).
      const failedInAll = await everywhere(ns);
      expect(failedInAll.releases.map((release) => [release.name, release.revision, release.status])).toEqual([
        ['web', 2, 'failed'],
      ]);
      expect(failedInAll.hooks.map((hook) => [hook.name, hook.state])).toEqual([['web-migrate', 'Failed']]);

      const upgrade = await helm(helm4Path, home, ['upgrade', 'web', chart, '-n', ns]);
      expect(upgrade.status, upgrade.stderr).toBe(0);
      const fixed = await why(['--release', `${ns}/web`]);
      expect(fixed.status).toBe(0);
      expect(fixed.json.releases[0]).toMatchObject({ revision: 3, status: 'deployed', state: 'Succeeded' });
      // Revision 2's failed Secret is still there, history: -A judges a release by its newest revision, and the
      // migrate Job revision 3 ran again succeeded.
      expect(
        (await kubectlJson<{ items: Json[] }>(['get', 'secrets', '-n', ns, '-l', 'owner=helm,status=failed'])).items,
      ).toHaveLength(1);
      expect(await everywhere(ns)).toEqual({ releases: [], hooks: [] });
    });

    it('Helm 3.21.4 under HELM_DRIVER=configmap: the same, read from the ConfigMap', async ({ expect }) => {
      const ns = await ownNamespace();
      await failingUpgrade(helm3Path, ns, { HELM_DRIVER: 'configmap' });
      const answer = await why(['--release', `${ns}/web`]);
      expect(answer.stderr).toBe('');
      // Helm 3.21.4 words it from its own wait on the Job, as a multierror: why puts its lines on one.
      expect(answer.text).toBe(
        await failedRelease(
          ns,
          'ConfigMap',
          'Upgrade "web" failed: pre-upgrade hooks failed: 1 error occurred: * job web-migrate failed: BackoffLimitExceeded',
        ),
      );
      expect(answer.status).toBe(1);
    });
  });

  it.concurrent('names that are not there: exit 2, saying where it looked', async ({ expect }) => {
    const ns = await ownNamespace();
    const refused: Array<[string[], string]> = [
      [
        ['--release', `${ns}/api`],
        `hookguard why: Helm release ${ns}/api not found (no Secret or ConfigMap sh.helm.release.v1.api.v* labelled owner=helm in ${ns})\n`,
      ],
      [['--helmrelease', `${ns}/web`], `hookguard why: HelmRelease ${ns}/web not found\n`],
    ];
    const install = await helm(helm4Path, home, ['install', 'web', chart, '-n', ns]);
    expect(install.status, install.stderr).toBe(0);
    refused.push([
      ['--release', `${ns}/web`, '--revision', '3'],
      `hookguard why: Helm release ${ns}/web revision 3 not found (no Secret or ConfigMap sh.helm.release.v1.web.v* labelled owner=helm in ${ns})\n`,
    ]);
    for (const [args, stderr] of refused) {
      const answer = await run(process.execPath, [cliPath, 'why', ...args]);
      expect(answer.stderr, args.join(' ')).toBe(stderr);
      expect(answer.stdout, args.join(' ')).toBe('');
      expect(answer.status, args.join(' ')).toBe(2);
    }
  });
});
