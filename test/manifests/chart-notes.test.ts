// The chart's NOTES.txt as the real helm prints it after an install: `helm install NAME CHART --dry-run=client`
// renders the release, NOTES included, without a cluster in Helm 4 (helm v4.1.4 pkg/action/install.go
// RunWithContext: with the client dry-run strategy, interactWithServer is false, so no IsReachable, no CRD install,
// the default capabilities), and prints them as `NOTES:\n<notes, trimmed>\n` (pkg/cmd/status.go). The exact text a
// user reads, for the defaults and for the values NOTES.txt branches on. Helm 3 cannot print them without a cluster:
// helm v3.18.0 pkg/action/install.go RunWithContext calls IsReachable unless ClientOnly, which only `helm template`
// sets (and `helm template` prints no NOTES), then asks the cluster's discovery and maps every object, HookGuard
// included; the template engine that renders NOTES.txt is the same text/template and sprig in both majors.
import { describe, expect, it } from 'vitest';
import { helmInstallDryRun, type ChartRender } from '../support/manifests.js';

/** What `helm install RELEASE CHART -n NAMESPACE --dry-run=client` prints under NOTES:, with no cluster at all. */
async function notes(options: ChartRender): Promise<string> {
  const { status, stdout, stderr } = await helmInstallDryRun({ ...options, helm: 4 });
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

describe("the chart's NOTES.txt, as helm 4 prints it after an install", () => {
  it('with the defaults: how to see both webhooks called, the sweep, failing open, a rule turned off, uninstall', async () => {
    expect(await notes({})).toBe(
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
    expect(await notes({ release: 'guard', namespace: 'platform', values })).toBe(
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
    expect(await notes({ values })).toBe(
      `${INSTALLED_WITH_SELF_TEST}
The webhooks fail open (failurePolicy Ignore): hookguard down never blocks the cluster, and a hook admitted
meanwhile is unguarded.
${RULE_OFF('hookguard', 'hookguard')}`,
    );
  });
});
