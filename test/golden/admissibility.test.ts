// The guard must never keep a hook from starting (issue 13), where the real control plane of test/cluster cannot say:
// OpenShift's SecurityContextConstraints admission and the kubelet's runAsNonRoot check (test/support/openshift-scc.ts).
// Every real chart manifest in test/fixtures goes through the real mutating decision at the Argo CD versions that
// guard it; a hook Pod admitted by an SCC before is admitted after, and the kubelet can start the guard (runAsNonRoot
// with a known non-root user). LimitRanges, Pod Security "restricted" and the QoS class are asked of the real API
// server instead: test/cluster/admissibility.test.ts. The figures are in expected/admissibility.md (regenerate with -u).
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { decide } from '../../src/core/decide.js';
import { runsInArgoSyncPhase } from '../../src/core/hook.js';
import { applyPatch } from '../../src/core/json-patch.js';
import type { AdmissionRequest, KubeObject } from '../../src/core/types.js';
import { GUARD_CONTAINER_NAME } from '../../src/rules/min-runtime.js';
import { loadFixtures } from '../support/fixtures.js';
import { stripNullFields } from '../support/k8s-schema.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import { kubeletRefusal, sccAdmit, type PodSpecLike, type Scc, type UidRange } from '../support/openshift-scc.js';
import { PROFILES } from '../support/resource-profiles.js';

const GUARDED_VERSIONS = ['2.14.3', '3.0.0', '3.1.0'];

/**
 * The default guard image and its own USER: distroless builds every nonroot variant with `user = "%d" % uid`, uid
 * NONROOT = 65532, a numeric user the kubelet can verify (GoogleContainerTools/distroless static/static.bzl
 * static_image, common/variables.bzl, at cd080764a); its debug variants add busybox at /busybox.
 */
const GUARD_IMAGE = 'gcr.io/distroless/static-debian12:debug-nonroot';
const GUARD_IMAGE_USER = 65532;

/** OpenShift's default SCCs a hook's service account may be allowed, and a namespace's range as the allocator writes it. */
const SCCS: readonly Scc[] = ['restricted-v2', 'nonroot-v2', 'anyuid'];
const NAMESPACE_RANGE: UidRange = { first: 1000680000, size: 10000 };

function withProfile(hook: Hook, profile: (spec: PodSpecLike) => void): Hook {
  const object = structuredClone(hook.object);
  const podSpec = specOf(object);
  profile(podSpec);
  return { ...hook, object, podSpec };
}

interface Hook {
  file: string;
  name: string;
  kind: string;
  /** The object as it reaches the webhook. */
  object: KubeObject;
  podSpec: PodSpecLike;
}

function hookOf(file: string, fixture: KubeObject): Hook {
  const object = stripNullFields(fixture) as KubeObject;
  const metadata = (object.metadata ??= {});
  metadata.namespace ??= 'ns';
  const name = metadata.name ?? `${metadata.generateName ?? 'hook-'}x`;
  return { file, name, kind: object.kind!, object, podSpec: specOf(object) };
}

function specOf(object: KubeObject): PodSpecLike {
  const spec = object.spec as Record<string, unknown>;
  return object.kind === 'Job' ? (spec.template as { spec: PodSpecLike }).spec : spec;
}

const config = loadConfig();
const contexts = new Map(GUARDED_VERSIONS.map((version) => [version, decisionContext(config, version)]));
const contextFor = (version: string) => contexts.get(version)!;

/** The object as the mutating webhook would have it stored, for a hook Argo CD `version` applies. */
function mutated(object: KubeObject, version: string): KubeObject {
  const request: AdmissionRequest = {
    uid: 'admissibility',
    operation: 'CREATE',
    namespace: object.metadata?.namespace,
    userInfo: { username: ARGOCD_CONTROLLER },
    object,
  };
  const decision = decide(request, 'mutate', contextFor(version));
  return applyPatch(structuredClone(object), decision.patch, true, false).newDocument;
}

interface Outcome {
  before: PodSpecLike;
  after: PodSpecLike;
}

/** The hook's pod spec without and with hookguard's mutation at `version`. */
function admit(hook: Hook, version: string): Outcome {
  return { before: hook.podSpec, after: specOf(mutated(hook.object, version)) };
}

const guardOf = (pod: PodSpecLike) => pod.initContainers?.find((entry) => entry.name === GUARD_CONTAINER_NAME);

/** Checks every fixture under every SCC at `version`, and returns the figures as a markdown table. */
function figures(hooks: readonly Hook[], version: string, description: string): string {
  const scc = SCCS.map((name) => {
    const outcomes = hooks.map((hook) => {
      const { before, after } = admit(hook, version);
      const admittedBefore = sccAdmit(before, name, NAMESPACE_RANGE);
      const admittedAfter = sccAdmit(after, name, NAMESPACE_RANGE);
      const where = `${hook.file} under ${name} at ${version}`;
      if (admittedBefore.violations.length === 0) {
        expect(admittedAfter.violations, where).toEqual([]);
        const guard = guardOf(admittedAfter.pod);
        if (guard) expect(kubeletRefusal(admittedAfter.pod, guard, GUARD_IMAGE_USER), where).toBeUndefined();
      }
      return { before: admittedBefore.violations.length === 0, after: admittedAfter.violations.length === 0 };
    });
    const admitted = (key: 'before' | 'after') => outcomes.filter((outcome) => outcome[key]).length;
    return `| ${name} | ${admitted('before')} | ${admitted('after')} |`;
  });
  return [
    `${hooks.length} ${description}`,
    '',
    `OpenShift SCC admission (namespace range ${NAMESPACE_RANGE.first}/${NAMESPACE_RANGE.size}); every guard admitted`,
    `also starts (the kubelet's runAsNonRoot check, the image's user ${GUARD_IMAGE_USER}):`,
    '',
    '| SCC | admitted before | admitted after |',
    '|---|---|---|',
    ...scc,
  ].join('\n');
}

describe('admissibility: the guard never keeps a hook Pod from starting', () => {
  const hooks = loadFixtures().map(({ file, object }) => hookOf(file, object));

  const profiled = PROFILES.flatMap(([, profile]) => hooks.map((hook) => withProfile(hook, profile)));

  it('guards every sync-phase hook Pod, as rendered and profiled, with the same pod spec at every version that guards', () => {
    for (const hook of [...hooks, ...profiled]) {
      const [first, ...others] = GUARDED_VERSIONS.map((version) => specOf(mutated(hook.object, version)));
      // Argo CD's delete-phase hooks get no hook finalizer, so no guard (argo-cd controller/hook.go executeHooks).
      if (runsInArgoSyncPhase(hook.object)) expect(guardOf(first!), hook.file).toBeDefined();
      else expect(guardOf(first!), hook.file).toBeUndefined();
      for (const other of others) expect(other, hook.file).toEqual(first);
    }
  });

  it('admitted by an SCC stays admitted, and the kubelet starts the guard: the figures', async () => {
    // The same pod spec at every version (above): the figures are those of the newest.
    const version = GUARDED_VERSIONS[GUARDED_VERSIONS.length - 1]!;
    const table = [
      "# The guard and OpenShift's SCC admission: admissibility figures",
      '',
      `Every hook Pod is mutated as Argo CD ${GUARDED_VERSIONS.join(', ')} apply it (the same guard at each) and`,
      "admitted as OpenShift's SCC admission admits Pods, without and with hookguard. Generated by",
      'test/golden/admissibility.test.ts; LimitRanges and Pod Security: test/cluster/admissibility.test.ts.',
      '',
      '## The fixtures as rendered',
      '',
      figures(hooks, version, 'hook Pods from test/fixtures, their resources as rendered.'),
      '## The fixtures with other resources',
      '',
      figures(
        profiled,
        version,
        `hook Pods: the ${hooks.length} fixtures, each with the resources of ${PROFILES.length} profiles on every ` +
          `container (${PROFILES.map(([name]) => name).join('; ')}).`,
      ),
    ].join('\n');
    await expect(table).toMatchFileSnapshot('expected/admissibility.md');
  });

  it('runs the default guard image, whose own numeric non-root user needs no runAsUser anywhere', () => {
    expect(config.rules.minRuntime).toMatchObject({ image: GUARD_IMAGE, runAsUser: null, imageRunsAsNonRoot: true });
  });

  it('lets the kubelet start every guard where no SCC applies: runAsNonRoot only with a non-root user it can verify', () => {
    for (const hook of [...hooks, ...profiled].filter((candidate) => runsInArgoSyncPhase(candidate.object))) {
      const { after } = admit(hook, GUARDED_VERSIONS[0]!);
      const guard = guardOf(after);
      expect(guard, hook.file).toBeDefined();
      expect(kubeletRefusal(after, guard!, GUARD_IMAGE_USER), hook.file).toBeUndefined();
    }
  });

  it('a busybox guard (its user root) with runAsNonRoot and no user would be refused: the check can fail', () => {
    const pod: PodSpecLike = {
      containers: [{ name: 'main' }],
      initContainers: [{ name: GUARD_CONTAINER_NAME, securityContext: { runAsNonRoot: true } }],
    };
    const admitted = sccAdmit(pod, 'anyuid', NAMESPACE_RANGE);
    expect(admitted.violations).toEqual([]);
    expect(kubeletRefusal(admitted.pod, admitted.pod.initContainers![0]!, 0)).toBe(
      'container has runAsNonRoot and image will run as root',
    );
    expect(sccAdmit(pod, 'restricted-v2', NAMESPACE_RANGE).pod.initContainers![0]!.securityContext).toMatchObject({
      runAsUser: 1000680000,
    });
    expect(
      sccAdmit({ containers: [{ name: 'c', securityContext: { runAsUser: 65534 } }] }, 'restricted-v2', NAMESPACE_RANGE)
        .violations,
    ).toEqual(['c: securityContext.runAsUser: Invalid value: 65534: must be in the ranges: [1000680000, 1000689999]']);
    expect(sccAdmit({ containers: [{ name: 'c' }] }, 'nonroot-v2', NAMESPACE_RANGE)).toMatchObject({
      violations: [],
      pod: { containers: [{ securityContext: { runAsNonRoot: true } }] },
    });
  });
});
