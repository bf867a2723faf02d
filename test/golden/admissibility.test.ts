// The guard must never keep a hook from starting (issue 13). Every real chart manifest in test/fixtures goes
// through the real mutating decision at the Argo CD versions that guard it, and the Pod it makes is then admitted
// the way the API server admits Pods (test/support/limit-ranger.ts, test/support/pod-security.ts) under a table of
// realistic LimitRanges: a Pod admitted before is admitted after, its QoS class does not change, Pod Security
// "restricted" passes after wherever it passed before, and the kubelet can start the guard (runAsNonRoot with a
// known non-root user). The figures are in expected/admissibility.md (reviewed by hand; regenerate with -u).
// A Job's Pods are created from its template later, so LimitRanger's defaults reach the guard too; a bare hook Pod
// reaches the webhook after LimitRanger's defaults, so they do not (admitPod's `webhook` runs in between).
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
import { admitPod, type Admission, type LimitRange, type QosClass, type SimPodSpec } from '../support/limit-ranger.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import {
  kubeletRefusal,
  restrictedViolations,
  sccAdmit,
  type PodSpecLike,
  type Scc,
  type UidRange,
} from '../support/pod-security.js';

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

/** LimitRanges as people write them (the API server adds the defaults of SetDefaults_LimitRangeItem). */
const LIMIT_RANGES: ReadonlyArray<[string, LimitRange[]]> = [
  ['none', []],
  [
    'defaults only (500m/512Mi, requests 100m/128Mi)',
    [
      {
        name: 'defaults',
        limits: [
          {
            type: 'Container',
            default: { cpu: '500m', memory: '512Mi' },
            defaultRequest: { cpu: '100m', memory: '128Mi' },
          },
        ],
      },
    ],
  ],
  ['Container min 50m/64Mi', [{ name: 'min', limits: [{ type: 'Container', min: { cpu: '50m', memory: '64Mi' } }] }]],
  [
    'Container min 100m/128Mi with defaults',
    [
      {
        name: 'min-defaults',
        limits: [
          {
            type: 'Container',
            min: { cpu: '100m', memory: '128Mi' },
            default: { cpu: '500m', memory: '512Mi' },
            defaultRequest: { cpu: '100m', memory: '128Mi' },
          },
        ],
      },
    ],
  ],
  ['Container max 1/1Gi', [{ name: 'max', limits: [{ type: 'Container', max: { cpu: '1', memory: '1Gi' } }] }]],
  [
    'Container maxLimitRequestRatio 2',
    [{ name: 'ratio-2', limits: [{ type: 'Container', maxLimitRequestRatio: { cpu: '2', memory: '2' } }] }],
  ],
  [
    'Container maxLimitRequestRatio 1',
    [{ name: 'ratio-1', limits: [{ type: 'Container', maxLimitRequestRatio: { cpu: '1', memory: '1' } }] }],
  ],
  [
    'maxLimitRequestRatio 2 with defaults (200m/256Mi, requests 100m/128Mi)',
    [
      {
        name: 'ratio-defaults',
        limits: [
          {
            type: 'Container',
            maxLimitRequestRatio: { cpu: '2', memory: '2' },
            default: { cpu: '200m', memory: '256Mi' },
            defaultRequest: { cpu: '100m', memory: '128Mi' },
          },
        ],
      },
    ],
  ],
  ['Pod max 2/2Gi', [{ name: 'pod-max', limits: [{ type: 'Pod', max: { cpu: '2', memory: '2Gi' } }] }]],
  ['Pod min 50m/64Mi', [{ name: 'pod-min', limits: [{ type: 'Pod', min: { cpu: '50m', memory: '64Mi' } }] }]],
  [
    // OpenShift Container Platform 4.15 docs, "Restrict resource consumption with limit ranges": core-resource-limits.
    'OpenShift core-resource-limits',
    [
      {
        name: 'core-resource-limits',
        limits: [
          { type: 'Pod', max: { cpu: '2', memory: '1Gi' }, min: { cpu: '200m', memory: '6Mi' } },
          {
            type: 'Container',
            max: { cpu: '2', memory: '1Gi' },
            min: { cpu: '100m', memory: '4Mi' },
            default: { cpu: '300m', memory: '200Mi' },
            defaultRequest: { cpu: '200m', memory: '100Mi' },
            maxLimitRequestRatio: { cpu: '10' },
          },
        ],
      },
    ],
  ],
  [
    // kubernetes/website content/en/examples/admin/resource/cpu-constraints.yaml.
    'Kubernetes docs cpu-min-max-demo-lr (200m..800m)',
    [{ name: 'cpu-min-max-demo-lr', limits: [{ type: 'Container', max: { cpu: '800m' }, min: { cpu: '200m' } }] }],
  ],
  [
    // kubernetes/website content/en/examples/admin/resource/memory-constraints.yaml.
    'Kubernetes docs mem-min-max-demo-lr (500Mi..1Gi)',
    [
      {
        name: 'mem-min-max-demo-lr',
        limits: [{ type: 'Container', max: { memory: '1Gi' }, min: { memory: '500Mi' } }],
      },
    ],
  ],
  [
    // kubernetes/website content/en/examples/admin/resource/limit-mem-cpu-container.yaml.
    'Kubernetes docs limit-mem-cpu-per-container',
    [
      {
        name: 'limit-mem-cpu-per-container',
        limits: [
          {
            type: 'Container',
            max: { cpu: '800m', memory: '1Gi' },
            min: { cpu: '100m', memory: '99Mi' },
            default: { cpu: '700m', memory: '900Mi' },
            defaultRequest: { cpu: '110m', memory: '111Mi' },
          },
        ],
      },
    ],
  ],
];

type Requirements = { requests?: Record<string, string>; limits?: Record<string, string> };
const both = (cpu: string, memory: string): Requirements => ({
  requests: { cpu, memory },
  limits: { cpu, memory },
});

/**
 * The fixtures' own resources are few (15 BestEffort, 7 Burstable alike), so each is also admitted with the
 * resources of these profiles on every container and init container: the real Pod shapes (init containers, several
 * containers, security contexts) with the resource patterns hook Pods come with.
 */
const PROFILES: ReadonlyArray<[string, (spec: SimPodSpec) => void]> = [
  ['Guaranteed 1/1Gi', (spec) => setResources(spec, both('1', '1Gi'))],
  ['Guaranteed 200m/256Mi', (spec) => setResources(spec, both('200m', '256Mi'))],
  ['Guaranteed 20m/32Mi', (spec) => setResources(spec, both('20m', '32Mi'))],
  ['limits only 300m/300Mi', (spec) => setResources(spec, { limits: { cpu: '300m', memory: '300Mi' } })],
  ['requests only 100m/128Mi', (spec) => setResources(spec, { requests: { cpu: '100m', memory: '128Mi' } })],
  [
    'requests 50m/64Mi, limits 500m/512Mi',
    (spec) =>
      setResources(spec, { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '500m', memory: '512Mi' } }),
  ],
  [
    'Guaranteed 200m/256Mi and a native sidecar 50m/64Mi',
    (spec) => {
      setResources(spec, both('200m', '256Mi'));
      const sidecar = { name: 'proxy', image: 'proxy', restartPolicy: 'Always', resources: both('50m', '64Mi') };
      spec.initContainers = [sidecar, ...(spec.initContainers ?? [])];
    },
  ],
];

function setResources(spec: SimPodSpec, resources: Requirements): void {
  for (const entry of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    entry.resources = structuredClone(resources);
  }
}

function withProfile(hook: Hook, profile: (spec: SimPodSpec) => void): Hook {
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
  podSpec: SimPodSpec;
}

function hookOf(file: string, fixture: KubeObject): Hook {
  const object = stripNullFields(fixture) as KubeObject;
  const metadata = (object.metadata ??= {});
  metadata.namespace ??= 'ns';
  const name = metadata.name ?? `${metadata.generateName ?? 'hook-'}x`;
  return { file, name, kind: object.kind!, object, podSpec: specOf(object) };
}

function specOf(object: KubeObject): SimPodSpec {
  const spec = object.spec as Record<string, unknown>;
  return object.kind === 'Job' ? (spec.template as { spec: SimPodSpec }).spec : spec;
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

// A Job's template is mutated once per version; LimitRanger then admits its Pods under each LimitRange.
const templates = new WeakMap<Hook, Map<string, SimPodSpec>>();
function mutatedTemplate(hook: Hook, version: string): SimPodSpec {
  let byVersion = templates.get(hook);
  if (!byVersion) templates.set(hook, (byVersion = new Map()));
  let spec = byVersion.get(version);
  if (!spec) byVersion.set(version, (spec = specOf(mutated(hook.object, version))));
  return spec;
}

interface Outcome {
  before: Admission;
  after: Admission;
}

/** The hook's Pod admitted without and with hookguard, under `limitRanges`. */
function admit(hook: Hook, limitRanges: LimitRange[], version: string): Outcome {
  const before = admitPod(hook.name, hook.podSpec, limitRanges);
  if (hook.kind === 'Job') return { before, after: admitPod(hook.name, mutatedTemplate(hook, version), limitRanges) };
  const after = admitPod(hook.name, hook.podSpec, limitRanges, (pod) =>
    specOf(mutated({ ...hook.object, spec: pod }, version)),
  );
  return { before, after };
}

const guardOf = (pod: SimPodSpec) => pod.initContainers?.find((entry) => entry.name === GUARD_CONTAINER_NAME);

function count<T extends string>(values: T[], order: readonly T[]): string {
  return order.map((value) => values.filter((entry) => entry === value).length).join('/');
}

const QOS_ORDER: readonly QosClass[] = ['Guaranteed', 'Burstable', 'BestEffort'];

/** Checks every fixture under every LimitRange at `version`, and returns the figures as a markdown table. */
function figures(hooks: readonly Hook[], version: string, description: string): string {
  const rows: string[] = [];
  for (const [name, limitRanges] of LIMIT_RANGES) {
    const outcomes = hooks.map((hook) => ({ hook, ...admit(hook, limitRanges, version) }));
    for (const { hook, before, after } of outcomes) {
      const where = `${hook.file} under ${name} at ${version}`;
      if (before.refusal === undefined) expect(after.refusal, where).toBeUndefined();
      expect(after.qos, where).toBe(before.qos);
    }
    const admitted = (key: 'before' | 'after') => outcomes.filter((outcome) => !outcome[key].refusal).length;
    const qos = (key: 'before' | 'after') =>
      count(
        outcomes.map((outcome) => outcome[key].qos),
        QOS_ORDER,
      );
    rows.push(`| ${name} | ${admitted('before')} | ${admitted('after')} | ${qos('before')} | ${qos('after')} |`);
  }
  const restricted = hooks.map((hook) => {
    const { before, after } = admit(hook, [], version);
    const passedBefore = restrictedViolations(before.pod).length === 0;
    if (passedBefore) expect(restrictedViolations(after.pod), `${hook.file} at ${version}`).toEqual([]);
    return { passedBefore, passedAfter: restrictedViolations(after.pod).length === 0 };
  });
  const scc = SCCS.map((name) => {
    const outcomes = hooks.map((hook) => {
      const { before, after } = admit(hook, [], version);
      const admittedBefore = sccAdmit(before.pod, name, NAMESPACE_RANGE);
      const admittedAfter = sccAdmit(after.pod, name, NAMESPACE_RANGE);
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
    '| LimitRange | admitted before | admitted after | QoS before (G/B/BE) | QoS after (G/B/BE) |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `Pod Security restricted: ${restricted.filter((entry) => entry.passedBefore).length} pass before, ` +
      `${restricted.filter((entry) => entry.passedAfter).length} after.`,
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

  it('admitted stays admitted, the QoS class is unchanged, restricted still passes: the figures', async () => {
    // The same pod spec at every version (above): the figures are those of the newest.
    const version = GUARDED_VERSIONS[GUARDED_VERSIONS.length - 1]!;
    const table = [
      '# The guard and the API server: admissibility figures',
      '',
      `Every hook Pod is mutated as Argo CD ${GUARDED_VERSIONS.join(', ')} apply it (the same guard at each) and`,
      'admitted as the API server admits Pods, without and with hookguard. Generated by',
      'test/golden/admissibility.test.ts; G/B/BE counts Guaranteed/Burstable/BestEffort Pods.',
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
    // About 5000 Pod admissions: seconds on a busy machine.
  }, 120_000);

  it('runs the default guard image, whose own numeric non-root user needs no runAsUser anywhere', () => {
    expect(config.rules.minRuntime).toMatchObject({ image: GUARD_IMAGE, runAsUser: null, imageRunsAsNonRoot: true });
  });

  it('lets the kubelet start every guard where no SCC applies: runAsNonRoot only with a non-root user it can verify', () => {
    for (const hook of [...hooks, ...profiled].filter((candidate) => runsInArgoSyncPhase(candidate.object))) {
      const { after } = admit(hook, [], GUARDED_VERSIONS[0]!);
      const guard = guardOf(after.pod);
      expect(guard, hook.file).toBeDefined();
      expect(kubeletRefusal(after.pod as PodSpecLike, guard!, GUARD_IMAGE_USER), hook.file).toBeUndefined();
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
