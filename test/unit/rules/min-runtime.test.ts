import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import type { ClusterFacts } from '../../../src/core/cluster.js';
import type { RuleContext } from '../../../src/core/rule.js';
import type { Container, JobSpec, KubeObject, PodSpec } from '../../../src/core/types.js';
import {
  guardContainer,
  GUARD_CONTAINER_NAME,
  minRuntime,
  WINDOWS_NOT_GUARDED,
} from '../../../src/rules/min-runtime.js';
import { contextFor, DEFAULT_GUARD_CONTAINER, hookJob, hookPod } from '../../support/objects.js';

const settings = loadConfig().rules.minRuntime;
const argo = { 'argocd.argoproj.io/hook': 'PreSync' };

function initContainersOf(spec: unknown): Container[] | undefined {
  return (spec as JobSpec).template?.spec?.initContainers;
}

function podSpecOf(job: KubeObject): PodSpec {
  return (job.spec as JobSpec).template!.spec!;
}

/** An Argo CD hook Job whose pod spec is `podSpec` over hookJob()'s, with containers of the given resources. */
function jobWith(podSpec: Partial<PodSpec>, ...resources: unknown[]): KubeObject {
  const job = hookJob(argo);
  const spec = podSpecOf(job);
  Object.assign(spec, podSpec);
  if (resources.length > 0) {
    spec.containers = resources.map((entry, index) => ({
      name: `c${index}`,
      image: 'alpine:3.20',
      ...(entry === undefined ? {} : { resources: entry }),
    }));
  }
  return job;
}

function guardOf(job: KubeObject, context: RuleContext = contextFor(job)): Container | undefined {
  minRuntime.mutate(job, context);
  return initContainersOf(job.spec)?.find((container) => container.name === GUARD_CONTAINER_NAME);
}

describe('min-runtime', () => {
  it('adds a restricted wait as the last init container; a BestEffort Pod gets a guard without resources', () => {
    const job = hookJob(argo);
    const report = minRuntime.mutate(job, contextFor(job));
    expect(initContainersOf(job.spec)).toEqual([DEFAULT_GUARD_CONTAINER]);
    expect(report).toEqual({
      mutations: [
        `added init container ${GUARD_CONTAINER_NAME} waiting 10s: a hook that ends before Argo CD sees it run keeps Argo CD's hook finalizer, and the sync waits on it`,
      ],
      warnings: [],
    });
  });

  it('appends after the chart’s own init containers', () => {
    const job = hookJob(argo);
    const spec = job.spec as JobSpec;
    spec.template!.spec!.initContainers = [{ name: 'probe', image: 'curl' }];
    minRuntime.mutate(job, contextFor(job));
    expect(initContainersOf(job.spec)?.map((container) => container.name)).toEqual(['probe', GUARD_CONTAINER_NAME]);
  });

  it.each([
    ['30', 30, []],
    [' 45 ', 45, []],
    ['abc', 10, ['hookguard.io/min-runtime-seconds="abc" is not an integer 0..3600; using 10']],
    ['-5', 10, ['hookguard.io/min-runtime-seconds="-5" is not an integer 0..3600; using 10']],
    ['99999', 10, ['hookguard.io/min-runtime-seconds="99999" is not an integer 0..3600; using 10']],
  ])('annotation %j waits %i seconds', (value, seconds, warnings) => {
    const job = hookJob({ ...argo, 'hookguard.io/min-runtime-seconds': value });
    const report = minRuntime.mutate(job, contextFor(job));
    expect(initContainersOf(job.spec)?.[0]?.command).toEqual(['/busybox/sleep', String(seconds)]);
    expect(report.warnings).toEqual(warnings);
  });

  it('reports, and does not change, an annotation of 0', () => {
    const job = hookJob({ ...argo, 'hookguard.io/min-runtime-seconds': '0' });
    const before = structuredClone(job);
    const report = minRuntime.mutate(job, contextFor(job));
    expect(job).toEqual(before);
    expect(report.unmet).toBe('hookguard.io/min-runtime-seconds is 0');
  });

  // The guard's wait counts against the chart's deadline (the Job's from its start, the Pod's from the Pod's): each
  // deadline grows by exactly the wait, so a hook with 60 s that runs 55 s still finishes (issue 27, item 12).
  it.each<[string, KubeObject, string[], number | undefined, number | undefined]>([
    [
      'a Job deadline of 60',
      hookJob(argo, { activeDeadlineSeconds: 60 }),
      [
        "raised spec.activeDeadlineSeconds from 60 to 70: the guard's 10s wait counts against it, and the hook keeps all its own time",
      ],
      70,
      undefined,
    ],
    [
      'a Job deadline shorter than the wait',
      hookJob(argo, { activeDeadlineSeconds: 5 }),
      [
        "raised spec.activeDeadlineSeconds from 5 to 15: the guard's 10s wait counts against it, and the hook keeps all its own time",
      ],
      15,
      undefined,
    ],
    [
      'a pod template deadline beside the Job one',
      jobWith({ activeDeadlineSeconds: 30 }),
      [
        "raised spec.template.spec.activeDeadlineSeconds from 30 to 40: the guard's 10s wait counts against it, and the hook keeps all its own time",
      ],
      undefined,
      40,
    ],
    [
      'a 30 s guard (annotation) on a deadline of 600',
      hookJob({ ...argo, 'hookguard.io/min-runtime-seconds': '30' }, { activeDeadlineSeconds: 600 }),
      [
        "raised spec.activeDeadlineSeconds from 600 to 630: the guard's 30s wait counts against it, and the hook keeps all its own time",
      ],
      630,
      undefined,
    ],
  ])('adds the guard and its wait to %s', (_name, job, raised, jobDeadline, podDeadline) => {
    const seconds = Number(job.metadata?.annotations?.['hookguard.io/min-runtime-seconds'] ?? 10);
    const report = minRuntime.mutate(job, contextFor(job));
    expect(report).toEqual({
      mutations: [
        `added init container ${GUARD_CONTAINER_NAME} waiting ${seconds}s: a hook that ends before Argo CD sees it run keeps Argo CD's hook finalizer, and the sync waits on it`,
        ...raised,
      ],
      warnings: [],
    });
    expect((job.spec as JobSpec).activeDeadlineSeconds).toBe(jobDeadline);
    expect(podSpecOf(job).activeDeadlineSeconds).toBe(podDeadline);
    // Applied again, nothing changes: the guard is there, so the deadline is not raised twice.
    const once = structuredClone(job);
    expect(minRuntime.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [] });
    expect(job).toEqual(once);
  });

  it('adds the wait to a bare Pod’s deadline', () => {
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'Sync' });
    pod.spec!.activeDeadlineSeconds = 20;
    expect(minRuntime.mutate(pod, contextFor(pod)).mutations).toEqual([
      `added init container ${GUARD_CONTAINER_NAME} waiting 10s: a hook that ends before Argo CD sees it run keeps Argo CD's hook finalizer, and the sync waits on it`,
      "raised spec.activeDeadlineSeconds from 20 to 30: the guard's 10s wait counts against it, and the hook keeps all its own time",
    ]);
    expect(pod.spec!.activeDeadlineSeconds).toBe(30);
  });

  it('guards bare Pods in spec.initContainers', () => {
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'Sync' });
    minRuntime.mutate(pod, contextFor(pod));
    expect(pod.spec?.initContainers).toEqual([DEFAULT_GUARD_CONTAINER]);
  });

  it('is idempotent: an existing guard is left as it is', () => {
    const job = jobWith({}, { requests: { cpu: '10m' }, limits: { cpu: '100m' } });
    minRuntime.mutate(job, contextFor(job));
    const once = structuredClone(job);
    expect(minRuntime.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [] });
    expect(job).toEqual(once);
  });
});

describe('min-runtime: the guard is recognised by what it does, not by its name', () => {
  const lookAlike = (fields: Partial<Container>): Container => ({ ...DEFAULT_GUARD_CONTAINER, ...fields });
  it.each<[string, Container, string]>([
    ['command true', lookAlike({ command: ['true'] }), 'its command is not /busybox/sleep <seconds>'],
    [
      'another image',
      lookAlike({ image: 'evil.example/distroless/static-debian12:debug-nonroot' }),
      'its image is not gcr.io/distroless/static-debian12',
    ],
    ['a shorter wait', lookAlike({ command: ['/busybox/sleep', '1'] }), 'it waits 1s, not 10s'],
    [
      'a wait in args',
      lookAlike({ command: ['/busybox/sleep'], args: ['10'] }),
      'its command is not /busybox/sleep <seconds>',
    ],
    ['args after the wait', lookAlike({ args: ['0'] }), 'it has args'],
    [
      'a fractional wait',
      lookAlike({ command: ['/busybox/sleep', '0.1'] }),
      'its command is not /busybox/sleep <seconds>',
    ],
    [
      'the earlier default image with the new command',
      lookAlike({ image: 'busybox:1.37.0' }),
      'its image is not gcr.io/distroless/static-debian12',
    ],
    ['a sidecar', lookAlike({ restartPolicy: 'Always' }), 'it is a sidecar, restartPolicy Always'],
  ])('a look-alike with %s is unmet, and left as written', (_name, container, lacks) => {
    const job = hookJob(argo);
    podSpecOf(job).initContainers = [container];
    const before = structuredClone(job);
    expect(minRuntime.mutate(job, contextFor(job))).toEqual({
      mutations: [],
      warnings: [],
      unmet: `init container hookguard-min-runtime is not hookguard's guard (${lacks}); rename or remove it`,
    });
    expect(job).toEqual(before);
  });

  it.each<[string, Container]>([
    [
      'another tag, pinned by digest',
      lookAlike({ image: `gcr.io/distroless/static-debian12:debug-nonroot-amd64@sha256:${'a'.repeat(64)}` }),
    ],
    ['a longer wait', lookAlike({ command: ['/busybox/sleep', '30'] })],
    [
      'the earlier default, busybox’s sleep (a manifest check --fix rendered before the default changed)',
      lookAlike({ image: `docker.io/library/busybox:1.37.0`, command: ['sleep', '10'] }),
    ],
    ['another name (a render-time guard renamed)', lookAlike({ name: 'wait' })],
  ])('a guard with %s counts: nothing added', (_name, container) => {
    const job = hookJob(argo);
    podSpecOf(job).initContainers = [container];
    expect(minRuntime.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [] });
    expect(podSpecOf(job).initContainers).toEqual([container]);
  });

  it('waits as long as the object asks: a 10s guard is a look-alike for hookguard.io/min-runtime-seconds 30', () => {
    const job = hookJob({ ...argo, 'hookguard.io/min-runtime-seconds': '30' });
    podSpecOf(job).initContainers = [DEFAULT_GUARD_CONTAINER];
    expect(minRuntime.mutate(job, contextFor(job)).unmet).toBe(
      "init container hookguard-min-runtime is not hookguard's guard (it waits 10s, not 30s); rename or remove it",
    );
  });
});

describe('min-runtime: the guard’s resources follow the Pod’s containers (cap 250m CPU, 512Mi memory)', () => {
  const small = { cpu: '100m', memory: '128Mi' };
  it.each([
    ['BestEffort: none', [undefined], undefined],
    [
      'Guaranteed, under the cap: the same, requests = limits',
      [{ requests: small, limits: small }],
      { requests: small, limits: small },
    ],
    [
      'Guaranteed, over the cap: the cap',
      [{ requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '2', memory: '4Gi' } }],
      { requests: { cpu: '250m', memory: '512Mi' }, limits: { cpu: '250m', memory: '512Mi' } },
    ],
    [
      'Burstable with limits (kyverno’s hooks): the request, as request and limit',
      [{ requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '100m', memory: '256Mi' } }],
      { requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '10m', memory: '64Mi' } },
    ],
    [
      'limits only (a template: the request is the limit once the Pod is defaulted)',
      [{ limits: { cpu: '500m', memory: '64Mi' } }],
      { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '250m', memory: '64Mi' } },
    ],
    [
      'requests only: the request copied, uncapped, without a limit',
      [{ requests: { cpu: '1', memory: '1Gi' } }],
      { requests: { cpu: '1', memory: '1Gi' } },
    ],
    [
      'several containers: the smallest ask, resource by resource',
      [
        { requests: { cpu: '50m', memory: '1Gi' }, limits: { cpu: '50m', memory: '1Gi' } },
        { requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
        undefined,
      ],
      { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '50m', memory: '64Mi' } },
    ],
    [
      'only cpu set: only cpu',
      [{ requests: { cpu: '20m' }, limits: { cpu: '40m' } }],
      { requests: { cpu: '20m' }, limits: { cpu: '20m' } },
    ],
    [
      'ephemeral-storage followed too, uncapped',
      [{ requests: { 'ephemeral-storage': '2Gi' }, limits: { 'ephemeral-storage': '4Gi', 'nvidia.com/gpu': '1' } }],
      { requests: { 'ephemeral-storage': '2Gi' }, limits: { 'ephemeral-storage': '2Gi' } },
    ],
    [
      'a number from YAML',
      [{ requests: { cpu: 1 }, limits: { cpu: 1 } }],
      { requests: { cpu: '250m' }, limits: { cpu: '250m' } },
    ],
    [
      'a zero request',
      [{ requests: { cpu: '0' }, limits: { cpu: '0' } }],
      { requests: { cpu: '0' }, limits: { cpu: '0' } },
    ],
    ['a quantity the API server would refuse: ignored', [{ requests: { cpu: 'lots' } }], undefined],
  ])('%s', (_name, resources, expected) => {
    expect(guardOf(jobWith({}, ...resources))?.resources).toEqual(expected);
  });

  it('looks at app containers only: an init container’s resources are not followed', () => {
    const job = jobWith({ initContainers: [{ name: 'init', image: 'x', resources: { requests: { cpu: '1' } } }] });
    expect(guardOf(job)?.resources).toBeUndefined();
  });

  it('caps requests and limits separately with a config that sets them apart', () => {
    const capped = {
      ...settings,
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { cpu: '100m', memory: '128Mi' },
    };
    const podSpec = podSpecOf(jobWith({}, { requests: small, limits: small }));
    expect(guardContainer(10, capped, podSpec).resources).toEqual({
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { cpu: '100m', memory: '128Mi' },
    });
  });
});

describe('min-runtime: the guard’s user, group and runAsNonRoot', () => {
  const ids = (job: KubeObject, context?: RuleContext) => {
    const { runAsNonRoot, runAsUser, runAsGroup } = (guardOf(job, context)?.securityContext ?? {}) as Record<
      string,
      unknown
    >;
    return { runAsNonRoot, runAsUser, runAsGroup };
  };
  /** The guard's settings changed, as a config file would change them. */
  const withGuard = (
    job: KubeObject,
    changes: Partial<RuleContext['settings']['minRuntime']>,
    cluster?: ClusterFacts,
  ) => {
    const context = contextFor(job, cluster ? { cluster } : {});
    return {
      ...context,
      settings: { ...context.settings, minRuntime: { ...context.settings.minRuntime, ...changes } },
    };
  };
  /** A mirrored busybox (its user is root) with the user hookguard used to set, 65534. */
  const busybox65534 = { image: 'busybox:1.37.0', command: ['sleep'], runAsUser: 65534, imageRunsAsNonRoot: false };
  const nonRootContainer = { securityContext: { runAsNonRoot: true } };

  it.each([
    [
      'the Pod sets none: the image’s own 65532',
      {},
      { runAsNonRoot: true, runAsUser: undefined, runAsGroup: undefined },
    ],
    [
      'the Pod’s user and group',
      { securityContext: { runAsUser: 2000, runAsGroup: 3000 } },
      { runAsNonRoot: true, runAsUser: 2000, runAsGroup: 3000 },
    ],
    [
      'a Pod that runs as root (admitted only where root is): no runAsNonRoot the kubelet would refuse',
      { securityContext: { runAsUser: 0, runAsGroup: 0 } },
      { runAsNonRoot: undefined, runAsUser: undefined, runAsGroup: undefined },
    ],
    [
      'a container-level user is the container’s, not the Pod’s',
      { containers: [{ name: 'main', image: 'x', securityContext: { runAsUser: 0 } }] },
      { runAsNonRoot: true, runAsUser: undefined, runAsGroup: undefined },
    ],
  ])('default (distroless debug-nonroot, runAsUser null): %s', (_name, podSpec, expected) => {
    expect(ids(jobWith(podSpec as Partial<PodSpec>))).toEqual(expected);
  });

  it.each([
    ['the Pod sets none: 65534', {}, { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534 }],
    [
      'the Pod’s user, 65534 as the group it does not set',
      { securityContext: { runAsUser: 1000 } },
      { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 65534 },
    ],
    [
      'never root from the Pod',
      { securityContext: { runAsUser: 0, runAsGroup: 0 } },
      { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534 },
    ],
  ])('runAsUser 65534 configured: %s', (_name, podSpec, expected) => {
    const job = jobWith(podSpec);
    expect(ids(job, withGuard(job, busybox65534))).toEqual(expected);
  });

  it.each([
    [
      'no ids, and no runAsNonRoot where the Pod needs none',
      {},
      { runAsNonRoot: undefined, runAsUser: undefined, runAsGroup: undefined },
    ],
    [
      'runAsNonRoot where the Pod sets it',
      { securityContext: { runAsNonRoot: true } },
      { runAsNonRoot: true, runAsUser: undefined, runAsGroup: undefined },
    ],
    [
      'runAsNonRoot where each container sets it (Pod Security restricted then needs it of the guard)',
      {
        initContainers: [{ name: 'i', image: 'x', ...nonRootContainer }],
        containers: [{ name: 'm', image: 'x', ...nonRootContainer }],
      },
      { runAsNonRoot: true, runAsUser: undefined, runAsGroup: undefined },
    ],
    [
      'not where only some containers set it',
      {
        containers: [
          { name: 'a', image: 'x', ...nonRootContainer },
          { name: 'b', image: 'x' },
        ],
      },
      { runAsNonRoot: undefined, runAsUser: undefined, runAsGroup: undefined },
    ],
    [
      'the Pod’s user where it sets one',
      { securityContext: { runAsUser: 2000 } },
      { runAsNonRoot: true, runAsUser: 2000, runAsGroup: undefined },
    ],
  ])('an image that runs as root, runAsUser null: %s', (_name, podSpec, expected) => {
    const job = jobWith(podSpec);
    expect(ids(job, withGuard(job, { ...busybox65534, runAsUser: null }))).toEqual(expected);
  });

  // OpenShift is known per cluster (the security.openshift.io API group), never per namespace: restricted-v2 refuses a
  // runAsUser outside the namespace's openshift.io/sa.scc.uid-range and assigns one when none is set
  // (openshift/apiserver-library-go pkg/securitycontextconstraints/user/mustrunasrange.go), and a namespace just
  // created has no range yet.
  const OPENSHIFT: ClusterFacts = { openshift: true };
  const PLAIN: ClusterFacts = { openshift: false };
  const COPIED_ANNOTATION = new Map([
    ['apps', { name: 'apps', labels: {}, annotations: { 'openshift.io/sa.scc.uid-range': '1000680000/10000' } }],
  ]);
  const openshiftContexts: [string, (job: KubeObject) => RuleContext][] = [
    ['on a cluster serving security.openshift.io (auto)', (job) => withGuard(job, busybox65534, OPENSHIFT)],
    ['with rules.minRuntime.openshift true', (job) => withGuard(job, { ...busybox65534, openshift: 'true' }, PLAIN)],
    [
      'at render time with rules.minRuntime.openshift true (check --openshift)',
      (job) => {
        const context = contextFor(job, { stage: 'render', config: { 'rules.minRuntime.openshift': 'true' } });
        const minRuntime = { ...context.settings.minRuntime, ...busybox65534 };
        return { ...context, settings: { ...context.settings, minRuntime } };
      },
    ],
  ];

  it.each(openshiftContexts)('%s: no user or group of its own, in a fresh namespace too', (_name, contextOf) => {
    const job = jobWith({});
    expect(ids(job, contextOf(job))).toEqual({ runAsNonRoot: undefined, runAsUser: undefined, runAsGroup: undefined });
    const own = jobWith({ securityContext: { runAsUser: 1000680000, runAsNonRoot: true } });
    expect(ids(own, contextOf(own))).toEqual({ runAsNonRoot: true, runAsUser: 1000680000, runAsGroup: undefined });
  });

  it('a copied uid-range annotation, an unread cluster or openshift false: the configured 65534', () => {
    const copied = jobWith({});
    const context = withGuard(copied, busybox65534, PLAIN);
    expect(ids(copied, { ...context, namespace: COPIED_ANNOTATION.get('apps') })).toMatchObject({ runAsUser: 65534 });
    const unread = jobWith({});
    expect(ids(unread, withGuard(unread, busybox65534))).toMatchObject({ runAsUser: 65534 });
    const off = jobWith({});
    expect(ids(off, withGuard(off, { ...busybox65534, openshift: 'false' }, OPENSHIFT))).toMatchObject({
      runAsUser: 65534,
    });
  });
});

describe('min-runtime: Windows Pods get no guard', () => {
  it.each([
    ['spec.os.name: windows', { os: { name: 'windows' } }],
    ['a kubernetes.io/os: windows node selector', { nodeSelector: { 'kubernetes.io/os': 'windows' } }],
  ])('%s: unchanged, with a warning, and nothing unmet', (_name, podSpec) => {
    const job = jobWith(podSpec);
    const before = structuredClone(job);
    expect(minRuntime.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [WINDOWS_NOT_GUARDED] });
    expect(job).toEqual(before);
  });

  it('guards a Pod pinned to Linux', () => {
    expect(guardOf(jobWith({ os: { name: 'linux' }, nodeSelector: { 'kubernetes.io/os': 'linux' } }))).toBeDefined();
  });
});

// The settings object is frozen config: the guard's template is prepared once per config, not per request.
describe('min-runtime: per config, not per request', () => {
  it('reads the image and command of the config it is given', () => {
    const podSpec = podSpecOf(hookJob(argo));
    const other = { ...settings, image: 'registry.example/busybox:1.37.0', command: ['/bin/sleep'] };
    expect(guardContainer(5, other, podSpec)).toMatchObject({
      image: 'registry.example/busybox:1.37.0',
      command: ['/bin/sleep', '5'],
    });
    expect(guardContainer(5, settings, podSpec)).toMatchObject({
      image: 'gcr.io/distroless/static-debian12:debug-nonroot',
      command: ['/busybox/sleep', '5'],
    });
  });
});

// Pod-level resources (PodLevelResources, beta and on by default from Kubernetes 1.34): the guard shares the pod-level
// budget and sizes itself within it (issue 27, item 11). That the Pods stay valid (the aggregate request within the
// pod-level request, each limit within the pod-level limit) and keep their QoS class is asked of the real API server:
// test/cluster/admissibility.test.ts, "min-runtime with pod-level resources".
describe('min-runtime: pod-level resources', () => {
  it.each<[string, Record<string, unknown>, unknown[], unknown]>([
    [
      'pod-level only: the guard sets none and shares the budget',
      { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
      [undefined, undefined],
      undefined,
    ],
    [
      'pod-level and container requests',
      { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } },
      [{ requests: { cpu: '300m', memory: '300Mi' } }, { requests: { cpu: '100m', memory: '700Mi' } }],
      { requests: { cpu: '100m', memory: '300Mi' } },
    ],
    [
      'pod-level limits below the cap, containers with limits',
      { limits: { cpu: '200m', memory: '128Mi' } },
      [{ requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } }],
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
    ],
  ])('%s', (_name, podResources, containers, expected) => {
    const job = jobWith({ resources: podResources }, ...containers);
    expect(guardOf(job)?.resources).toEqual(expected);
  });
});
