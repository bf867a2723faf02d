// Flux's real helm-controller v1.6.2 (test/cluster/support/helm-controller.ts: built from its Go module, started here
// as a process per case, watching only that case's namespace, as a ServiceAccount) installing charts with hooks:
//
// - fluxcd/helm-controller#1562: a hook carrying helm.sh/hook-output-log-policy, as `hookguard check --fix` adds it,
//   crashes it (SIGSEGV) when the hook fails, and the release is left pending-install; restarted, it unlocks the
//   release, upgrades it and crashes the same way on the hook's pre-upgrade run: a crash loop;
// - the same chart through `check --fix --flux-version 1.6.2` gets no annotation, and installs;
// - a failing pre-upgrade hook: the conditions helm-controller writes, and `hookguard why --helmrelease` on them.
//
// Each namespace is out of the cluster hookguard's reach (AUDIT_NAMESPACE_LABEL): what helm-controller creates is the
// chart as rendered, so what is seen is helm-controller's and Helm's alone.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';
import {
  AUDIT_NAMESPACE_LABEL,
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlJson,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import {
  ArtifactServer,
  applyFluxCrds,
  HELM_CONTROLLER_VERSION,
  helmControllerKubeconfig,
  packageChart,
  publishArtifact,
  startHelmController,
  type HelmControllerProcess,
} from './support/helm-controller.js';

type Json = Record<string, any>;

const releaseChart = join(repoRoot, 'test', 'cluster', 'release-chart');

let workDir = '';
const server = new ArtifactServer();
const namespaces: string[] = [];
const controllers: HelmControllerProcess[] = [];

function helmEnv(): Record<string, string> {
  return {
    HELM_CACHE_HOME: join(workDir, 'helm', 'cache'),
    HELM_CONFIG_HOME: join(workDir, 'helm', 'config'),
    HELM_DATA_HOME: join(workDir, 'helm', 'data'),
  };
}

async function ownNamespace(): Promise<string> {
  const ns = await newNamespace('flux', { [AUDIT_NAMESPACE_LABEL]: 'flux' });
  namespaces.push(ns);
  return ns;
}

function started(ns: string, kubeconfigPath: string): HelmControllerProcess {
  const controller = startHelmController(ns, kubeconfigPath);
  controllers.push(controller);
  return controller;
}

/** The chart's pre-install hook as its author wrote it: plain YAML, which `hookguard check --fix` edits in CI. */
function hookJob(exitCode: string, events: string): string {
  return [
    '# The pre-install migration.',
    'apiVersion: batch/v1',
    'kind: Job',
    'metadata:',
    '  name: migrate',
    '  annotations:',
    `    helm.sh/hook: ${events}`,
    'spec:',
    '  backoffLimit: 0',
    '  template:',
    '    metadata:',
    '      annotations:',
    `        test.hookguard.io/exit-code: "${exitCode}"`,
    '    spec:',
    '      restartPolicy: Never',
    '      containers:',
    '        - name: migrate',
    '          image: registry.example/shop/migrate:1.0',
    '          command: ["/bin/migrate", "up"]',
    '',
  ].join('\n');
}

/**
 * A chart `shop` 0.1.0 whose template is the hook passed through `hookguard check --fix` (with the flags given), as a
 * chart's CI would commit it, beside a ConfigMap; packaged, served and published as the ExternalArtifact `shop`.
 */
async function publishFixedChart(ns: string, exitCode: string, events: string, checkFlags: string[]): Promise<string> {
  const dir = join(workDir, ns, 'shop');
  await mkdir(join(dir, 'templates'), { recursive: true });
  const source = join(workDir, ns, 'hook.yaml');
  await writeFile(source, hookJob(exitCode, events));
  const fixed = await run(process.execPath, [cliPath, 'check', '--fix', ...checkFlags, source]);
  if (fixed.status !== 0) throw new Error(`check --fix (${fixed.status}): ${fixed.stderr}`);
  await writeFile(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: shop\nversion: 0.1.0\n');
  await writeFile(join(dir, 'templates', 'migrate.yaml'), fixed.stdout);
  await writeFile(
    join(dir, 'templates', 'settings.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-settings\ndata:\n  color: blue\n',
  );
  await publishArtifact(server, ns, 'shop', await packageChart(dir, join(workDir, ns, 'out'), helmEnv()), '0.1.0');
  return fixed.stdout;
}

async function createHelmRelease(ns: string, name: string, spec: Json): Promise<void> {
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      metadata: { name, namespace: ns },
      spec,
    }),
  );
}

/** The HelmRelease's conditions, without their times. */
async function conditionsOf(ns: string, name: string): Promise<Json[]> {
  const object = await kubectlJson<Json>(['get', 'helmrelease', name, '-n', ns]);
  return ((object.status?.conditions ?? []) as Json[]).map(({ type, status, reason, message }) => ({
    type,
    status,
    reason,
    message,
  }));
}

/** The status Helm wrote on a release record (its Secret's `status` label). */
async function releaseStatus(ns: string, release: string, revision: number): Promise<string> {
  const secret = await kubectlJson<Json>(['get', 'secret', `sh.helm.release.v1.${release}.v${revision}`, '-n', ns]);
  return secret.metadata.labels.status as string;
}

/** How the process ended, or undefined if it still runs after that many seconds. */
function exitWithin(
  controller: HelmControllerProcess,
  seconds: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
  return Promise.race([
    controller.exited,
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), seconds * 1000)),
  ]);
}

interface Why {
  status: number;
  json: Json;
  text: string;
}

async function why(args: string[]): Promise<Why> {
  const base = [cliPath, 'why', ...args, '--stuck-after-seconds', '30'];
  const [json, text] = await Promise.all([run(process.execPath, [...base, '-o', 'json']), run(process.execPath, base)]);
  if (json.stdout === '') throw new Error(`why printed nothing (exit ${json.status}): ${json.stderr}`);
  return { status: json.status, json: JSON.parse(json.stdout) as Json, text: text.stdout };
}

describeCluster(`Flux helm-controller v${HELM_CONTROLLER_VERSION}, for real`, () => {
  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookguard-flux-'));
    await Promise.all([applyFluxCrds(), server.start()]);
  });
  afterAll(async () => {
    await Promise.all(controllers.map((controller) => controller.stop()));
    await server.stop();
    for (const ns of namespaces) await deleteNamespace(ns);
    await rm(workDir, { recursive: true, force: true });
  });

  it.concurrent(
    'fluxcd/helm-controller#1562: a failing hook with the log policy check --fix adds crashes it, pending-install, and again at each restart',
    async ({ expect }) => {
      const ns = await ownNamespace();
      const kubeconfigPath = await helmControllerKubeconfig(workDir, ns);
      // A migration run at install and at upgrade, a common shape; this one fails.
      const fixed = await publishFixedChart(ns, '1', 'pre-install,pre-upgrade', []);
      expect(fixed).toContain(
        '    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-delete-policy: before-hook-creation\n    helm.sh/hook-output-log-policy: hook-failed\n',
      );
      await createHelmRelease(ns, 'shop', { interval: '10m', chartRef: { kind: 'ExternalArtifact', name: 'shop' } });

      const controller = started(ns, kubeconfigPath);
      const exit = await exitWithin(controller, 120);
      const stderr = controller.stderr();
      expect(exit, stderr.slice(-3000)).toEqual({ code: 2, signal: null });
      // Helm's outputLogsByPolicy calls the HookOutputFunc helm-controller never set (helm v4.2.2
      // pkg/kube/client.go:1267) in the goroutine Helm runs the install in: nothing recovers it, the process dies.
      expect(stderr).toContain(
        'panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=',
      );
      expect(stderr).toContain('\nhelm.sh/helm/v4/pkg/kube.(*Client).OutputContainerLogsForPodList(');
      expect(stderr).toContain('\nhelm.sh/helm/v4/pkg/action.(*Configuration).outputLogsByPolicy(');
      expect(stderr).toContain('\ncreated by helm.sh/helm/v4/pkg/action.(*Install).performInstallCtx in goroutine ');
      expect(await releaseStatus(ns, 'shop', 1)).toBe('pending-install');
      // What it wrote before it died, and no more.
      expect(await conditionsOf(ns, 'shop')).toEqual([
        {
          type: 'Reconciling',
          status: 'True',
          reason: 'Progressing',
          message: "Running 'install' action with timeout of 5m0s",
        },
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'Progressing',
          message: "Running 'install' action with timeout of 5m0s",
        },
      ]);

      const report = await why(['--helmrelease', `${ns}/shop`]);
      expect(report.status).toBe(1);
      const entry = report.json.releases?.[0] as Json;
      const job = (report.json.hooks as Json[])[0] as Json;
      const logs = `kubectl logs -n ${ns} ${job.pod} -c migrate`;
      const crashed =
        'pending-install: hook Job migrate failed, and Helm never recorded it: helm-controller most likely crashed (SIGSEGV) writing its logs for helm.sh/hook-output-log-policy: hook-failed (fluxcd/helm-controller#1562)';
      expect(entry).toMatchObject({ revision: 1, status: 'pending-install', state: 'Failed', message: crashed });
      // Durations, "(10s)", differ between two runs of why; the rest is exact.
      expect(report.text.replace(/ \(\d+s\)\n/g, '\n')).toBe(
        [
          `HelmRelease ${ns}/shop: release ${ns}/shop`,
          "  Ready Unknown (Progressing): Running 'install' action with timeout of 5m0s",
          '',
          `Release ${ns}/shop revision 1: Failed (pending-install) since ${entry.since}`,
          `  ${crashed}`,
          `  chart shop-0.1.0, read from Secret ${ns}/sh.helm.release.v1.shop.v1`,
          `  next step: Take helm.sh/hook-output-log-policy off the chart's hooks (hookguard check --fix --flux-version with the helm-controller's version adds none), fix hook Job migrate (below: Read its log: ${logs}), then publish the chart again: restarted, helm-controller marks the release failed and upgrades it, and crashes again on any upgrade hook that still carries the policy and ends as it names.`,
          '  hooks, as Helm recorded them:',
          '    Job migrate [pre-install,pre-upgrade; weight 0; delete policy before-hook-creation; last run Running]: Helm recorded it as Running; its Job is Failed',
          '',
          `Job ${ns}/migrate: Failed (ContainerFailed) since ${job.since}`,
          `  container migrate of Pod ${job.pod} exited with code 1 (Error); Job migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)`,
          `  next step: Read its log: ${logs}`,
          '',
        ].join('\n'),
      );

      // Restarted, it unlocks revision 1 (failed), finds no history of it in the HelmRelease (the process that would
      // have written it died), upgrades, runs the pre-upgrade hook, and crashes the same way: a crash loop, one
      // pending revision more each time.
      const again = started(ns, kubeconfigPath);
      const second = await exitWithin(again, 120);
      expect(second, again.stderr().slice(-3000)).toEqual({ code: 2, signal: null });
      expect(again.stderr()).toContain('release not managed by controller: found existing release in storage');
      expect(again.stderr()).toContain('\nhelm.sh/helm/v4/pkg/kube.(*Client).OutputContainerLogsForPodList(');
      expect(again.stderr()).toContain(
        '\ncreated by helm.sh/helm/v4/pkg/action.(*Upgrade).performUpgrade in goroutine ',
      );
      expect(await releaseStatus(ns, 'shop', 1)).toBe('failed');
      expect(await releaseStatus(ns, 'shop', 2)).toBe('pending-upgrade');
      expect((await conditionsOf(ns, 'shop')).find((c) => c.type === 'Released')).toEqual({
        type: 'Released',
        status: 'False',
        reason: 'PendingRelease',
        message: `Unlocked Helm release ${ns}/shop.v1 with chart shop@0.1.0 in pending-install state`,
      });
      const after = await why(['--helmrelease', `${ns}/shop`]);
      expect(after.json.releases?.[0]).toMatchObject({ revision: 2, status: 'pending-upgrade', state: 'Failed' });
      expect(after.json.releases?.[0].message).toBe(
        'pending-upgrade: hook Job migrate failed, and Helm never recorded it: helm-controller most likely crashed (SIGSEGV) writing its logs for helm.sh/hook-output-log-policy: hook-failed (fluxcd/helm-controller#1562)',
      );
    },
  );

  it.concurrent(
    `the same chart through check --fix --flux-version ${HELM_CONTROLLER_VERSION}: no annotation, and it installs`,
    async ({ expect }) => {
      const ns = await ownNamespace();
      const kubeconfigPath = await helmControllerKubeconfig(workDir, ns);
      const fixed = await publishFixedChart(ns, '0', 'pre-install,pre-upgrade', [
        '--flux-version',
        HELM_CONTROLLER_VERSION,
      ]);
      expect(fixed).toContain(
        '    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-delete-policy: before-hook-creation\nspec:\n',
      );
      expect(fixed).not.toContain('hook-output-log-policy');
      await createHelmRelease(ns, 'shop', { interval: '10m', chartRef: { kind: 'ExternalArtifact', name: 'shop' } });
      const controller = started(ns, kubeconfigPath);
      await waitUntil(
        'the HelmRelease to be Ready',
        async () => {
          const conditions = await conditionsOf(ns, 'shop');
          if (conditions.find((c) => c.type === 'Ready')?.status !== 'True')
            throw new Error(JSON.stringify(conditions));
          return true;
        },
        120,
      );
      const message = `Helm install succeeded for release ${ns}/shop.v1 with chart shop@0.1.0`;
      expect(await conditionsOf(ns, 'shop')).toEqual([
        { type: 'Ready', status: 'True', reason: 'InstallSucceeded', message },
        { type: 'Released', status: 'True', reason: 'InstallSucceeded', message },
      ]);
      expect(await releaseStatus(ns, 'shop', 1)).toBe('deployed');
      const job = await kubectlJson<Json>(['get', 'job', 'migrate', '-n', ns]);
      expect(job.metadata.annotations).toEqual({
        'helm.sh/hook': 'pre-install,pre-upgrade',
        'helm.sh/hook-delete-policy': 'before-hook-creation',
      });
      expect(job.status.succeeded).toBe(1);
      expect(controller.stderr()).not.toContain('panic');
      await controller.stop();
    },
  );

  it.concurrent(
    'a failing pre-upgrade hook: the conditions helm-controller writes, and why --helmrelease on them',
    async ({ expect }) => {
      const ns = await ownNamespace();
      const fluxNs = await ownNamespace();
      const kubeconfigPath = await helmControllerKubeconfig(workDir, fluxNs, [ns]);
      await publishArtifact(
        server,
        fluxNs,
        'web',
        await packageChart(releaseChart, join(workDir, fluxNs, 'out'), helmEnv()),
        '0.1.0',
      );
      // helm-controller's defaults (api/v2 GetReleaseName): with a target namespace and no releaseName, the release is
      // <targetNamespace>-<name>; spec.storageNamespace puts its records beside it.
      const release = `${ns}-web`;
      const spec = {
        interval: '10m',
        chartRef: { kind: 'ExternalArtifact', name: 'web' },
        targetNamespace: ns,
        storageNamespace: ns,
      };
      await createHelmRelease(fluxNs, 'web', spec);
      const controller = started(fluxNs, kubeconfigPath);
      await waitUntil(
        'the install to be Ready',
        async () => (await conditionsOf(fluxNs, 'web')).find((c) => c.type === 'Ready')?.status === 'True',
        120,
      );
      // New values: an upgrade, whose pre-upgrade hook migrate exits 1.
      await createHelmRelease(fluxNs, 'web', { ...spec, values: { migrateExit: '1' } });
      await waitUntil(
        'the upgrade to fail',
        async () => (await conditionsOf(fluxNs, 'web')).find((c) => c.type === 'Stalled')?.status === 'True',
        120,
      );
      const message = `Helm upgrade failed for release ${ns}/${release} with chart release-hooks@0.1.0: pre-upgrade hooks failed: failed early due to stalled resources: [Job/${ns}/${release}-migrate status: 'Failed']`;
      // internal/reconcile/atomic_release.go: with spec.upgrade.remediation.retries at its default 0, Stalled.
      expect(await conditionsOf(fluxNs, 'web')).toEqual([
        { type: 'Stalled', status: 'True', reason: 'RetriesExceeded', message: 'Failed to upgrade after 1 attempt(s)' },
        { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message },
        { type: 'Released', status: 'False', reason: 'UpgradeFailed', message },
      ]);
      expect(await releaseStatus(ns, release, 2)).toBe('failed');
      expect(controller.stderr()).not.toContain('panic');
      await controller.stop();

      const report = await why(['--helmrelease', `${fluxNs}/web`]);
      expect(report.status).toBe(1);
      const entry = report.json.releases?.[0] as Json;
      expect(entry.helmRelease).toEqual({
        namespace: fluxNs,
        name: 'web',
        conditions: [
          { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message },
          { type: 'Released', status: 'False', reason: 'UpgradeFailed', message },
        ],
      });
      const migrate = (report.json.hooks as Json[]).find((hook) => hook.name === `${release}-migrate`) as Json;
      const setup = (entry.hooks as Json[]).find((hook) => hook.name === `${release}-setup`) as Json;
      expect(setup.summary).toMatch(
        /^not run in revision 2; a Job of this name exists from another run \(created \S+\): Succeeded$/,
      );
      const stalled = `pre-upgrade hooks failed: failed early due to stalled resources: [Job/${ns}/${release}-migrate status: 'Failed']`;
      const logs = `kubectl logs -n ${ns} ${migrate.pod} -c migrate`;
      // Durations, "(13s)", differ between two runs of why; the rest is exact.
      expect(report.text.replace(/ \(\d+s\)\n/g, '\n')).toBe(
        [
          `HelmRelease ${fluxNs}/web: release ${ns}/${release}`,
          `  Ready False (UpgradeFailed): ${message}`,
          `  Released False (UpgradeFailed): ${message}`,
          '',
          `Release ${ns}/${release} revision 2: Failed (failed) since ${entry.since}`,
          `  revision 2 failed: Upgrade "${release}" failed: ${stalled}`,
          `  chart release-hooks-0.1.0, read from Secret ${ns}/sh.helm.release.v1.${release}.v2`,
          `  next step: Fix hook Job ${release}-migrate (below: Read its log: ${logs}), then upgrade again; or go back: helm rollback ${release} -n ${ns}.`,
          '  hooks, as Helm recorded them:',
          `    Job ${release}-cache [pre-upgrade; weight -5; delete policy hook-succeeded; last run Succeeded]: Succeeded, then deleted by its delete policy hook-succeeded, as Helm does`,
          `    Job ${release}-migrate [pre-upgrade; weight 0; delete policy before-hook-creation; last run Failed]: Helm recorded it as Failed; its Job is Failed`,
          `    Job ${release}-setup [pre-install; weight 0; delete policy before-hook-creation; last run none]: ${setup.summary}`,
          '',
          `Job ${ns}/${release}-migrate: Failed (ContainerFailed) since ${migrate.since}`,
          `  container migrate of Pod ${migrate.pod} exited with code 1 (Error); Job ${release}-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)`,
          `  next step: Read its log: ${logs}`,
          '',
        ].join('\n'),
      );

      // -A: the failed release, once, with the HelmRelease that is not Ready because of its hook.
      const all = await why(['-A']);
      const found = (all.json.releases as Json[]).filter((item) => item.namespace === ns);
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({
        name: release,
        status: 'failed',
        helmRelease: { namespace: fluxNs, name: 'web' },
      });
    },
  );
});
