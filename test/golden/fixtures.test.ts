// Golden tests over every real chart manifest in test/fixtures: each is sent as a CREATE, from Argo CD's
// application controller at several versions and from a person running Helm, through the mutating decision and
// then the validating one on what the mutation stored. These decide at admission, as the webhooks do; the scenario
// `helm-render` decides at render time, as `hookguard check` and the Helm post-renderer do for plain Helm. Expected patches and findings live in expected/*.json
// (reviewed by hand; regenerate with `npm run test:update-goldens` and read the diff before committing: `npm test`
// never writes one, and a missing one fails).
import { applyPatch } from '../../src/core/json-patch.js';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { ARGOCD_HOOK_FINALIZER } from '../../src/core/annotations.js';
import type { ClusterFacts } from '../../src/core/cluster.js';
import { withCluster, withNamespaces } from '../../src/core/context.js';
import { decide } from '../../src/core/decide.js';
import type { Stage } from '../../src/core/rule.js';
import type { NamespaceFacts } from '../../src/core/namespaces.js';
import type { AdmissionRequest, KubeObject } from '../../src/core/types.js';
import { loadFixtures } from '../support/fixtures.js';
import { assertValidKubeObject, stripNullFields } from '../support/k8s-schema.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';

const HELM_USER = 'kubernetes-admin';

interface Scenario {
  name: string;
  username: string;
  argocdVersion?: string;
  stage?: Stage;
  /** The labels and annotations the server's namespace watch knows of the namespace `ns`. */
  namespace?: Omit<NamespaceFacts, 'name'>;
  /** Config keys, as flags give them. */
  config?: Record<string, string>;
  /** What API discovery knows of the cluster (`serve` reads GET /apis). */
  cluster?: ClusterFacts;
}

// Helm, and Argo CD on each side of every range in data/advisories.yaml: 2.13.3 and 2.14.2 (no hook finalizer),
// 2.14.3 (the only 2.x with it), 2.14.8 (without it again), 3.1.0 (with it, before gitops-engine#770), 3.3.2 (the
// last minor with the fast-hook race, gitops-engine#770 in, PreDelete hooks from v3.3.0) and 3.4.0 (argo-cd#25916 in).
const scenarios: Scenario[] = [
  { name: 'helm', username: HELM_USER },
  { name: 'helm-render', username: HELM_USER, stage: 'render' },
  // Render time under the Helm the post-renderer plugin names: 4.2.1 waits out --timeout after each deletion by
  // policy (the helm-hook-delete-wait advisory), 4.2.4 does not. An unknown Helm (helm-render) is judged as 4.2.1.
  { name: 'helm-4.2.1-render', username: HELM_USER, stage: 'render', config: { 'helm.version': '4.2.1' } },
  { name: 'helm-4.2.4-render', username: HELM_USER, stage: 'render', config: { 'helm.version': '4.2.4' } },
  ...['2.13.3', '2.14.2', '2.14.3', '2.14.8', '3.1.0', '3.3.2', '3.4.0', '3.5.1'].map((version) => ({
    name: `argocd-${version}`,
    username: ARGOCD_CONTROLLER,
    argocdVersion: version,
  })),
  // The namespace as Istio's and Linkerd's docs label or annotate it for injection.
  {
    name: 'helm-istio-namespace',
    username: HELM_USER,
    namespace: { labels: { 'istio-injection': 'enabled' }, annotations: {} },
  },
  {
    name: 'argocd-3.1.0-linkerd-namespace-exclude',
    username: ARGOCD_CONTROLLER,
    argocdVersion: '3.1.0',
    namespace: { labels: {}, annotations: { 'linkerd.io/inject': 'enabled' } },
    config: { 'rules.meshSidecar.action': 'exclude' },
  },
  // A runAsUser configured (65534, as for a mirrored busybox) on an OpenShift cluster (it serves security.openshift.io),
  // in a namespace just created with no openshift.io/sa.scc.uid-range yet: restricted-v2 assigns user ids, so the
  // guard sets none of its own. And on a plain cluster a copied annotation changes nothing: 65534.
  {
    name: 'argocd-3.1.0-openshift-cluster-fresh-namespace',
    username: ARGOCD_CONTROLLER,
    argocdVersion: '3.1.0',
    config: { 'rules.minRuntime.runAsUser': '65534' },
    cluster: { openshift: true },
  },
  {
    name: 'argocd-3.1.0-plain-cluster-copied-uid-range',
    username: ARGOCD_CONTROLLER,
    argocdVersion: '3.1.0',
    namespace: { labels: {}, annotations: { 'openshift.io/sa.scc.uid-range': '1000680000/10000' } },
    config: { 'rules.minRuntime.runAsUser': '65534' },
    cluster: { openshift: false },
  },
];

/** The Argo CD versions whose gitops-engine adds the hook finalizer: each tag's go.mod pin, read tag by tag. */
const HAS_HOOK_FINALIZER = '2.14.3 || >=3.0.0';

/**
 * Whether Argo CD runs the hook in a sync phase, where it adds its finalizer before applying: its own hook types,
 * else Helm's install and upgrade hooks (gitops-engine pkg/sync/hook/hook.go Types). Delete hooks are created by
 * the application controller without it, and Helm test and rollback hooks are not applied at all.
 */
function argoSyncHook(object: KubeObject): boolean {
  const values = (key: string) => (object.metadata?.annotations?.[key] ?? '').split(',').map((item) => item.trim());
  if (object.metadata?.annotations?.['argocd.argoproj.io/hook'] !== undefined)
    return values('argocd.argoproj.io/hook').some((type) => ['PreSync', 'Sync', 'PostSync', 'SyncFail'].includes(type));
  return values('helm.sh/hook').some((type) =>
    ['pre-install', 'pre-upgrade', 'post-install', 'post-upgrade'].includes(type),
  );
}

/**
 * The object as the API server hands it to a webhook: decoded (so the nulls Helm renders for empty values are
 * gone), in the request's namespace, and as Argo CD applies a sync hook: named when the chart gave only a
 * generateName (Argo CD names it `<generateName><revision>-<phase>-<time>` and keeps the generateName), and
 * carrying the hook finalizer on the versions that add it.
 */
function createRequest(object: KubeObject, scenario: Scenario): AdmissionRequest {
  const decoded = stripNullFields(object) as KubeObject;
  const metadata = (decoded.metadata ??= {});
  metadata.namespace ??= 'ns';
  if (scenario.argocdVersion && metadata.name === undefined && metadata.generateName !== undefined)
    metadata.name = `${metadata.generateName}0d521c6-presync-1763935200`;
  if (scenario.argocdVersion && semver.satisfies(scenario.argocdVersion, HAS_HOOK_FINALIZER) && argoSyncHook(decoded))
    metadata.finalizers = [ARGOCD_HOOK_FINALIZER];
  const [group, version] = decoded.apiVersion === 'batch/v1' ? ['batch', 'v1'] : ['', 'v1'];
  return {
    uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
    kind: { group: group, version: version, kind: decoded.kind as string },
    namespace: metadata.namespace,
    operation: 'CREATE',
    userInfo: { username: scenario.username },
    object: decoded,
  };
}

function run(request: AdmissionRequest, scenario: Scenario) {
  const context = withCluster(
    withNamespaces(
      decisionContext(loadConfig({ overrides: scenario.config }), scenario.argocdVersion, scenario.stage),
      new Map(scenario.namespace ? [['ns', { name: 'ns', ...scenario.namespace }]] : []),
    ),
    scenario.cluster,
  );
  const mutation = decide(request, 'mutate', context);
  const stored = applyPatch(structuredClone(request.object), mutation.patch, true, false).newDocument as KubeObject;
  const validation = decide({ ...request, object: stored }, 'validate', context);
  const again = decide({ ...request, object: stored }, 'mutate', context);
  return { mutation, stored, validation, again };
}

describe('golden: real chart fixtures', () => {
  const fixtures = loadFixtures();

  it('finds the fixtures', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(20);
  });

  describe.each(fixtures)('$file', ({ file, object }) => {
    it('matches the expected patches and findings in every scenario', async () => {
      const expected = Object.fromEntries(
        scenarios.map((scenario) => {
          const { mutation, validation } = run(createRequest(object, scenario), scenario);
          return [
            scenario.name,
            {
              allowed: mutation.allowed && validation.allowed,
              patch: mutation.patch,
              findings: [...mutation.findings, ...validation.findings],
            },
          ];
        }),
      );
      await expect(`${JSON.stringify(expected, null, 2)}\n`).toMatchFileSnapshot(
        `expected/${file.replace(/\.yaml$/, '.json')}`,
      );
    });

    it.each(scenarios)('$name: stays a valid object, and a second pass changes nothing', (scenario) => {
      const { stored, again, validation } = run(createRequest(object, scenario), scenario);
      expect(() => assertValidKubeObject(stored)).not.toThrow();
      expect(again.patch).toEqual([]);
      expect(again.findings.filter((finding) => finding.action !== 'warn')).toEqual([]);
      expect(validation.allowed).toBe(true);
    });
  });
});
