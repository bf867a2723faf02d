// The guard must never keep a hook from starting (issue 13), asked of the real API server (issue 36: this replaces
// the hand-written LimitRanger and Pod Security of test/support). Every hook fixture of the repository, as rendered
// and with the resources of a few profiles, is admitted without and with hookguard's mutation under a table of
// LimitRanges as people write them (real LimitRange objects), and in a namespace that enforces Pod Security
// "restricted": a Pod admitted before is admitted after, refused for the same reason when it was refused, and its
// QoS class (status.qosClass, which the API server sets at create) does not change.
// "With hookguard" is what the API server stores: a hook Job is created through hookguard's webhooks and its stored
// template is what the Job controller would make Pods of (the Pods then go through LimitRanger, after the guard is
// in); a bare hook Pod is created through the webhooks as it is, so LimitRanger's defaults reach the webhook before
// the guard is added, as they do in a cluster. "Without" is the same Pod with no hook annotation (the webhooks'
// matchConditions let it by). Everything is `kubectl create --dry-run=server`: admitted, defaulted, stored nowhere.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GUARD_CONTAINER_NAME } from '../../src/rules/min-runtime.js';
import { fixtureFiles, fixturePath } from '../support/fixtures.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import { PROFILES } from '../support/resource-profiles.js';
import {
  allowArgoCdController,
  createServiceAccounts,
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlPath,
  newNamespace,
  run,
} from './support/cluster.js';

type Json = Record<string, unknown>;
type ResourceMap = Record<string, string>;
interface LimitRangeItem {
  type: 'Container' | 'Pod';
  min?: ResourceMap;
  max?: ResourceMap;
  default?: ResourceMap;
  defaultRequest?: ResourceMap;
  maxLimitRequestRatio?: ResourceMap;
}

interface Container extends Json {
  name: string;
  resources?: { requests?: ResourceMap; limits?: ResourceMap };
  restartPolicy?: string;
}
interface PodSpec extends Json {
  containers: Container[];
  initContainers?: Container[];
}

/** LimitRanges as people write them (the API server adds the defaults of SetDefaults_LimitRangeItem). */
const LIMIT_RANGES: ReadonlyArray<[string, LimitRangeItem[]]> = [
  ['none', []],
  [
    'defaults only (500m/512Mi, requests 100m/128Mi)',
    [
      {
        type: 'Container',
        default: { cpu: '500m', memory: '512Mi' },
        defaultRequest: { cpu: '100m', memory: '128Mi' },
      },
    ],
  ],
  ['Container min 50m/64Mi', [{ type: 'Container', min: { cpu: '50m', memory: '64Mi' } }]],
  [
    'Container min 100m/128Mi with defaults',
    [
      {
        type: 'Container',
        min: { cpu: '100m', memory: '128Mi' },
        default: { cpu: '500m', memory: '512Mi' },
        defaultRequest: { cpu: '100m', memory: '128Mi' },
      },
    ],
  ],
  ['Container max 1/1Gi', [{ type: 'Container', max: { cpu: '1', memory: '1Gi' } }]],
  ['Container maxLimitRequestRatio 2', [{ type: 'Container', maxLimitRequestRatio: { cpu: '2', memory: '2' } }]],
  ['Container maxLimitRequestRatio 1', [{ type: 'Container', maxLimitRequestRatio: { cpu: '1', memory: '1' } }]],
  [
    'maxLimitRequestRatio 2 with defaults (200m/256Mi, requests 100m/128Mi)',
    [
      {
        type: 'Container',
        maxLimitRequestRatio: { cpu: '2', memory: '2' },
        default: { cpu: '200m', memory: '256Mi' },
        defaultRequest: { cpu: '100m', memory: '128Mi' },
      },
    ],
  ],
  ['Pod max 2/2Gi', [{ type: 'Pod', max: { cpu: '2', memory: '2Gi' } }]],
  ['Pod min 50m/64Mi', [{ type: 'Pod', min: { cpu: '50m', memory: '64Mi' } }]],
  [
    // OpenShift Container Platform 4.15 docs, "Restrict resource consumption with limit ranges": core-resource-limits.
    'OpenShift core-resource-limits',
    [
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
  ],
  [
    // kubernetes/website content/en/examples/admin/resource/cpu-constraints.yaml.
    'Kubernetes docs cpu-min-max-demo-lr (200m..800m)',
    [{ type: 'Container', max: { cpu: '800m' }, min: { cpu: '200m' } }],
  ],
  [
    // kubernetes/website content/en/examples/admin/resource/memory-constraints.yaml.
    'Kubernetes docs mem-min-max-demo-lr (500Mi..1Gi)',
    [{ type: 'Container', max: { memory: '1Gi' }, min: { memory: '500Mi' } }],
  ],
  [
    // kubernetes/website content/en/examples/admin/resource/limit-mem-cpu-container.yaml.
    'Kubernetes docs limit-mem-cpu-per-container',
    [
      {
        type: 'Container',
        max: { cpu: '800m', memory: '1Gi' },
        min: { cpu: '100m', memory: '99Mi' },
        default: { cpu: '700m', memory: '900Mi' },
        defaultRequest: { cpu: '110m', memory: '111Mi' },
      },
    ],
  ],
];

interface Hook {
  /** Unique in the run, a DNS label: the Pods are named b-<id> (without hookguard) and a-<id> (with). */
  id: string;
  file: string;
  /** The hook as kubectl reads it, named, without namespace or generateName. */
  object: Json;
}

const specOf = (object: Json): PodSpec =>
  (object.kind === 'Job' ? ((object.spec as Json).template as Json).spec : object.spec) as PodSpec;

/** A Pod of `spec`, named, without the hook's annotations (as the Job controller makes them, or as a plain Pod). */
const podOf = (name: string, spec: PodSpec): Json => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec });

interface Outcome {
  stored?: Json;
  /** The API server's error, as kubectl prints it after `error when creating "STDIN": `. */
  error?: string;
}

/**
 * `kubectl create --dry-run=server` of every item in turn: what the API server would store, or why it refused.
 * kubectl goes on after a refusal and prints the refusals in order, so the items missing from its output are the
 * refused ones, in that order.
 */
async function dryRun(ns: string, items: readonly Json[]): Promise<Map<string, Outcome>> {
  const args = ['create', `--as=${ARGOCD_CONTROLLER}`, '--dry-run=server', '-n', ns, '-o', 'json', '-f', '-'];
  const result = await run(kubectlPath, args, {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
  });
  const stored = new Map<string, Json>();
  for (const text of result.stdout.split(/(?<=^\})\n(?=\{)/m).filter((part) => part.trim())) {
    const object = JSON.parse(text) as Json;
    stored.set(String((object.metadata as Json).name), object);
  }
  // Each refusal opens with one of these lines (a 422 lists its causes on the lines after); warnings are left out.
  const errors: string[] = [];
  for (const line of result.stderr.split('\n')) {
    if (/^(Error from server|error: |The \S+ "[^"]*" is invalid)/.test(line))
      errors.push(line.replace(/^.*?error when creating "STDIN": /, ''));
    else if (line.trim() && !line.startsWith('Warning: ') && errors.length > 0)
      errors[errors.length - 1] += `\n${line}`;
  }
  const outcomes = new Map<string, Outcome>();
  let next = 0;
  for (const item of items) {
    const name = String((item.metadata as Json).name);
    const object = stored.get(name);
    outcomes.set(name, object ? { stored: object } : { error: errors[next++] ?? `no error printed: ${result.stderr}` });
  }
  expect(next, result.stderr).toBe(errors.length);
  return outcomes;
}

/**
 * A refusal with the Pod's name taken out, its aggregated reasons sorted: LimitRanger collects them ranging over Go
 * maps (a LimitRange item's min, max, maxLimitRequestRatio), so their order changes from one request to the next.
 */
function refusal(error: string | undefined, name: string): string[] | undefined {
  if (error === undefined) return undefined;
  const text = error.replace(`"${name}"`, 'NAME');
  const listed = /^(pods NAME is forbidden: )\[(.*)\]$/s.exec(text);
  if (!listed) return [text];
  const reasons = listed[2]!.split(/, (?=(?:minimum|maximum) \S+ usage per |\S+ max limit to request ratio per )/);
  return [listed[1]!, ...reasons.sort()];
}

const guardOf = (spec: PodSpec) => spec.initContainers?.find((entry) => entry.name === GUARD_CONTAINER_NAME);
const qosOf = (outcome: Outcome) => (outcome.stored?.status as { qosClass?: string } | undefined)?.qosClass;
const QOS_ORDER = ['Guaranteed', 'Burstable', 'BestEffort'];
const countQos = (outcomes: Outcome[]) =>
  QOS_ORDER.map((qos) => outcomes.filter((outcome) => qosOf(outcome) === qos).length).join('/');

/** The Pods without and with hookguard of every hook, as the namespace's admission makes them. */
interface Admitted {
  before: Map<string, Outcome>;
  after: Map<string, Outcome>;
}

describeCluster('admissibility: the guard never keeps a hook Pod from starting (the real API server)', () => {
  const namespaces: string[] = [];
  let fixtures: Hook[] = [];
  let profiled: Hook[] = [];
  /** Each Job hook's template as stored through hookguard's webhooks (the Pods' spec with the guard), by id. */
  const mutatedTemplates = new Map<string, PodSpec>();
  let serviceAccounts: string[] = [];

  const namespace = async (prefix: string, labels: Record<string, string> = {}) => {
    const ns = await newNamespace(prefix, labels);
    namespaces.push(ns);
    await allowArgoCdController(ns);
    await createServiceAccounts(ns, serviceAccounts);
    return ns;
  };

  beforeAll(async () => {
    const read = await Promise.all(
      fixtureFiles().map(async (file, index) => {
        const object = JSON.parse(
          await kubectl(['create', '--dry-run=client', '-o', 'json', '-f', fixturePath(file)]),
        ) as Json;
        const metadata = object.metadata as Json;
        delete metadata.namespace;
        delete metadata.generateName;
        metadata.name = `f${index}`;
        return { id: `f${index}`, file, object };
      }),
    );
    fixtures = read;
    profiled = PROFILES.flatMap(([, profile], p) =>
      fixtures.map((hook) => {
        const object = structuredClone(hook.object);
        profile(specOf(object));
        const id = `${hook.id}p${p}`;
        (object.metadata as Json).name = id;
        return { ...hook, id, object };
      }),
    );
    serviceAccounts = [
      ...new Set(
        fixtures.flatMap((hook) => {
          const spec = specOf(hook.object);
          // serviceAccount: the deprecated field, still read when serviceAccountName is not set.
          return (spec.serviceAccountName ?? spec.serviceAccount ?? []) as string | string[];
        }),
      ),
    ].sort();
    // The Jobs through hookguard's webhooks: the stored template is what the Job controller makes Pods of.
    const ns = await namespace('admissibility-jobs');
    const jobs = [...fixtures, ...profiled].filter((hook) => hook.object.kind === 'Job');
    const outcomes = await dryRun(
      ns,
      jobs.map((hook) => hook.object),
    );
    for (const hook of jobs) {
      const outcome = outcomes.get(hook.id)!;
      expect(outcome.error, `${hook.file} (${hook.id})`).toBeUndefined();
      const spec = specOf(outcome.stored!);
      mutatedTemplates.set(hook.id, spec);
    }
  });
  afterAll(async () => {
    for (const name of namespaces) await deleteNamespace(name);
  });

  /** The hooks' Pods admitted in `ns`: b-<id> without hookguard, a-<id> with. */
  async function admit(ns: string, hooks: readonly Hook[]): Promise<Admitted> {
    const before = hooks.map((hook) => podOf(`b-${hook.id}`, specOf(hook.object)));
    const after = hooks.map((hook) => {
      if (hook.object.kind === 'Job') return podOf(`a-${hook.id}`, mutatedTemplates.get(hook.id)!);
      const pod = structuredClone(hook.object);
      (pod.metadata as Json).name = `a-${hook.id}`;
      return pod;
    });
    const admitted = { before: await dryRun(ns, before), after: await dryRun(ns, after) };
    for (const hook of hooks) {
      const stored = admitted.before.get(`b-${hook.id}`)?.stored;
      if (stored)
        expect(guardOf(stored.spec as PodSpec), `${hook.file}: hookguard left b-${hook.id} alone`).toBe(undefined);
    }
    return admitted;
  }

  /**
   * Asserts what must hold of every hook in `ns` and returns its figures: admitted before, after, the QoS classes
   * (G/B/BE) of those admitted before and after.
   */
  function figures(hooks: readonly Hook[], admitted: Admitted, where: string): string {
    const before = hooks.map((hook) => admitted.before.get(`b-${hook.id}`)!);
    const after = hooks.map((hook) => admitted.after.get(`a-${hook.id}`)!);
    hooks.forEach((hook, index) => {
      const [was, is] = [before[index]!, after[index]!];
      const at = `${hook.file} (${hook.id}) ${where}`;
      if (was.error === undefined) {
        expect(is.error, at).toBeUndefined();
        expect(qosOf(is), at).toBe(qosOf(was));
      } else {
        // Refused for the same reason, word for word: the guard is named nowhere and changes no figure in it.
        expect(refusal(is.error, `a-${hook.id}`), at).toEqual(refusal(was.error, `b-${hook.id}`));
      }
    });
    const admittedCount = (outcomes: Outcome[]) => outcomes.filter((outcome) => outcome.error === undefined).length;
    return `${admittedCount(before)} | ${admittedCount(after)} | ${countQos(before)} | ${countQos(after)}`;
  }

  it('stores every sync-phase hook Job with the guard init container, and the delete-phase ones without', () => {
    const unguarded = fixtures
      .filter((hook) => hook.object.kind === 'Job' && !guardOf(mutatedTemplates.get(hook.id)!))
      .map((hook) => hook.file);
    expect(unguarded).toEqual(UNGUARDED_JOBS);
    for (const hook of profiled.filter((each) => each.object.kind === 'Job')) {
      const fixture = fixtures.find((each) => each.file === hook.file)!;
      expect(guardOf(mutatedTemplates.get(hook.id)!) === undefined, hook.id).toBe(
        guardOf(mutatedTemplates.get(fixture.id)!) === undefined,
      );
    }
  });

  // Side by side: a case's time is kubectl's dry-runs, one API round trip per Pod after another, not CPU.
  it.concurrent.each(
    LIMIT_RANGES.map(([name, limits], index) => ({ name, limits, expected: EXPECTED_LIMIT_RANGES[index] })),
  )(
    'under LimitRange $name: admitted stays admitted, refused is refused alike, the QoS class is unchanged',
    async ({ name, limits, expected }) => {
      const ns = await namespace('admissibility-lr');
      if (limits.length > 0)
        await kubectl(
          ['create', '-n', ns, '-f', '-'],
          JSON.stringify({ apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'limits' }, spec: { limits } }),
        );
      const admitted = await admit(ns, [...fixtures, ...profiled]);
      expect([figures(fixtures, admitted, `under ${name}`), figures(profiled, admitted, `under ${name}`)]).toEqual(
        expected,
      );
      // The check can fail: a hook Pod with no resources, refused by a Pod minimum, for the minimum, not the guard.
      const bare = fixtures.find((hook) => hook.file === 'argo-cd-e2e-hook-sync-pod.yaml')!;
      if (name === 'Pod min 50m/64Mi')
        expect(refusal(admitted.after.get(`a-${bare.id}`)?.error, `a-${bare.id}`)).toEqual([
          'pods NAME is forbidden: ',
          'minimum cpu usage per Pod is 50m.  No request is specified',
          'minimum memory usage per Pod is 64Mi.  No request is specified',
        ]);
    },
  );

  it('in a namespace enforcing Pod Security "restricted": every hook Pod that passes before passes after', async () => {
    const ns = await namespace('admissibility-restricted', { 'pod-security.kubernetes.io/enforce': 'restricted' });
    const admitted = await admit(ns, [...fixtures, ...profiled]);
    expect([figures(fixtures, admitted, 'under restricted'), figures(profiled, admitted, 'under restricted')]).toEqual(
      EXPECTED_RESTRICTED,
    );
    // The check can fail: a hook Pod with nothing set is refused, naming each of its containers, never the guard.
    const bare = fixtures.find((hook) => hook.file === 'argo-cd-e2e-hook-sync-pod.yaml')!;
    expect(admitted.after.get(`a-${bare.id}`)?.error).toBe(RESTRICTED_REFUSAL(`a-${bare.id}`));
  });
});

/** The Job fixtures hookguard stores without a guard: delete-phase hooks, which Argo CD gives no hook finalizer. */
const UNGUARDED_JOBS = [
  'kyverno-remove-configmap.yaml',
  'kyverno-rm-mutatingwebhook.yaml',
  'kyverno-rm-webhooks.yaml',
  'kyverno-scale-to-zero-v2.yaml',
  'kyverno-scale-to-zero.yaml',
];

/**
 * Per LimitRange, in LIMIT_RANGES' order: the figures of the 22 fixtures as rendered, and of the 154 profiled ones:
 * admitted before | admitted after | QoS classes G/B/BE of those admitted before | after. The admitted counts are those
 * the hand-written LimitRanger of test/support computed before issue 36 (test/golden/expected/admissibility.md).
 */
const EXPECTED_LIMIT_RANGES: Array<[string, string]> = [
  // none
  ['22 | 22 | 0/7/15 | 0/7/15', '154 | 154 | 110/44/0 | 110/44/0'],
  // defaults only
  ['22 | 22 | 0/22/0 | 0/22/0', '154 | 154 | 110/44/0 | 110/44/0'],
  // Container min 50m/64Mi
  ['15 | 15 | 0/15/0 | 0/15/0', '132 | 132 | 88/44/0 | 88/44/0'],
  // Container min 100m/128Mi with defaults
  ['15 | 15 | 0/15/0 | 0/15/0', '88 | 88 | 66/22/0 | 66/22/0'],
  // Container max 1/1Gi
  ['22 | 22 | 15/7/0 | 15/7/0', '154 | 154 | 110/44/0 | 110/44/0'],
  // Container maxLimitRequestRatio 2
  ['0 | 0 | 0/0/0 | 0/0/0', '110 | 110 | 110/0/0 | 110/0/0'],
  // Container maxLimitRequestRatio 1
  ['0 | 0 | 0/0/0 | 0/0/0', '110 | 110 | 110/0/0 | 110/0/0'],
  // maxLimitRequestRatio 2 with defaults
  ['15 | 15 | 0/15/0 | 0/15/0', '132 | 132 | 110/22/0 | 110/22/0'],
  // Pod max 2/2Gi
  ['7 | 7 | 0/7/0 | 0/7/0', '132 | 132 | 110/22/0 | 110/22/0'],
  // Pod min 50m/64Mi
  ['0 | 0 | 0/0/0 | 0/0/0', '132 | 132 | 88/44/0 | 88/44/0'],
  // OpenShift core-resource-limits
  ['15 | 15 | 0/15/0 | 0/15/0', '66 | 66 | 66/0/0 | 66/0/0'],
  // cpu-min-max-demo-lr
  ['15 | 15 | 0/15/0 | 0/15/0', '44 | 44 | 44/0/0 | 44/0/0'],
  // mem-min-max-demo-lr
  ['15 | 15 | 0/15/0 | 0/15/0', '22 | 22 | 22/0/0 | 22/0/0'],
  // limit-mem-cpu-per-container
  ['15 | 15 | 0/15/0 | 0/15/0', '66 | 66 | 44/22/0 | 44/22/0'],
];
const EXPECTED_RESTRICTED: [string, string] = ['14 | 14 | 0/7/7 | 0/7/7', '84 | 84 | 56/28/0 | 56/28/0'];
const RESTRICTED_REFUSAL = (name: string) =>
  `pods "${name}" is forbidden: violates PodSecurity "restricted:latest": ` +
  'allowPrivilegeEscalation != false (container "main" must set securityContext.allowPrivilegeEscalation=false), ' +
  'unrestricted capabilities (container "main" must set securityContext.capabilities.drop=["ALL"]), ' +
  'runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true), ' +
  'seccompProfile (pod or container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")';

// Pod-level resources (PodLevelResources, on by default since Kubernetes 1.34): the containers' aggregate request must
// stay within the pod-level request and each container's limit within the pod-level limit, and the QoS class is read
// from the pod-level values. The guard keeps every pattern valid and changes neither (issue 27, item 11): the Job is
// stored through hookguard and a Pod of its stored template is admitted, with the QoS class of the template as sent.
describeCluster('min-runtime with pod-level resources (the real API server)', () => {
  let ns = '';
  beforeAll(async () => {
    ns = await newNamespace('admissibility-pod-level');
    await allowArgoCdController(ns);
  });
  afterAll(async () => {
    if (ns) await deleteNamespace(ns);
  });

  const job = (name: string, resources: Json, containers: Array<Json | undefined>): Json => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations: { 'argocd.argoproj.io/hook': 'PreSync' } },
    spec: {
      template: {
        spec: {
          restartPolicy: 'Never',
          resources,
          containers: containers.map((entry, index) => ({
            name: `c${index}`,
            image: 'alpine:3.20',
            ...(entry === undefined ? {} : { resources: entry }),
          })),
        },
      },
    },
  });

  it.each<[string, Json, Array<Json | undefined>, unknown, string]>([
    [
      'pod-level only: the guard sets none and shares the budget',
      { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
      [undefined, undefined],
      {},
      'Guaranteed',
    ],
    [
      'pod-level and container requests',
      { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } },
      [{ requests: { cpu: '300m', memory: '300Mi' } }, { requests: { cpu: '100m', memory: '700Mi' } }],
      { requests: { cpu: '100m', memory: '300Mi' } },
      'Burstable',
    ],
    [
      'pod-level limits below the cap, containers with limits',
      { limits: { cpu: '200m', memory: '128Mi' } },
      [{ requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } }],
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
      'Burstable',
    ],
  ])('%s', async (_name, podResources, containers, guardResources, qos) => {
    const id = `pl${String(_name.length)}`;
    const sent = job(id, podResources, containers);
    const stored = (await dryRun(ns, [sent])).get(id)!;
    expect(stored.error).toBeUndefined();
    const template = specOf(stored.stored!);
    expect(guardOf(template)?.resources).toEqual(guardResources);
    const pods = await dryRun(ns, [podOf(`b-${id}`, specOf(sent)), podOf(`a-${id}`, template)]);
    expect([qosOf(pods.get(`b-${id}`)!), pods.get(`b-${id}`)!.error]).toEqual([qos, undefined]);
    expect([qosOf(pods.get(`a-${id}`)!), pods.get(`a-${id}`)!.error]).toEqual([qos, undefined]);
  });

  it('the check can fail: a container request above the pod-level request is refused', async () => {
    const pod = podOf('too-much', specOf(job('x', { requests: { cpu: '100m' } }, [{ requests: { cpu: '200m' } }])));
    expect((await dryRun(ns, [pod])).get('too-much')?.error).toBe(
      'The Pod "too-much" is invalid: spec.resources.requests[cpu]: Invalid value: "100m": must be greater than or equal to aggregate container requests of 200m',
    );
  });
});
