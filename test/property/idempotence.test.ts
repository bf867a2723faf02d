// Property: for any hook Job or Pod, from any requester and Argo CD version, hookguard applied to its own output
// changes nothing and finds nothing new, and what it stores is still a valid Kubernetes object.
import fc from 'fast-check';
import { applyPatch } from '../../src/core/json-patch.js';
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { withNamespaces } from '../../src/core/context.js';
import { computedPatch, decide } from '../../src/core/decide.js';
import { hasDeletePolicy, toolOf } from '../../src/core/delete-policies.js';
import { readHook } from '../../src/core/hook.js';
import type { Stage } from '../../src/core/rule.js';
import type { AdmissionRequest, KubeObject } from '../../src/core/types.js';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { WINDOWS_NOT_GUARDED } from '../../src/rules/min-runtime.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';

const word = fc.constantFrom(
  'kubectl',
  'delete',
  'get',
  'scale',
  '-n',
  'ns',
  'cm',
  'x',
  '-l',
  'a=b',
  '--ignore-not-found',
  '--wait=false',
  'echo',
  'sleep',
  '1',
);
const script = fc
  .array(
    fc.oneof(
      word,
      fc.constantFrom(' ', ' ', '\n', ' | xargs ', ' && ', '; ', ' || true', "'q d'", '"$(kubectl get po -o name)"'),
    ),
    { maxLength: 14 },
  )
  .map((parts) => parts.join(' '));
const argv = fc.array(word, { minLength: 1, maxLength: 7 });

const quantities = (cpu: string[], memory: string[]) =>
  fc.record({ cpu: fc.constantFrom(...cpu), memory: fc.constantFrom(...memory) }, { requiredKeys: [] });
// Requests at or below limits, as the API server requires; the guard follows them.
const resources = fc.oneof(
  fc.record(
    { requests: quantities(['10m', '100m'], ['16Mi', '64Mi']), limits: quantities(['100m', '1'], ['64Mi', '1Gi']) },
    { requiredKeys: [] },
  ),
  fc.constantFrom({}, { requests: { 'ephemeral-storage': '1Gi' }, limits: { 'ephemeral-storage': '2Gi' } }),
);

const container = fc.record(
  {
    name: fc.constantFrom('main', 'kubectl', 'cleanup'),
    resources,
    securityContext: fc.record(
      { runAsUser: fc.constantFrom(0, 1000), runAsNonRoot: fc.boolean() },
      { requiredKeys: [] },
    ),
    image: fc.constantFrom('bitnami/kubectl:1.32.3', 'registry.k8s.io/kubectl:v1.32.7', 'alpine:3.20', 'busybox'),
    command: fc.oneof(
      argv,
      script.map((text) => ['/bin/sh', '-c', text]),
      fc.constant(['/bin/sh', '-c']),
    ),
    args: fc.oneof(
      argv,
      script.map((text) => [text]),
    ),
  },
  { requiredKeys: ['name', 'image'] },
);

const annotations = fc
  .record(
    {
      'helm.sh/hook': fc.constantFrom(
        'pre-install',
        'post-upgrade',
        'pre-delete',
        'post-delete',
        'test',
        'pre-install,pre-upgrade',
      ),
      'helm.sh/hook-delete-policy': fc.constantFrom('hook-succeeded', 'before-hook-creation,hook-succeeded'),
      'argocd.argoproj.io/hook': fc.constantFrom('PreSync', 'Sync', 'PostSync', 'PostDelete'),
      'argocd.argoproj.io/hook-delete-policy': fc.constantFrom('HookSucceeded', 'BeforeHookCreation'),
      'hookguard.io/min-runtime-seconds': fc.constantFrom('0', '5', '30', 'abc'),
      'argocd.argoproj.io/sync-options': fc.constantFrom('Replace=true', 'Force=true,Replace=true', 'Validate=false'),
    },
    { requiredKeys: [] },
  )
  .filter((value) => value['helm.sh/hook'] !== undefined || value['argocd.argoproj.io/hook'] !== undefined);

// What decides mesh injection, on the pod template and on its namespace (src/rules/mesh-sidecar.ts).
const meshValue = fc.constantFrom('true', 'false', 'enabled', 'disabled', 'ingress', 'default');
const templateMetadata = fc.record(
  {
    labels: fc.dictionary(fc.constantFrom('sidecar.istio.io/inject', 'istio.io/rev', 'app'), meshValue),
    annotations: fc.dictionary(
      fc.constantFrom(
        'sidecar.istio.io/inject',
        'sidecar.istio.io/nativeSidecar',
        'linkerd.io/inject',
        'config.linkerd.io/proxy-enable-native-sidecar',
      ),
      meshValue,
    ),
  },
  { requiredKeys: [] },
);
const namespaceFacts = fc.record({
  name: fc.constant('apps'),
  labels: fc.dictionary(fc.constantFrom('istio-injection', 'istio.io/rev'), fc.constantFrom('enabled', 'canary')),
  annotations: fc.dictionary(fc.constantFrom('linkerd.io/inject'), fc.constantFrom('enabled', 'disabled')),
});
const namespaces = fc.option(
  namespaceFacts.map((facts) => new Map([['apps', facts]])),
  { nil: undefined },
);
const meshSettings = fc.record({
  'rules.meshSidecar.action': fc.constantFrom('warn', 'exclude', 'off'),
  'rules.meshSidecar.nativeSidecars': fc.constantFrom('unknown', 'yes', 'no'),
});

const podSpec = fc.record(
  {
    restartPolicy: fc.constantFrom('Never', 'OnFailure'),
    containers: fc.array(container, { minLength: 1, maxLength: 3 }),
    initContainers: fc.array(container, { maxLength: 2 }),
    activeDeadlineSeconds: fc.integer({ min: 1, max: 600 }),
    securityContext: fc.record(
      { runAsUser: fc.constantFrom(0, 2000), runAsGroup: fc.constantFrom(0, 3000), runAsNonRoot: fc.boolean() },
      { requiredKeys: [] },
    ),
    os: fc.constantFrom({ name: 'linux' }, { name: 'windows' }),
    nodeSelector: fc.constantFrom({ 'kubernetes.io/os': 'linux' }, { 'kubernetes.io/os': 'windows' }),
  },
  { requiredKeys: ['restartPolicy', 'containers'] },
);

const finalizers = fc.subarray(['argocd.argoproj.io/hook-finalizer', 'example.com/keep']);

const job = fc
  .record({
    annotations,
    finalizers,
    podSpec,
    metadata: templateMetadata,
    jobSpec: fc.record(
      {
        backoffLimit: fc.integer({ min: 0, max: 8 }),
        ttlSecondsAfterFinished: fc.integer({ min: 0, max: 120 }),
        activeDeadlineSeconds: fc.integer({ min: 1, max: 900 }),
      },
      { requiredKeys: [] },
    ),
  })
  .map(({ annotations: values, finalizers: held, podSpec: pod, metadata, jobSpec }): KubeObject => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'generated',
      namespace: 'apps',
      annotations: values,
      ...(held.length ? { finalizers: held } : {}),
    },
    spec: { ...jobSpec, template: { metadata, spec: pod } },
  }));

// A bare Pod may say Always, or (in a manifest, before the API server defaults it) nothing.
const pod = fc
  .record({ annotations, podSpec, restartPolicy: fc.constantFrom('Never', 'OnFailure', 'Always', undefined) })
  .map(({ annotations: values, podSpec: spec, restartPolicy }): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'generated', namespace: 'apps', annotations: values },
    spec: { ...spec, ...(restartPolicy === undefined ? { restartPolicy: undefined } : { restartPolicy }) },
  }))
  .map((object) => JSON.parse(JSON.stringify(object)) as KubeObject);

/** A guard with resources in a patch: its command, then its resources. */
const SIZED_GUARD = /"name":"hookguard-min-runtime",[^{]*"command":\[[^\]]*\],"resources":\{/;

const requester = fc.constantFrom('kubernetes-admin', ARGOCD_CONTROLLER);
const version = fc.constantFrom(undefined, '2.13.3', '2.14.0', '2.14.3', '2.14.8', '3.0.16', '3.1.0', '3.3.2', '3.4.0');
const mode = fc.constantFrom('enforce', 'audit');
// The webhooks decide at admission; hookguard check, the Helm post-renderer and the Argo CD plugin at render time.
const stage = fc.constantFrom<Stage>('admission', 'render');

function createRequest(object: KubeObject, username: string): AdmissionRequest {
  return { uid: 'p', operation: 'CREATE', namespace: 'apps', userInfo: { username }, object };
}

describe('idempotence over generated hook objects', () => {
  it('a second pass yields no patch and no new finding, and the result is a valid object', () => {
    const seen = { sizedGuards: 0, windowsUnguarded: 0 };
    fc.assert(
      fc.property(
        fc.oneof(job, pod),
        requester,
        version,
        mode,
        stage,
        namespaces,
        meshSettings,
        (object, username, argocdVersion, chosenMode, atStage, snapshot, mesh) => {
          const context = withNamespaces(
            decisionContext(loadConfig({ overrides: { mode: chosenMode, ...mesh } }), argocdVersion, atStage),
            atStage === 'render' ? undefined : snapshot,
          );
          const request = createRequest(object, username);
          const first = decide(request, 'mutate', context);
          const patch = computedPatch(first);
          const stored = applyPatch(structuredClone(object), patch, true, false).newDocument;
          assertValidKubeObject(stored);
          if (SIZED_GUARD.test(JSON.stringify(patch))) seen.sizedGuards++;
          if (first.findings.some((finding) => finding.message === WINDOWS_NOT_GUARDED)) seen.windowsUnguarded++;

          const second = decide({ ...request, object: stored }, 'mutate', context);
          expect(second.patch).toEqual([]);
          expect(second.withheldPatch).toEqual([]);
          const newFindings = second.findings.filter(
            (finding) =>
              !first.findings.some((earlier) => earlier.rule === finding.rule && earlier.message === finding.message),
          );
          expect(newFindings).toEqual([]);
        },
      ),
      { numRuns: 400, seed: 20261122 },
    );
    // The generators reach the guard's sizing and its Windows exception: the property is not vacuous there.
    expect(seen.sizedGuards).toBeGreaterThan(20);
    expect(seen.windowsUnguarded).toBeGreaterThan(20);
  });
});

describe('delete policies and TTLs over generated hook objects', () => {
  it("admission never writes a delete policy, render time writes one wherever neither tool's was set", () => {
    fc.assert(
      fc.property(fc.oneof(job, pod), requester, version, (object, username, argocdVersion) => {
        const request = createRequest(object, username);
        const admitted = decide(request, 'mutate', decisionContext(loadConfig(), argocdVersion, 'admission'));
        expect(admitted.patch.filter((op) => op.path.includes('hook-delete-policy'))).toEqual([]);

        const context = decisionContext(loadConfig(), argocdVersion, 'render');
        const rendered = decide(request, 'mutate', context);
        const stored = applyPatch(structuredClone(object), rendered.patch, true, false).newDocument;
        const annotations = stored.metadata?.annotations ?? {};
        const chosen = ['helm.sh/hook-delete-policy', 'argocd.argoproj.io/hook-delete-policy'].filter(
          (key) => object.metadata?.annotations?.[key] !== undefined,
        );
        if (chosen.length > 0) {
          // A chart's choice in either tool's annotation is kept (Argo CD merges both): no annotation is added beside
          // it, and the policy its tool reads ends up with before-hook-creation (added to the chart's items).
          const ops = rendered.patch.filter((op) => op.path.includes('hook-delete-policy'));
          expect(ops.every((op) => op.op === 'replace')).toBe(true);
          const hook = readHook(stored, username, context.config.hookDetection)!;
          expect(hasDeletePolicy(stored, toolOf(hook), 'before-hook-creation')).toBe(true);
          return;
        }
        const key =
          annotations['argocd.argoproj.io/hook'] !== undefined
            ? 'argocd.argoproj.io/hook-delete-policy'
            : 'helm.sh/hook-delete-policy';
        expect(annotations[key], key).toBeDefined();
      }),
      { numRuns: 300, seed: 20261123 },
    );
  });

  it('a hook Job leaves either stage with a TTL or a policy its tool reads as delete-on-success (but Helm test hooks)', () => {
    fc.assert(
      fc.property(job, requester, version, stage, (object, username, argocdVersion, chosenStage) => {
        const context = decisionContext(loadConfig(), argocdVersion, chosenStage);
        const decision = decide(createRequest(object, username), 'mutate', context);
        const stored = applyPatch(structuredClone(object), decision.patch, true, false).newDocument;
        const hook = readHook(stored, username, context.config.hookDetection)!;
        const ttl = (stored.spec as { ttlSecondsAfterFinished?: number }).ttlSecondsAfterFinished;
        if (hook.testOnly) {
          // hook-ttl leaves test hooks alone (ttl-floor still raises a short TTL of theirs).
          if ((object.spec as { ttlSecondsAfterFinished?: number }).ttlSecondsAfterFinished === undefined)
            expect(ttl).toBeUndefined();
          return;
        }
        expect(typeof ttl === 'number' || hasDeletePolicy(stored, toolOf(hook), 'hook-succeeded')).toBe(true);
      }),
      { numRuns: 300, seed: 20261124 },
    );
  });
});
