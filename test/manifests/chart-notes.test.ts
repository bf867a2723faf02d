// The chart's NOTES.txt as the real helm prints it after an install, `helm install NAME CHART --dry-run=client`
// (printed as `NOTES:\n<notes, trimmed>\n`, helm v4.3.2 pkg/cmd/status.go): the exact text a user reads, for the
// defaults and for the values NOTES.txt branches on, by helm 4.3.2 and helm 3.21.4.
// - Helm 4 needs no cluster (v4.3.2 pkg/action/install.go RunWithContext: with the client dry-run strategy,
//   interactWithServer is false: no IsReachable, no CRD install, the default capabilities).
// - Helm 3 does: v3.21.4 pkg/action/install.go RunWithContext calls IsReachable unless ClientOnly, which only
//   `helm template` sets (and it prints no NOTES), asks discovery for the capabilities, maps every object the chart
//   renders (kube Client.Build) and GETs each (existingResourceConflict). It runs against the stand-in API server
//   (test/support/fake-apiserver.ts), serving the kinds the chart renders and the chart's CRD, as a cluster where the
//   CRD is installed; with --disable-openapi-validation, because the stand-in serves no OpenAPI document.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { CHART_CRD, helmInstallDryRun, type ChartRender } from '../support/manifests.js';

/** Kinds the chart renders that the stand-in does not serve by default (its CRD aside). */
const CHART_KINDS: ReadonlyArray<[apiVersion: string, kind: string, plural: string, clusterScoped?: true]> = [
  ['v1', 'ServiceAccount', 'serviceaccounts'],
  ['v1', 'ConfigMap', 'configmaps'],
  ['v1', 'Service', 'services'],
  ['batch/v1', 'CronJob', 'cronjobs'],
  ['policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets'],
  ['rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', true],
  ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', true],
  ['rbac.authorization.k8s.io/v1', 'Role', 'roles'],
  ['rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings'],
  ['admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy', 'validatingadmissionpolicies', true],
  ['admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding', 'validatingadmissionpolicybindings', true],
  ['monitoring.coreos.com/v1', 'PrometheusRule', 'prometheusrules'],
];

const dir = mkdtempSync(join(tmpdir(), 'hookguard-notes-'));
const cluster = new FakeApiServer();
const kubeconfig = join(dir, 'kubeconfig');
beforeAll(async () => {
  await cluster.start();
  for (const [apiVersion, kind, plural, clusterScoped] of CHART_KINDS)
    cluster.serve({ apiVersion, kind, plural, ...(clusterScoped ? { clusterScoped } : {}) });
  cluster.defineCustomResource(parse(readFileSync(CHART_CRD, 'utf8')) as Record<string, unknown>);
  writeFileSync(kubeconfig, cluster.kubeConfig('admin').exportConfig());
});
afterAll(async () => {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** What `helm install RELEASE CHART -n NAMESPACE --dry-run=client` prints under NOTES:. */
async function notes(helm: 3 | 4, options: ChartRender): Promise<string> {
  const { status, stdout, stderr } =
    helm === 4
      ? await helmInstallDryRun({ ...options, helm })
      : await helmInstallDryRun({ ...options, helm, kubeconfig }, ['--disable-openapi-validation']);
  const [, text] = stdout.split('\nNOTES:\n');
  if (status !== 0 || text === undefined) throw new Error(`helm printed no NOTES (${status}): ${stderr}${stdout}`);
  return text;
}

/** The first line and the self-test's lines, with the defaults. */
const INSTALLED_WITH_SELF_TEST = `hookguard 0.1.0 is installed in namespace hookguard, in enforce mode, discovering each Argo CD and its version.

See it work:
  kubectl wait hookguard/hookguard --for=condition=Ready --timeout=5m
  kubectl get hookguard                      # Ready, Webhook (both webhooks called), Mode, Argo CD versions
  helm test hookguard -n hookguard --logs   # a dry-run probe through both webhooks, now
  kubectl -n hookguard get pods -l app.kubernetes.io/name=hookguard
  kubectl -n hookguard logs deploy/hookguard | grep '"admission decision"'   # one audit line per hook
`;

const RULE_OFF = (release: string, namespace: string) => `
Turn a rule off by its key (hookguard rules lists the ids; the key is the id in camelCase):
  helm upgrade ${release} <chart> -n ${namespace} --reset-then-reuse-values --set config.rules.minRuntime.enabled=false
Uninstall: helm uninstall ${release} -n ${namespace} deletes the webhook configurations first
(a pre-delete hook), so no webhook is left calling a deleted Service.
`;

describe.each([4, 3] as const)("the chart's NOTES.txt, as helm %i prints it after an install", (helm) => {
  it('with the defaults: how to see both webhooks called, the sweep, failing open, a rule turned off, uninstall', async () => {
    expect(await notes(helm, {})).toBe(
      `${INSTALLED_WITH_SELF_TEST}  kubectl -n hookguard get cronjob hookguard-sweep   # removes stuck hook finalizers every "*/5 * * * *"

The webhooks fail open (failurePolicy Ignore): hookguard down never blocks the cluster, and a hook admitted
meanwhile is unguarded. prometheusRule.enabled=true alerts on that.
${RULE_OFF('hookguard', 'hookguard')}`,
    );
  });

  it('in audit mode, for one Argo CD version, self-test off, failing closed: what to look at instead', async () => {
    const values = {
      mode: 'audit',
      argocd: { version: '3.0.1' },
      selfTest: { enabled: false },
      webhook: { failurePolicy: 'Fail' },
      probePort: 9090,
    };
    expect(await notes(helm, { release: 'guard', namespace: 'platform', values })).toBe(
      `hookguard 0.1.0 is installed in namespace platform, in audit mode, for Argo CD 3.0.1.

See it work:
  selfTest.enabled is false: nothing checks that the API server calls hookguard, and helm test has nothing to run.
  Each replica's /metrics (port 9090) counts the calls: hookguard_admission_requests_total.
  kubectl -n platform get pods -l app.kubernetes.io/name=hookguard
  kubectl -n platform logs deploy/hookguard | grep '"admission decision"'   # one audit line per hook
  kubectl -n platform get cronjob hookguard-sweep   # a dry run every "*/5 * * * *"
${RULE_OFF('guard', 'platform')}`,
    );
  });

  it('without the sweep, and with the alerts on: neither the CronJob nor the hint to turn alerts on', async () => {
    const values = { sweep: { enabled: false }, prometheusRule: { enabled: true } };
    expect(await notes(helm, { values })).toBe(
      `${INSTALLED_WITH_SELF_TEST}
The webhooks fail open (failurePolicy Ignore): hookguard down never blocks the cluster, and a hook admitted
meanwhile is unguarded.
${RULE_OFF('hookguard', 'hookguard')}`,
    );
  });
});
