// The chart's NOTES.txt as the real helm prints it after an install, `helm install NAME CHART --dry-run=client`
// (printed as `NOTES:\n<notes, trimmed>\n`, helm v4.3.2 pkg/cmd/status.go): the exact text a user reads, for the
// defaults and for the values NOTES.txt branches on, by helm 4.3.2 and helm 3.21.4, both built from their modules.
// - Helm 4 needs no cluster (v4.3.2 pkg/action/install.go RunWithContext: with the client dry-run strategy,
//   interactWithServer is false: no IsReachable, no CRD install, the default capabilities). It is given the cluster's
//   kubeconfig all the same, as a user's helm would have it.
// - Helm 3 asks the cluster: v3.21.4 pkg/action/install.go RunWithContext calls IsReachable unless ClientOnly, which
//   only `helm template` sets (and it prints no NOTES), asks discovery for the capabilities, maps every object the
//   chart renders (kube Client.Build, validated against the API server's OpenAPI) and GETs each
//   (existingResourceConflict). Here it asks the real control plane, where hookguard is installed as release
//   `hookguard` in namespace `hookguard` by kubectl, not Helm: its objects carry no Helm ownership, so helm 3 refuses
//   them ("invalid ownership metadata") unless it is told to take them over (`--take-ownership`, which a dry run
//   never writes). A PrometheusRule (prometheusRule.enabled) needs its CRD, as on a cluster with the Prometheus
//   operator: the test creates a minimal one if none is there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmInstallDryRun, type ChartRender } from '../support/manifests.js';
import { describeCluster, kubeconfig, kubectlPath, run } from './support/cluster.js';

/** The Prometheus operator's CRD for PrometheusRule, cut to what Helm needs to map the kind: its group, names, scope. */
const PROMETHEUS_RULE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'prometheusrules.monitoring.coreos.com' },
  spec: {
    group: 'monitoring.coreos.com',
    names: {
      kind: 'PrometheusRule',
      listKind: 'PrometheusRuleList',
      plural: 'prometheusrules',
      singular: 'prometheusrule',
    },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

/** What `helm install RELEASE CHART -n NAMESPACE --dry-run=client` prints under NOTES:. */
async function notes(helm: 3 | 4, options: ChartRender): Promise<string> {
  const { status, stdout, stderr } = await helmInstallDryRun(
    { ...options, helm, kubeconfig },
    helm === 3 ? ['--take-ownership'] : [],
  );
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

describeCluster("the chart's NOTES.txt, as the real helm prints it after an install", () => {
  let createdCrd = false;
  beforeAll(async () => {
    const crd = `crd/${PROMETHEUS_RULE_CRD.metadata.name}`;
    if ((await run(kubectlPath, ['get', crd])).status === 0) return;
    const created = await run(kubectlPath, ['create', '-f', '-'], { input: JSON.stringify(PROMETHEUS_RULE_CRD) });
    // Another test may have created it meanwhile.
    if (created.status !== 0 && !/AlreadyExists/.test(created.stderr)) throw new Error(created.stderr);
    createdCrd = created.status === 0;
    const established = await run(kubectlPath, ['wait', '--for=condition=Established', crd, '--timeout=60s']);
    if (established.status !== 0) throw new Error(established.stderr);
  });
  afterAll(async () => {
    if (createdCrd) await run(kubectlPath, ['delete', `crd/${PROMETHEUS_RULE_CRD.metadata.name}`, '--wait=false']);
  });

  describe.concurrent.each([4, 3] as const)('helm %i', (helm) => {
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
});
