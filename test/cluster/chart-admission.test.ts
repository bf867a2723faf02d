// The chart's objects as the real API server admits them (issue 36: in place of an Ajv reading of the CRD's schema and
// a hand-written Pod Security check): the HookGuard object the chart ships, validated by the chart's own CRD as the
// API server serves it (strict field validation: an unknown field is refused, not pruned), and every Pod the chart
// runs (Deployment, CronJob, hook Jobs), created in a namespace that enforces Pod Security "restricted" with no
// warning. `kubectl create --dry-run=server`: admitted, defaulted, stored nowhere.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { find, renderChart, type Manifest } from '../support/manifests.js';
import {
  createServiceAccounts,
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlPath,
  newNamespace,
  run,
} from './support/cluster.js';

/** Values that turn on every workload and pod-level knob the chart has (a PriorityClass of its own is left out). */
const EVERYTHING_ON = {
  replicaCount: 2,
  sweep: { schedule: '*/10 * * * *', resources: { requests: { cpu: '20m', memory: '128Mi' } } },
  networkPolicy: { enabled: true },
  podDisruptionBudget: { enabled: true },
  podSecurityContext: {
    runAsNonRoot: true,
    runAsUser: 10001,
    runAsGroup: 10001,
    fsGroup: 10001,
    seccompProfile: { type: 'RuntimeDefault' },
  },
  extraVolumes: [{ name: 'corporate-ca', configMap: { name: 'corporate-ca' } }],
  extraVolumeMounts: [{ name: 'corporate-ca', mountPath: '/etc/ssl/corporate', readOnly: true }],
  priorityClassName: 'system-cluster-critical',
};

/** The Pods the chart runs: the server, the sweep, `helm test`, and the two lifecycle hooks. */
const CHART_PODS = [
  'deployment-hookguard',
  'cronjob-hookguard-sweep',
  'pod-hookguard-test',
  'job-hookguard-upgrade-crds',
  'job-hookguard-delete-webhooks',
];

/** Every Pod template of the rendered objects, as a Pod named after its owner. */
function podsOf(objects: readonly Manifest[]): Manifest[] {
  return objects.flatMap((object): Manifest[] => {
    const template =
      object.kind === 'CronJob'
        ? object.spec.jobTemplate.spec.template
        : ['Deployment', 'Job', 'DaemonSet', 'StatefulSet'].includes(object.kind)
          ? object.spec.template
          : object.kind === 'Pod'
            ? object
            : undefined;
    if (!template) return [];
    const name = `${String(object.kind).toLowerCase()}-${String(object.metadata.name)}`;
    return [{ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: template.spec }];
  });
}

async function dryRunCreate(ns: string, object: Manifest) {
  return run(kubectlPath, ['create', '--dry-run=server', '-n', ns, '-o', 'json', '-f', '-'], {
    input: JSON.stringify(object),
  });
}

describeCluster("the chart's objects through the real API server", () => {
  const namespaces: string[] = [];
  let defaults: Manifest[] = [];
  let everything: Manifest[] = [];
  beforeAll(async () => {
    defaults = await renderChart({ includeCrds: true });
    everything = await renderChart({ includeCrds: true, values: EVERYTHING_ON });
  });
  afterAll(async () => {
    for (const name of namespaces) await deleteNamespace(name);
  });

  it('serves the CRD the chart renders, and admits the HookGuard object it ships as it is (nothing pruned)', async () => {
    const rendered = find(defaults, 'CustomResourceDefinition', 'hookguards.hookguard.io');
    const served = JSON.parse(await kubectl(['get', 'crd', 'hookguards.hookguard.io', '-o', 'json'])) as Manifest;
    expect(served.spec.versions).toEqual(rendered.spec.versions);
    const shipped = find(defaults, 'HookGuard', 'hookguard');
    // The cluster's own hookguard already has `hookguard`: the same object under another name.
    const object = { ...shipped, metadata: { ...shipped.metadata, name: 'hookguard-chart-admission' } };
    const created = await run(kubectlPath, ['create', '--dry-run=server', '-o', 'json', '-f', '-'], {
      input: JSON.stringify(object),
    });
    expect([created.status, created.stderr]).toEqual([0, '']);
    const stored = JSON.parse(created.stdout) as Manifest;
    expect([stored.spec, stored.metadata.labels]).toEqual([shipped.spec ?? {}, shipped.metadata.labels]);
  });

  it('the check can fail: a HookGuard with a field its schema does not have is refused, with the field named', async () => {
    const shipped = find(defaults, 'HookGuard', 'hookguard');
    const object = { ...shipped, metadata: { name: 'hookguard-chart-admission' }, spec: { mode: 'enforce' } };
    const created = await run(kubectlPath, ['create', '--dry-run=server', '-o', 'json', '-f', '-'], {
      input: JSON.stringify(object),
    });
    expect([created.status, created.stderr]).toEqual([
      1,
      'Error from server (BadRequest): error when creating "STDIN": HookGuard in version "v1alpha1" cannot be handled as a HookGuard: strict decoding error: unknown field "spec.mode"\n',
    ]);
  });

  it.each([
    ['defaults', () => defaults, CHART_PODS],
    ['every workload and pod knob on', () => everything, CHART_PODS],
  ])('runs every Pod under Pod Security "restricted" with no warning: %s', async (_name, objects, names) => {
    const ns = await newNamespace('chart-restricted', {
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
    });
    namespaces.push(ns);
    const pods = podsOf(objects());
    expect(pods.map((pod) => pod.metadata.name)).toEqual(names);
    const accounts = new Set(pods.map((pod) => pod.spec.serviceAccountName as string | undefined).filter(Boolean));
    await createServiceAccounts(ns, [...accounts] as string[]);
    for (const pod of pods) {
      const created = await dryRunCreate(ns, pod);
      expect([pod.metadata.name, created.status, created.stderr]).toEqual([pod.metadata.name, 0, '']);
    }
    // The check can fail: the Deployment's Pod with privilege escalation allowed is refused, naming the container.
    const [pod] = pods.filter((each) => each.metadata.name.startsWith('deployment-'));
    const escalating = structuredClone(pod!);
    escalating.spec.containers[0].securityContext.allowPrivilegeEscalation = true;
    const refused = await dryRunCreate(ns, escalating);
    expect([refused.status, refused.stderr]).toEqual([
      1,
      `Error from server (Forbidden): error when creating "STDIN": pods "${pod!.metadata.name}" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "hookguard" must set securityContext.allowPrivilegeEscalation=false)\n`,
    ]);
  });
});
