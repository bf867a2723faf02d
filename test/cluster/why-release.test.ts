// `hookguard why --release` and `--helmrelease` on releases the real Helm 4.3.2 and 3.21.4 leave behind
// (test/cluster/release-chart): a pre-upgrade hook that fails, one whose image never pulls while Helm waits on it, and
// an install left pending-install by a Helm killed mid-install. The release record is the Secret Helm wrote, read as
// hookguard reads it; the hook objects are what the real Job controller and the kubelet simulator made.
//
// `why --helmrelease` on what the real helm-controller leaves is in flux.test.ts.
//
// One case reads as a ServiceAccount holding only what docs/why.md lists for --release; the others as the admin.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';
import {
  AUDIT_NAMESPACE_LABEL,
  binDir,
  deleteNamespace,
  describeCluster,
  helm3Path,
  helm4Path,
  kubeconfig,
  kubectl,
  kubectlJson,
  newNamespace,
  run,
  waitUntil,
  type Run,
} from './support/cluster.js';
import { whyJson } from './support/why.js';

type Json = Record<string, any>;

const chart = join(repoRoot, 'test', 'cluster', 'release-chart');
/** The least why accepts: a Pod waiting that long is Stuck, a release pending that long with no hook running too. */
const STUCK_AFTER = '30';

let helmHome = '';
const namespaces: string[] = [];
const killers: Array<() => void> = [];

function helmEnv(): Record<string, string> {
  return {
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_DATA_HOME: join(helmHome, 'data'),
  };
}

function helm(helmPath: string, args: string[]): Promise<Run> {
  return run(helmPath, [...args, '--timeout', '120s'], { env: helmEnv() });
}

/** A Helm left running in the background, to be killed: what a CI job cancelled mid-deploy leaves behind. */
function helmInBackground(helmPath: string, args: string[]): () => void {
  const child = spawn(helmPath, [...args, '--timeout', '10m'], {
    env: {
      PATH: `${binDir}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '/root',
      KUBECONFIG: kubeconfig,
      ...helmEnv(),
    },
    stdio: 'ignore',
  });
  const kill = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  killers.push(kill);
  return kill;
}

async function ownNamespace(): Promise<string> {
  // Out of the cluster hookguard's reach: the Jobs are the chart's as written, so what why reads is Helm's alone.
  const ns = await newNamespace('whyrel', { [AUDIT_NAMESPACE_LABEL]: 'why-release' });
  namespaces.push(ns);
  return ns;
}

interface Why {
  status: number;
  json: Json;
  text: string;
}

async function why(args: string[], env: Record<string, string> = {}): Promise<Why> {
  const base = [cliPath, 'why', ...args, '--stuck-after-seconds', STUCK_AFTER];
  const [json, text] = await Promise.all([
    run(process.execPath, [...base, '-o', 'json'], { env }),
    run(process.execPath, base, { env }),
  ]);
  if (json.stdout === '') throw new Error(`why printed nothing (exit ${json.status}): ${json.stderr}`);
  return { status: json.status, json: JSON.parse(json.stdout) as Json, text: text.stdout };
}

/**
 * Polls why --release until both its answers call the release Stuck. The JSON and the text are two processes run
 * side by side; at the stuck-after boundary one may read 29 s and the other 30 s, so each is checked.
 */
function whyOnceStuck(release: string, what: string, seconds: number): Promise<Why> {
  return waitUntil(
    `why to call the release Stuck ${what}`,
    async () => {
      // Polled in this process; then the CLI, text and JSON together.
      const quick = await whyJson(['--release', release, '--stuck-after-seconds', STUCK_AFTER]);
      if (quick.releases?.[0]?.state !== 'Stuck') throw new Error(JSON.stringify(quick.releases?.[0]));
      const answer = await why(['--release', release]);
      if (answer.json.releases?.[0]?.state !== 'Stuck' || !answer.text.includes(': Stuck ('))
        throw new Error(`${JSON.stringify(answer.json.releases?.[0])}\n${answer.text}`);
      return answer;
    },
    seconds,
  );
}

function declared(report: Json, name: string): Json | undefined {
  return (report.releases?.[0]?.hooks as Json[] | undefined)?.find((hook) => hook.name === name);
}

/** Install, then an upgrade whose pre-upgrade hook migrate exits 1: Helm fails the release. */
async function failingUpgrade(helmPath: string, ns: string, release: string): Promise<void> {
  const install = await helm(helmPath, ['install', release, chart, '-n', ns]);
  if (install.status !== 0) throw new Error(`helm install: ${install.stderr}`);
  const upgrade = await helm(helmPath, ['upgrade', release, chart, '-n', ns, '--set', 'migrateExit=1']);
  if (upgrade.status === 0 || !upgrade.stderr.includes('pre-upgrade hooks failed'))
    throw new Error(`helm upgrade did not fail on its hook (${upgrade.status}): ${upgrade.stderr}`);
}

/** What a failed pre-upgrade leaves, read by why: the release Failed, cache deleted by its policy, migrate explained. */
function expectFailedUpgrade(expect: any, report: Why, ns: string, release: string): void {
  expect(report.status).toBe(1);
  expect(report.json.releases?.[0]).toMatchObject({
    namespace: ns,
    name: release,
    revision: 2,
    chart: 'release-hooks-0.1.0',
    status: 'failed',
    state: 'Failed',
    storedIn: `Secret ${ns}/sh.helm.release.v1.${release}.v2`,
  });
  expect(report.json.releases?.[0].description).toContain('pre-upgrade hooks failed');
  expect(report.json.releases?.[0].nextStep).toMatch(
    new RegExp(
      `^Fix hook Job ${release}-migrate \\(below: Read its log: kubectl logs -n ${ns} ${release}-migrate-\\w+ -c migrate\\), then upgrade again; or go back: helm rollback ${release} -n ${ns}\\.$`,
    ),
  );
  expect(declared(report.json, `${release}-cache`)).toMatchObject({
    events: ['pre-upgrade'],
    weight: -5,
    deletePolicies: ['hook-succeeded'],
    lastRunPhase: 'Succeeded',
    summary: 'Succeeded, then deleted by its delete policy hook-succeeded, as Helm does',
  });
  expect(declared(report.json, `${release}-migrate`)).toMatchObject({
    lastRunPhase: 'Failed',
    summary: 'Helm recorded it as Failed; its Job is Failed',
  });
  expect(declared(report.json, `${release}-setup`)?.summary).toMatch(
    /^not run in revision 2; a Job of this name exists from another run \(created .+\): Succeeded$/,
  );
  const migrate = (report.json.hooks as Json[]).find((hook) => hook.name === `${release}-migrate`);
  expect(migrate).toMatchObject({ state: 'Failed', reason: 'ContainerFailed', exitCode: 1 });
  expect(report.text).toContain(`Release ${ns}/${release} revision 2: Failed (failed) since `);
  expect(report.text).toContain(
    `    Job ${release}-cache [pre-upgrade; weight -5; delete policy hook-succeeded; last run Succeeded]: Succeeded, then deleted by its delete policy hook-succeeded, as Helm does`,
  );
}

/**
 * A kubeconfig for a ServiceAccount that holds, in one namespace, only what docs/why.md lists for --release: list and
 * get on secrets (the release records), get and list on jobs and pods, list on events.
 */
async function releaseReaderKubeconfig(ns: string): Promise<string> {
  await kubectl(
    ['apply', '-n', ns, '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'release-reader' } },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'release-reader' },
          rules: [
            { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] },
            { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
            { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list'] },
            { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['list'] },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'release-reader' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'release-reader' },
          subjects: [{ kind: 'ServiceAccount', name: 'release-reader', namespace: ns }],
        },
      ],
    }),
  );
  const token = (await kubectl(['create', 'token', 'release-reader', '-n', ns])).trim();
  const admin = await kubectlJson<Json>(['config', 'view', '--raw', '--minify']);
  const cluster = admin.clusters[0].cluster as Json;
  const path = join(helmHome, `kubeconfig-${ns}`);
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster }],
      users: [{ name: 'release-reader', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'release-reader', namespace: ns } }],
      'current-context': 'c',
    }),
  );
  return path;
}

describeCluster('hookguard why --release on what the real Helm leaves', () => {
  beforeAll(async () => {
    helmHome = await mkdtemp(join(tmpdir(), 'hookguard-why-release-'));
  });
  afterAll(async () => {
    for (const kill of killers) kill();
    for (const ns of namespaces) await deleteNamespace(ns);
    await rm(helmHome, { recursive: true, force: true });
  });

  it.concurrent(
    'Helm 3.21.4: a failing pre-upgrade hook, read with only the RBAC docs/why.md lists',
    async ({ expect }) => {
      const ns = await ownNamespace();
      await failingUpgrade(helm3Path, ns, 'web');
      const reader = await releaseReaderKubeconfig(ns);
      const report = await why(['--release', `${ns}/web`], { KUBECONFIG: reader });
      expectFailedUpgrade(expect, report, ns, 'web');

      // The revision before, asked for by number: a failed upgrade leaves it deployed; its hooks as they ran at install,
      // and the pre-upgrade Job that exists is revision 2's, only named.
      const first = await why(['--release', `${ns}/web`, '--revision', '1']);
      expect(first.status).toBe(0);
      expect(first.json.releases?.[0]).toMatchObject({ revision: 1, status: 'deployed', state: 'Succeeded' });
      expect(declared(first.json, 'web-setup')).toMatchObject({ lastRunPhase: 'Succeeded', events: ['pre-install'] });
      expect(declared(first.json, 'web-migrate')?.summary).toMatch(
        /^not run in revision 1; a Job of this name exists from another run \(created .+\): Failed$/,
      );
      expect((first.json.hooks as Json[]).map((hook) => hook.name)).toEqual(['web-setup']);

      const missing = await run(process.execPath, [cliPath, 'why', '--release', `${ns}/web`, '--revision', '7']);
      expect(missing.status, missing.stderr).toBe(2);
      expect(missing.stderr).toContain(`Helm release ${ns}/web revision 7 not found`);
    },
  );

  it.concurrent('Helm 4.3.2: Helm waits on a pre-upgrade hook whose image never pulls', async ({ expect }) => {
    const ns = await ownNamespace();
    const install = await helm(helm4Path, ['install', 'web', chart, '-n', ns]);
    expect(install.status, install.stderr).toBe(0);
    const kill = helmInBackground(helm4Path, ['upgrade', 'web', chart, '-n', ns, '--set', 'migrateImagePull=fail']);
    const report = await whyOnceStuck(`${ns}/web`, 'on its hook', 120);
    kill();
    expect(report.status).toBe(1);
    expect(report.json.releases?.[0]).toMatchObject({ revision: 2, status: 'pending-upgrade', state: 'Stuck' });
    expect(report.json.releases?.[0].message).toBe(
      'pending-upgrade: Helm waits on hook Job web-migrate, which is Stuck (ImagePullBackOff)',
    );
    expect(report.json.releases?.[0].nextStep).toBe(
      'Check that image registry.example/web/migrate:2.0 exists and that the Pod may pull it (the tag, imagePullSecrets, registry access); Helm fails the release at its --timeout, or if no helm is still at work on it: helm rollback web -n ' +
        `${ns} (back to revision 1; it ends the pending state), then upgrade again.`,
    );
    // Helm records each hook as it starts it; hook-succeeded waits until every pre-upgrade hook has succeeded.
    expect(declared(report.json, 'web-cache')).toMatchObject({
      lastRunPhase: 'Succeeded',
      summary: 'Helm recorded it as Succeeded; its Job is Succeeded',
    });
    expect(declared(report.json, 'web-migrate')).toMatchObject({
      lastRunPhase: 'Running',
      summary: 'Helm recorded it as Running; its Job is Stuck',
    });
  });

  it.concurrent('Helm 3.21.4: an install left pending-install by a Helm killed mid-install', async ({ expect }) => {
    const ns = await ownNamespace();
    const kill = helmInBackground(helm3Path, ['install', 'web', chart, '-n', ns, '--set', 'setupSeconds=15']);
    await waitUntil(
      'the pre-install hook Job',
      async () => (await run(join(binDir, 'kubectl'), ['get', 'job', 'web-setup', '-n', ns])).status === 0,
    );
    kill();
    // While the hook runs, Helm (had it lived) would be waiting on it: Running, exit 0.
    const running = await why(['--release', `${ns}/web`]);
    expect(running.status).toBe(0);
    expect(running.json.releases?.[0]).toMatchObject({ revision: 1, status: 'pending-install', state: 'Running' });
    expect(running.json.releases?.[0].message).toMatch(
      /^pending-install: Helm waits on hook Job web-setup, which is Running/,
    );

    const stuck = await whyOnceStuck(`${ns}/web`, 'with no hook running', 90);
    expect(stuck.status).toBe(1);
    expect(stuck.json.releases?.[0].message).toBe(
      'pending-install with no hook running: the Helm that started it has not finished it, and Helm refuses any other install, upgrade or rollback ("another operation (install/upgrade/rollback) is in progress") until it ends',
    );
    expect(stuck.json.releases?.[0].nextStep).toBe(
      `If no helm is still at work on it: helm uninstall web -n ${ns} (a first install has no revision to roll back to), then install again.`,
    );
    expect(stuck.json.releases?.[0].forSeconds).toBeGreaterThanOrEqual(30);
    expect(declared(stuck.json, 'web-setup')?.summary).toBe('Helm recorded it as Running; its Job is Succeeded');
    expect(stuck.text).toContain(`Release ${ns}/web revision 1: Stuck (pending-install) since `);

    // -A finds it among every release in the cluster, by its Secret's labels.
    const all = await why(['-A']);
    expect(all.status).toBe(1);
    expect((all.json.releases as Json[]).find((release) => release.namespace === ns)).toMatchObject({
      name: 'web',
      status: 'pending-install',
      state: 'Stuck',
    });
  });
});
