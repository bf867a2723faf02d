// The Helm chart (charts/hookguard), rendered by the real helm 4.3.2 and helm 3.21.4 over a matrix of values, and
// checked against the Kubernetes schema (kubernetes-models), the settings the issue requires, Pod Security
// "restricted", hookguard itself (its config loader, its sweep command, its hook test), and its values schema.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { KEYS } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { readHook } from '../../src/core/hook.js';
import { runCommand } from '../support/command.js';
import { loadFixtures } from '../support/fixtures.js';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { probeJob } from '../../src/controllers/selftest/probe.js';
import { Metrics } from '../../src/http/metrics.js';
import { metricNames, promqlErrors } from '../support/promql.js';
import { helmAndKubectl, repoRoot } from '../support/k8s-tools.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import {
  CHART,
  evaluateMatchCondition,
  find,
  helmBinary,
  helmTemplate,
  HOOKGUARD_OBJECT,
  render,
  renderChart,
  renderKustomization,
  runHealthCheck,
  type ChartRender,
  type Manifest,
} from '../support/manifests.js';

const execFileAsync = promisify(execFile);

interface Case {
  name: string;
  namespace: string;
  values: Record<string, any>;
}

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const CA_BUNDLE = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');

/** Every knob of issue 28's list that a platform sets, away from its default. */
const PLATFORM_KNOBS = {
  commonLabels: { team: 'platform', 'cost-center': 'c42' },
  podAnnotations: { 'sidecar.istio.io/inject': 'false', 'checksum/config': 'not this' },
  podLabels: { tier: 'admission' },
  serviceAccount: {
    create: true,
    name: '',
    annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/hookguard' },
  },
  podSecurityContext: {
    runAsNonRoot: true,
    runAsUser: 10001,
    runAsGroup: 10001,
    fsGroup: 10001,
    seccompProfile: { type: 'RuntimeDefault' },
  },
  extraEnv: [
    { name: 'HTTPS_PROXY', value: 'http://proxy.internal:3128' },
    { name: 'NODE_OPTIONS', value: '--max-old-space-size=192' },
  ],
  extraVolumes: [{ name: 'corporate-ca', configMap: { name: 'corporate-ca' } }],
  extraVolumeMounts: [{ name: 'corporate-ca', mountPath: '/etc/ssl/corporate', readOnly: true }],
  readinessProbe: { periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 2 },
  livenessProbe: { initialDelaySeconds: 5, periodSeconds: 20, timeoutSeconds: 5, failureThreshold: 5 },
  service: { annotations: { 'prometheus.io/scrape': 'false' } },
  webhook: {
    namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['sandbox'] }] },
    objectSelector: { matchExpressions: [{ key: 'hookguard.io/ignore', operator: 'DoesNotExist' }] },
  },
  nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'system' },
  sweep: {
    priorityClassName: 'batch-low',
    nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'batch' },
    tolerations: [{ key: 'batch', operator: 'Exists', effect: 'NoSchedule' }],
    affinity: {
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 1, preference: { matchExpressions: [{ key: 'spot', operator: 'In', values: ['true'] }] } },
        ],
      },
    },
  },
};

/** The matrix: each value of the issue's list set away from its default in at least one case. */
const CASES: Case[] = [
  { name: 'defaults, in hookguard', namespace: 'hookguard', values: {} },
  { name: 'audit mode, in platform-tools', namespace: 'platform-tools', values: { mode: 'audit' } },
  {
    name: 'cert-manager, a pinned Argo CD, in security',
    namespace: 'security',
    values: {
      certificates: { mode: 'cert-manager' },
      argocd: { version: '3.1.4', instanceVersions: { 'openshift-gitops': '3.1.8' } },
    },
  },
  {
    name: 'a provided Secret, GKE private cluster port, everything opt-in on',
    namespace: 'platform-tools',
    values: {
      certificates: { mode: 'secret', secretName: 'hookguard-serving', caBundle: CA_BUNDLE },
      webhook: { port: 10250, timeoutSeconds: 10, failurePolicy: 'Fail' },
      probePort: 9090,
      networkPolicy: { enabled: true, controlPlaneCIDRs: ['172.16.0.0/28'], monitoringNamespace: 'observability' },
      serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
      prometheusRule: { enabled: true },
      grafanaDashboard: { enabled: true, namespace: 'observability' },
      excludedNamespaces: ['istio-system', 'platform-tools'],
      sweep: {
        schedule: '*/10 * * * *',
        profiles: ['argocd-hook', 'argo-workflows'],
        resources: { requests: { cpu: '20m', memory: '128Mi' }, limits: { memory: '384Mi' } },
      },
      argocd: { remote: { 'system:serviceaccount:kube-system:argocd-manager': '2.14.3' } },
      image: { repository: 'my.registry/hookguard', tag: '0.1.0', digest: DIGEST, pullPolicy: 'Always' },
      imagePullSecrets: [{ name: 'registry' }],
      replicaCount: 3,
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
      priorityClassName: 'system-cluster-critical',
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'platform', effect: 'NoSchedule' }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['system'] }] }],
          },
        },
      },
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule' },
      ],
      podDisruptionBudget: { enabled: true, maxUnavailable: 2 },
      config: { log: { level: 'debug' }, server: { bodyLimitBytes: 4_000_000 } },
    },
  },
  {
    name: 'the knobs platforms set, in platform',
    namespace: 'platform',
    values: PLATFORM_KNOBS,
  },
  {
    // OpenShift: no value is needed (the pods set no UID, so restricted-v2 assigns one from the namespace's range);
    // what an OpenShift GitOps user sets beside, and the opt-ins they would turn on.
    name: 'OpenShift-like, in openshift-hookguard',
    namespace: 'openshift-hookguard',
    values: {
      argocd: { instanceVersions: { 'openshift-gitops': '2.14.8' } },
      excludedNamespaces: ['openshift-gitops'],
      serviceMonitor: { enabled: true },
      prometheusRule: { enabled: true },
    },
  },
  {
    name: 'no sweep, no self-test, no PodDisruptionBudget',
    namespace: 'hookguard',
    values: { sweep: { enabled: false }, selfTest: { enabled: false }, podDisruptionBudget: { enabled: false } },
  },
];

const rendered = new Map<string, Manifest[]>();
const dir = mkdtempSync(join(tmpdir(), 'hookguard-chart-'));
const chartValues = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, any>;

const options = (each: Case, helm: 3 | 4 = 4): ChartRender => ({
  namespace: each.namespace,
  values: each.values,
  includeCrds: true,
  helm,
});

beforeAll(async () => {
  for (const each of CASES) rendered.set(each.name, await renderChart(options(each)));
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const objects = (each: Case) => rendered.get(each.name) ?? [];
/** A value of the case, or the chart's default. */
const value = (each: Case, path: string): any => {
  const read = (from: any) => path.split('.').reduce((at, key) => (at === undefined ? undefined : at?.[key]), from);
  const given = read(each.values);
  return given === undefined ? read(chartValues) : given;
};
/** A value as the templates render it: an empty string, list or mapping is left out. */
const asRendered = (given: unknown): unknown =>
  given === '' || given === null || (typeof given === 'object' && Object.keys(given).length === 0) ? undefined : given;
const certificateMode = (each: Case) => value(each, 'certificates.mode') as 'self' | 'cert-manager' | 'secret';

const CLUSTER_SCOPED = [
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'CustomResourceDefinition',
  'HookGuard',
];

/** What each case renders, derived from its values. */
function expectedNames(each: Case): string[] {
  const mode = certificateMode(each);
  return [
    'CustomResourceDefinition/hookguards.hookguard.io',
    'ConfigMap/hookguard-config',
    'ServiceAccount/hookguard',
    'ClusterRole/hookguard-discovery',
    'ClusterRoleBinding/hookguard-discovery',
    'Role/hookguard-leader-election',
    'RoleBinding/hookguard-leader-election',
    'Service/hookguard',
    'Deployment/hookguard',
    'MutatingWebhookConfiguration/hookguard',
    'ValidatingWebhookConfiguration/hookguard',
    ...(value(each, 'podDisruptionBudget.enabled') ? ['PodDisruptionBudget/hookguard'] : []),
    ...(value(each, 'selfTest.enabled')
      ? [
          `Namespace/${value(each, 'selfTest.namespace')}`,
          'Role/hookguard-self-test',
          'RoleBinding/hookguard-self-test',
          'ClusterRole/hookguard-status',
          'ClusterRoleBinding/hookguard-status',
          'HookGuard/hookguard',
        ]
      : []),
    ...(value(each, 'hookWatch.enabled')
      ? ['ClusterRole/hookguard-hook-watcher', 'ClusterRoleBinding/hookguard-hook-watcher']
      : []),
    ...(value(each, 'sweep.enabled')
      ? [
          'ServiceAccount/hookguard-sweep',
          'ClusterRole/hookguard-sweep',
          'ClusterRoleBinding/hookguard-sweep',
          'CronJob/hookguard-sweep',
          'ValidatingAdmissionPolicy/hookguard-sweep-finalizers-only',
          'ValidatingAdmissionPolicyBinding/hookguard-sweep-finalizers-only',
        ]
      : []),
    ...(mode === 'self'
      ? [
          'Role/hookguard-certificates',
          'RoleBinding/hookguard-certificates',
          'ClusterRole/hookguard-webhook-ca',
          'ClusterRoleBinding/hookguard-webhook-ca',
        ]
      : []),
    ...(mode === 'cert-manager'
      ? [
          'Issuer/hookguard-selfsigned',
          'Issuer/hookguard-ca',
          'Certificate/hookguard-ca',
          'Certificate/hookguard-serving',
        ]
      : []),
    ...(value(each, 'networkPolicy.enabled') ? ['NetworkPolicy/hookguard'] : []),
    ...(value(each, 'serviceMonitor.enabled') ? ['ServiceMonitor/hookguard'] : []),
    ...(value(each, 'prometheusRule.enabled') ? ['PrometheusRule/hookguard'] : []),
    ...(value(each, 'grafanaDashboard.enabled') ? ['ConfigMap/hookguard-dashboard'] : []),
    // Hooks (helm template prints them): helm test, and the upgrade's CRD and the uninstall's webhooks.
    ...(value(each, 'selfTest.enabled') ? ['Pod/hookguard-test'] : []),
    'ServiceAccount/hookguard-lifecycle',
    'ClusterRole/hookguard-lifecycle',
    'ClusterRoleBinding/hookguard-lifecycle',
    'ConfigMap/hookguard-crds',
    'Job/hookguard-upgrade-crds',
    'Job/hookguard-delete-webhooks',
  ].sort();
}

const extraMounts = (each: Case) =>
  Object.fromEntries((value(each, 'extraVolumeMounts') as Manifest[]).map((mount) => [mount.name, mount.mountPath]));

/** Every pod the chart runs: the server's, the sweep's, helm test's, the lifecycle hooks'. */
const podsOf = (each: Case): Manifest[] => [
  find(objects(each), 'Deployment', 'hookguard').spec.template.spec,
  ...(value(each, 'sweep.enabled')
    ? [find(objects(each), 'CronJob', 'hookguard-sweep').spec.jobTemplate.spec.template.spec]
    : []),
  ...(value(each, 'selfTest.enabled') ? [find(objects(each), 'Pod', 'hookguard-test').spec] : []),
  find(objects(each), 'Job', 'hookguard-upgrade-crds').spec.template.spec,
  find(objects(each), 'Job', 'hookguard-delete-webhooks').spec.template.spec,
];

const excludedNamespaces = (each: Case) => [
  ...new Set(['kube-system', each.namespace, ...(value(each, 'excludedNamespaces') as string[])]),
];

/**
 * The rendered config file as hookguard's own loader reads it. server.probePort and certificates are the keys the
 * certs-ports change adds to src/config/keys.ts (issue 21.2, 21.3); until it is merged they are taken out here,
 * and only then, so that this test checks them with the real loader as soon as they exist.
 */
function loadRenderedConfig(each: Case, name: string) {
  const text = find(objects(each), 'ConfigMap', 'hookguard-config').data['config.yaml'] as string;
  const settings = parse(text) as Record<string, any>;
  if (!('probePort' in KEYS.server)) delete settings.server.probePort;
  if (!('certificates' in KEYS)) delete settings.certificates;
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, JSON.stringify(settings));
  return { text, settings: parse(text) as Record<string, any>, file, config: loadConfig({ file }) };
}

const HOOK_CONDITION = [
  {
    name: 'has-hook-annotation',
    expression:
      'object != null && has(object.metadata) && has(object.metadata.annotations) && ' +
      "('helm.sh/hook' in object.metadata.annotations || 'argocd.argoproj.io/hook' in object.metadata.annotations)",
  },
];
const rule = (group: string, resource: string, operations: string[]) => ({
  apiGroups: [group],
  apiVersions: ['v1'],
  resources: [resource],
  operations,
  scope: 'Namespaced',
});
const POD_LABELS = { 'app.kubernetes.io/name': 'hookguard', 'app.kubernetes.io/component': 'webhook' };

describe.each(CASES)('the chart: $name', (each) => {
  const ns = each.namespace;

  it('renders exactly the objects its values ask for, each valid against the Kubernetes schema', () => {
    const names = objects(each).map((object) => `${object.kind}/${object.metadata.name}`);
    expect(names.sort()).toEqual(expectedNames(each));
    for (const object of objects(each)) {
      const name = `${object.kind}/${object.metadata.name}`;
      // The HookGuard object is validated by the chart's CRD as the real API server serves it: test/cluster/
      // chart-admission.test.ts (its content: HOOKGUARD_OBJECT, below).
      if (object.kind !== 'HookGuard') expect(() => assertValidKubeObject(object), name).not.toThrow();
    }
  });

  it(`labels everything part-of hookguard and puts every namespaced object in ${ns} (the self-test Role in its namespace)`, () => {
    for (const object of objects(each)) {
      const name = `${object.kind}/${object.metadata.name}`;
      if (object.kind === 'CustomResourceDefinition') continue; // crds/ is not templated
      expect(object.metadata.labels?.['app.kubernetes.io/part-of'], name).toBe('hookguard');
      expect(object.metadata.labels?.['app.kubernetes.io/instance'], name).toBe('hookguard');
      const inSelfTestNamespace = object.metadata.name === 'hookguard-self-test';
      // The Grafana dashboard goes where Grafana's sidecar looks (grafanaDashboard.namespace), by default here.
      const dashboardNamespace =
        object.metadata.name === 'hookguard-dashboard' && value(each, 'grafanaDashboard.namespace');
      expect(object.metadata.namespace, name).toBe(
        CLUSTER_SCOPED.includes(object.kind)
          ? undefined
          : inSelfTestNamespace
            ? value(each, 'selfTest.namespace')
            : dashboardNamespace || ns,
      );
    }
  });

  it(`names no namespace but ${ns} for itself: no "hookguard" namespace left in any reference`, async () => {
    const { stdout } = await helmTemplate(options(each));
    if (ns !== 'hookguard') {
      for (const text of [
        'namespace: hookguard\n',
        'hookguard.hookguard.svc',
        ':hookguard:',
        'hookguard/hookguard-serving',
      ])
        expect(stdout).not.toContain(text);
    }
    for (const binding of objects(each).filter((object) => object.kind.endsWith('RoleBinding')))
      expect(binding.subjects.map((subject: Manifest) => subject.namespace)).toEqual([ns]);
  });

  it(`registers both webhooks: v1 only, no side effects, ${value(each, 'webhook.failurePolicy')}, ${value(each, 'webhook.timeoutSeconds')} s, the hook match condition, the Service in ${ns}, kube-system and ${ns} left out`, () => {
    const mutating = find(objects(each), 'MutatingWebhookConfiguration', 'hookguard');
    const validating = find(objects(each), 'ValidatingWebhookConfiguration', 'hookguard');
    const common = {
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: value(each, 'webhook.failurePolicy'),
      timeoutSeconds: value(each, 'webhook.timeoutSeconds'),
      matchPolicy: 'Equivalent',
      // webhook.namespaceSelector's expressions after hookguard's own exclusion: both hold.
      namespaceSelector: {
        matchExpressions: [
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: excludedNamespaces(each) },
          ...(value(each, 'webhook.namespaceSelector.matchExpressions') ?? []),
        ],
      },
      ...(asRendered(value(each, 'webhook.objectSelector'))
        ? { objectSelector: value(each, 'webhook.objectSelector') }
        : {}),
      matchConditions: HOOK_CONDITION,
    };
    const clientConfig = (path: string) => ({
      service: { name: 'hookguard', namespace: ns, path, port: 443 },
      ...(certificateMode(each) === 'secret' ? { caBundle: CA_BUNDLE } : {}),
    });
    expect(mutating.webhooks).toEqual([
      {
        ...common,
        name: 'mutate.hookguard.io',
        reinvocationPolicy: 'IfNeeded',
        clientConfig: clientConfig('/mutate'),
        rules: [rule('batch', 'jobs', ['CREATE', 'UPDATE']), rule('', 'pods', ['CREATE'])],
      },
    ]);
    expect(validating.webhooks).toEqual([
      {
        ...common,
        name: 'validate.hookguard.io',
        clientConfig: clientConfig('/validate'),
        rules: [rule('batch', 'jobs', ['CREATE']), rule('', 'pods', ['CREATE'])],
      },
    ]);
    const annotations =
      certificateMode(each) === 'cert-manager'
        ? { 'cert-manager.io/inject-ca-from': `${ns}/hookguard-serving` }
        : undefined;
    expect([mutating.metadata.annotations, validating.metadata.annotations]).toEqual([annotations, annotations]);
  });

  it(`serves the webhook on port ${value(each, 'webhook.port')} behind the Service's 443, probes and /metrics over plain HTTP on ${value(each, 'probePort')}`, () => {
    const deployment = find(objects(each), 'Deployment', 'hookguard');
    const service = find(objects(each), 'Service', 'hookguard');
    const [container] = deployment.spec.template.spec.containers;
    expect(deployment.spec.selector.matchLabels).toEqual(POD_LABELS);
    // podLabels and commonLabels beside the selector's, which they cannot change.
    expect(deployment.spec.template.metadata.labels).toEqual({
      ...value(each, 'commonLabels'),
      ...value(each, 'podLabels'),
      ...POD_LABELS,
    });
    expect(service.spec.selector).toEqual(POD_LABELS);
    expect(service.metadata.annotations).toEqual(asRendered(value(each, 'service.annotations')));
    expect(container.ports).toEqual([
      { name: 'https', containerPort: value(each, 'webhook.port'), protocol: 'TCP' },
      { name: 'http-probes', containerPort: value(each, 'probePort'), protocol: 'TCP' },
    ]);
    expect(service.spec.ports).toEqual([
      { name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' },
      { name: 'http-metrics', port: value(each, 'probePort'), targetPort: 'http-probes', protocol: 'TCP' },
    ]);
    expect(container.readinessProbe).toEqual({
      httpGet: { path: '/readyz', port: 'http-probes', scheme: 'HTTP' },
      ...value(each, 'readinessProbe'),
    });
    expect(container.livenessProbe).toEqual({
      httpGet: { path: '/healthz', port: 'http-probes', scheme: 'HTTP' },
      ...value(each, 'livenessProbe'),
    });
    const { config } = loadRenderedConfig(each, 'ports');
    expect(config.server.port).toBe(value(each, 'webhook.port'));
  });

  it(`runs ${value(each, 'replicaCount')} replicas that stay available through an upgrade, spread, scheduled as the values say`, () => {
    const deployment = find(objects(each), 'Deployment', 'hookguard');
    const { spec } = deployment;
    expect(spec.replicas).toBe(value(each, 'replicaCount'));
    expect(spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const pod = spec.template.spec;
    const given = each.values.topologySpreadConstraints as Manifest[] | undefined;
    expect(pod.topologySpreadConstraints).toEqual(
      given
        ? given.map((constraint) => ({ ...constraint, labelSelector: { matchLabels: POD_LABELS } }))
        : ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'].map((topologyKey) => ({
            maxSkew: 1,
            topologyKey,
            whenUnsatisfiable: 'ScheduleAnyway',
            labelSelector: { matchLabels: POD_LABELS },
            matchLabelKeys: ['pod-template-hash'],
          })),
    );
    const [container] = pod.containers;
    expect(container.resources).toEqual(value(each, 'resources'));
    const image = each.values.image as Manifest | undefined;
    expect([container.image, container.imagePullPolicy]).toEqual(
      image
        ? [`${image.repository}:${image.tag}@${image.digest}`, image.pullPolicy]
        : ['hookguard:0.1.0', 'IfNotPresent'],
    );
    const scheduling = ['imagePullSecrets', 'priorityClassName', 'nodeSelector', 'tolerations', 'affinity'];
    for (const key of scheduling) expect(pod[key], key).toEqual(asRendered(value(each, key)));
    expect(pod.nodeSelector['kubernetes.io/os']).toBe('linux');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(DEFAULT_SHUTDOWN_TIMEOUT_S);
    if (value(each, 'podDisruptionBudget.enabled'))
      expect(find(objects(each), 'PodDisruptionBudget', 'hookguard').spec).toEqual({
        maxUnavailable: value(each, 'podDisruptionBudget.maxUnavailable'),
        selector: { matchLabels: POD_LABELS },
      });
  });

  it(`gives the server a config file hookguard itself accepts, in ${value(each, 'mode')} mode, with the certificate from ${certificateMode(each)}`, () => {
    const { settings, config } = loadRenderedConfig(each, 'server');
    const deployment = find(objects(each), 'Deployment', 'hookguard');
    const [container] = deployment.spec.template.spec.containers;
    expect(container.args).toEqual(['serve']);
    expect(container.env).toEqual([
      { name: 'HOOKGUARD_CONFIG', value: '/etc/hookguard/config/config.yaml' },
      ...value(each, 'extraEnv'),
    ]);
    expect(config.mode).toBe(value(each, 'mode'));
    expect(config.excludedNamespaces).toEqual(excludedNamespaces(each));
    expect(config.leaderElection.leaseNamespace).toBe(ns);
    expect([config.selfTest.enabled, config.selfTest.namespace]).toEqual([
      value(each, 'selfTest.enabled'),
      value(each, 'selfTest.namespace'),
    ]);
    expect(config.sweep.profiles).toEqual(value(each, 'sweep.profiles'));
    expect(config.argocd.version).toBe(value(each, 'argocd.version') ?? null);
    expect(config.argocd.instanceVersions).toEqual(value(each, 'argocd.instanceVersions'));
    if (each.values.argocd?.remote) expect(config.argocd.remote).toEqual(each.values.argocd.remote);
    if (each.values.config?.log) expect(config.log.level).toBe(each.values.config.log.level);
    expect(settings.server.probePort).toBe(value(each, 'probePort'));
    const mounts = Object.fromEntries(container.volumeMounts.map((mount: Manifest) => [mount.name, mount.mountPath]));
    const volumes = Object.fromEntries(
      deployment.spec.template.spec.volumes.map((volume: Manifest) => [volume.name, volume]),
    );
    expect(volumes.config.configMap).toEqual({ name: 'hookguard-config' });
    const secretName = value(each, 'certificates.secretName');
    if (certificateMode(each) === 'self') {
      // No key in the chart, no Secret mounted: the server keeps its certificate in the Secret itself.
      expect(settings.certificates).toEqual({
        mode: 'self',
        secretName,
        namespace: ns,
        serviceName: 'hookguard',
        webhookName: 'hookguard',
      });
      expect(config.server.tls).toMatchObject({ certFile: null, keyFile: null });
      expect(mounts).toEqual({ config: '/etc/hookguard/config', tmp: '/tmp', ...extraMounts(each) });
    } else {
      expect(settings.certificates).toEqual({ mode: 'files' });
      expect(config.server.tls).toMatchObject({
        certFile: '/etc/hookguard/tls/tls.crt',
        keyFile: '/etc/hookguard/tls/tls.key',
      });
      expect(mounts).toEqual({
        tls: '/etc/hookguard/tls',
        config: '/etc/hookguard/config',
        tmp: '/tmp',
        ...extraMounts(each),
      });
      expect(volumes.tls.secret).toEqual({ secretName });
    }
    if (certificateMode(each) === 'cert-manager') {
      const serving = find(objects(each), 'Certificate', 'hookguard-serving').spec;
      expect([serving.secretName, serving.dnsNames]).toEqual([
        secretName,
        [`hookguard.${ns}.svc`, `hookguard.${ns}.svc.cluster.local`],
      ]);
    }
    expect(objects(each).filter((object) => object.kind === 'Secret')).toEqual([]);
    // The pods roll when the config changes.
    expect(deployment.spec.template.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
  });

  it.runIf(certificateMode(each) === 'self')(
    // src/tls/certificate-api.ts reads, creates and replaces the Secret, and reads and JSON-patches the webhook
    // configurations: nothing else (issue 25.9: no patch on the Secret, no update on the configurations).
    'lets the server keep its own certificate: get, update on its Secret, get, patch on both webhook configurations, by name',
    () => {
      expect(find(objects(each), 'Role', 'hookguard-certificates').rules).toEqual([
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['hookguard-tls'],
          verbs: ['get', 'update'],
        },
      ]);
      expect(find(objects(each), 'ClusterRole', 'hookguard-webhook-ca').rules).toEqual([
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
          resourceNames: ['hookguard'],
          verbs: ['get', 'patch'],
        },
      ]);
      for (const [kind, name] of [
        ['RoleBinding', 'hookguard-certificates'],
        ['ClusterRoleBinding', 'hookguard-webhook-ca'],
      ] as const)
        expect(find(objects(each), kind, name).subjects).toEqual([
          { kind: 'ServiceAccount', name: 'hookguard', namespace: ns },
        ]);
    },
  );

  it.runIf(value(each, 'sweep.enabled'))(
    `runs the sweep on ${value(each, 'sweep.schedule')}, one run at a time, as its own service account, ${value(each, 'mode') === 'audit' ? 'as a dry run' : 'with --apply'}, with a config the CLI accepts`,
    async () => {
      const cronJob = find(objects(each), 'CronJob', 'hookguard-sweep');
      expect(cronJob.spec).toMatchObject({ schedule: value(each, 'sweep.schedule'), concurrencyPolicy: 'Forbid' });
      const pod = cronJob.spec.jobTemplate.spec.template.spec;
      expect(pod.serviceAccountName).toBe('hookguard-sweep');
      const [container] = pod.containers;
      expect(container.args).toEqual(value(each, 'mode') === 'audit' ? ['sweep'] : ['sweep', '--apply']);
      expect(container.resources).toEqual(value(each, 'sweep.resources'));
      expect(container.image).toBe(
        find(objects(each), 'Deployment', 'hookguard').spec.template.spec.containers[0].image,
      );
      expect(container.env).toEqual([
        { name: 'HOOKGUARD_CONFIG', value: '/etc/hookguard/config/config.yaml' },
        // npm run bench:sweep measures the sweep with this NODE_OPTIONS (docs/sweep.md: the sweep at scale).
        { name: 'NODE_OPTIONS', value: '--max-semi-space-size=1' },
        ...(value(each, 'extraEnv') as Manifest[]).filter((env) => env.name !== 'NODE_OPTIONS'),
      ]);
      // The sweep's own scheduling; null takes the server's.
      for (const key of ['priorityClassName', 'nodeSelector', 'tolerations'])
        expect(pod[key], key).toEqual(asRendered(value(each, `sweep.${key}`) ?? value(each, key)));
      expect(pod.affinity).toEqual(asRendered(value(each, 'sweep.affinity')));
      const { file } = loadRenderedConfig(each, 'sweep');
      const run = await runCommand(container.args, undefined, { HOOKGUARD_CONFIG: file, HOME: dir });
      expect([run.status, run.stderr]).toEqual([
        2,
        'hookguard sweep: no cluster to sweep: set KUBECONFIG, or run in a pod with a service account\n',
      ]);
      const policy = find(objects(each), 'ValidatingAdmissionPolicy', 'hookguard-sweep-finalizers-only');
      expect(policy.spec.matchConditions).toEqual([
        {
          name: 'only-the-sweep',
          expression: `request.userInfo.username == 'system:serviceaccount:${ns}:hookguard-sweep'`,
        },
      ]);
    },
  );

  it('grants exactly what discovery, the namespace watch, the Lease and the sweep need, each to its own service account', () => {
    const { config } = loadRenderedConfig(each, 'rbac');
    expect(find(objects(each), 'ClusterRole', 'hookguard-discovery').rules).toEqual([
      { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
    ]);
    expect(find(objects(each), 'Role', 'hookguard-leader-election')).toMatchObject({
      metadata: { namespace: config.leaderElection.leaseNamespace },
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          // In certificates.mode self the certificates' keeper is elected with a Lease of its own.
          resourceNames: [
            config.leaderElection.leaseName,
            ...(config.certificates.mode === 'self' ? [`${config.leaderElection.leaseName}-certificates`] : []),
          ],
          verbs: ['get', 'update'],
        },
      ],
    });
    const bindings: Array<[string, string, string]> = [
      ['ClusterRoleBinding', 'hookguard-discovery', 'hookguard'],
      ['RoleBinding', 'hookguard-leader-election', 'hookguard'],
    ];
    if (value(each, 'sweep.enabled')) {
      expect(find(objects(each), 'ClusterRole', 'hookguard-sweep').rules).toEqual([
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['list', 'get', 'patch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['list', 'get', 'patch'] },
        { apiGroups: ['argoproj.io'], resources: ['workflows'], verbs: ['get'] },
        { apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['get'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
      ]);
      bindings.push(['ClusterRoleBinding', 'hookguard-sweep', 'hookguard-sweep']);
    }
    for (const [kind, name, account] of bindings) {
      const found = find(objects(each), kind, name);
      expect([found.roleRef, found.subjects]).toEqual([
        { apiGroup: 'rbac.authorization.k8s.io', kind: kind.replace('Binding', ''), name },
        [{ kind: 'ServiceAccount', name: account, namespace: ns }],
      ]);
    }
  });

  it.runIf(value(each, 'selfTest.enabled'))(
    'gives the self-test a namespace both webhooks select and hookguard judges, its dry-run create, the HookGuard status',
    () => {
      const { config } = loadRenderedConfig(each, 'self-test');
      const namespace = find(objects(each), 'Namespace', config.selfTest.namespace);
      expect(namespace.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
      expect(config.excludedNamespaces).not.toContain(config.selfTest.namespace);
      for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
        const [webhook] = find(objects(each), kind, 'hookguard').webhooks;
        expect(webhook.namespaceSelector.matchExpressions[0].values).not.toContain(config.selfTest.namespace);
        expect(evaluateMatchCondition(webhook.matchConditions[0].expression, probeJob(config.selfTest.namespace))).toBe(
          true,
        );
      }
      expect(find(objects(each), 'Role', 'hookguard-self-test').rules).toEqual([
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create'] },
      ]);
      expect(find(objects(each), 'ClusterRole', 'hookguard-status').rules).toEqual([
        { apiGroups: ['hookguard.io'], resources: ['hookguards'], resourceNames: ['hookguard'], verbs: ['get'] },
        {
          apiGroups: ['hookguard.io'],
          resources: ['hookguards/status'],
          resourceNames: ['hookguard'],
          verbs: ['update'],
        },
      ]);
      for (const [kind, name] of [
        ['RoleBinding', 'hookguard-self-test'],
        ['ClusterRoleBinding', 'hookguard-status'],
      ] as const)
        expect(find(objects(each), kind, name).subjects).toEqual([
          { kind: 'ServiceAccount', name: 'hookguard', namespace: ns },
        ]);
      const { labels, ...metadata } = find(objects(each), 'HookGuard', 'hookguard').metadata;
      expect({ ...find(objects(each), 'HookGuard', 'hookguard'), metadata }).toEqual(HOOKGUARD_OBJECT);
      expect(labels).toMatchObject({ 'app.kubernetes.io/part-of': 'hookguard' });
    },
  );

  it('passes Pod Security "restricted" in every pod it runs, with a read-only root file system and no CPU limit', () => {
    for (const pod of podsOf(each)) expect(restrictedViolations(pod)).toEqual([]);
  });

  const forcedUid = value(each, 'podSecurityContext.runAsUser') as number | undefined;
  it(`${forcedUid === undefined ? 'passes' : 'is refused by'} OpenShift's restricted-v2 in a namespace with the UID range 1000680000/10000${forcedUid === undefined ? ': no UID forced' : `: runAsUser ${forcedUid} is outside it`}`, () => {
    const violations = podsOf(each).flatMap((pod) => restrictedV2Violations(pod, OPENSHIFT_UID_RANGE));
    expect(violations).toEqual(
      forcedUid === undefined
        ? []
        : podsOf(each).flatMap((pod) => [
            ...pod.containers.map(
              (container: Manifest) => `container ${container.name}: runAsUser ${forcedUid} outside 1000680000/10000`,
            ),
            `fsGroup ${forcedUid} outside 1000680000/10000`,
          ]),
    );
  });

  it('renders the same objects with Helm 3.21.4 as with Helm 4.3.2 (Helm 3 orders unknown kinds otherwise)', async () => {
    const byName = (list: Manifest[]) =>
      new Map(list.map((object) => [`${object.kind}/${object.metadata.namespace}/${object.metadata.name}`, object]));
    expect(byName(await renderChart(options(each, 3)))).toEqual(byName(objects(each)));
  });
});

describe('the lifecycle hooks (issue 28.4)', () => {
  const each = CASES[0] as Case;
  const annotations = (object: Manifest) => object.metadata.annotations as Record<string, string>;

  it('helm test runs `hookguard self-test` as the server itself, with its config', () => {
    const pod = find(objects(each), 'Pod', 'hookguard-test');
    expect(annotations(pod)).toEqual({ 'helm.sh/hook': 'test', 'helm.sh/hook-delete-policy': 'before-hook-creation' });
    expect(pod.spec.serviceAccountName).toBe('hookguard');
    expect(pod.spec.containers[0].args).toEqual(['self-test']);
    expect(pod.spec.volumes).toEqual([{ name: 'config', configMap: { name: 'hookguard-config' } }]);
  });

  it('applies the CRD of crds/ before an upgrade, and deletes both webhook configurations before an uninstall', () => {
    const upgrade = find(objects(each), 'Job', 'hookguard-upgrade-crds');
    const uninstall = find(objects(each), 'Job', 'hookguard-delete-webhooks');
    expect([annotations(upgrade)['helm.sh/hook'], upgrade.spec.template.spec.containers[0].args]).toEqual([
      'pre-upgrade',
      ['chart-hook', 'upgrade-crds', '/etc/hookguard/crds/hookguards.hookguard.io.yaml'],
    ]);
    expect(parse(find(objects(each), 'ConfigMap', 'hookguard-crds').data['hookguards.hookguard.io.yaml'])).toEqual(
      find(objects(each), 'CustomResourceDefinition', 'hookguards.hookguard.io'),
    );
    expect([annotations(uninstall)['helm.sh/hook'], uninstall.spec.template.spec.containers[0].args]).toEqual([
      'pre-delete',
      ['chart-hook', 'delete-webhooks', 'hookguard'],
    ]);
    // What runs them exists before them (weight -10 < 0) and can do only that.
    for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'])
      expect(annotations(find(objects(each), kind, 'hookguard-lifecycle')), kind).toMatchObject({
        'helm.sh/hook': 'pre-upgrade,pre-delete',
        'helm.sh/hook-weight': '-10',
      });
    expect(find(objects(each), 'ClusterRole', 'hookguard-lifecycle').rules).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['hookguards.hookguard.io'],
        verbs: ['patch', 'create'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
        resourceNames: ['hookguard'],
        verbs: ['delete'],
      },
    ]);
  });
});

describe('the knobs platforms set (issue 28.1)', () => {
  const each = CASES.find((candidate) => candidate.values === PLATFORM_KNOBS)!;

  it("labels every object with commonLabels, under the chart's own labels", () => {
    for (const object of objects(each)) {
      if (object.kind === 'CustomResourceDefinition') continue; // crds/ is not templated
      expect(object.metadata.labels, `${object.kind}/${object.metadata.name}`).toMatchObject(
        PLATFORM_KNOBS.commonLabels,
      );
    }
  });

  it("gives every pod podLabels, commonLabels and podAnnotations, the chart's checksum winning", () => {
    const cronJob = find(objects(each), 'CronJob', 'hookguard-sweep');
    for (const template of [
      find(objects(each), 'Deployment', 'hookguard').spec.template,
      cronJob.spec.jobTemplate.spec.template,
    ]) {
      expect(template.metadata.labels).toMatchObject({ tier: 'admission', team: 'platform', 'cost-center': 'c42' });
      expect(template.metadata.annotations['sidecar.istio.io/inject']).toBe('false');
      expect(template.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(cronJob.spec.jobTemplate.spec.template.metadata.labels['app.kubernetes.io/component']).toBe('sweep');
  });

  it('annotates the service account, forces the UID given, mounts the extra volumes', () => {
    expect(find(objects(each), 'ServiceAccount', 'hookguard').metadata.annotations).toEqual(
      PLATFORM_KNOBS.serviceAccount.annotations,
    );
    const pod = find(objects(each), 'Deployment', 'hookguard').spec.template.spec;
    expect(pod.securityContext).toEqual(PLATFORM_KNOBS.podSecurityContext);
    expect(pod.volumes.at(-1)).toEqual(PLATFORM_KNOBS.extraVolumes[0]);
    expect(pod.containers[0].volumeMounts.at(-1)).toEqual(PLATFORM_KNOBS.extraVolumeMounts[0]);
  });

  it.each([3, 4] as const)('helm %s refuses what would break hookguard, naming it', async (major) => {
    const refused = async (values: Record<string, unknown>) => {
      const run = await helmTemplate({ values, helm: major });
      return run.status === 0 ? 'rendered' : run.stderr;
    };
    expect(await refused({ commonLabels: { 'app.kubernetes.io/name': 'other' } })).toMatch(/app\.kubernetes\.io\/name/);
    expect(await refused({ podLabels: { 'app.kubernetes.io/component': 'other' } })).toMatch(
      /app\.kubernetes\.io\/component/,
    );
    expect(await refused({ extraEnv: [{ name: 'HOOKGUARD_MODE', value: 'audit' }] })).toMatch(/extraEnv/);
    expect(await refused({ extraVolumeMounts: [{ name: 'x', mountPath: '/tmp' }] })).toMatch(/extraVolumeMounts/);
    expect(await refused({ readinessProbe: { httpGet: { path: '/' } } })).toMatch(/readinessProbe/);
    expect(await refused({ serviceAccount: { create: false } })).toMatch(/serviceAccount/);
  });
});

describe('fullnameOverride and a service account made elsewhere', () => {
  let objectsRendered: Manifest[] = [];
  beforeAll(async () => {
    objectsRendered = await renderChart({
      namespace: 'platform',
      values: { fullnameOverride: 'guard', serviceAccount: { create: false, name: 'platform-guard' } },
      includeCrds: true,
    });
  });

  it('renames every object but the CRD and the HookGuard object, and tells the server the names', () => {
    const names = objectsRendered
      .filter((object) => !['CustomResourceDefinition', 'HookGuard'].includes(object.kind))
      .map((object) => object.metadata.name as string);
    expect(names.filter((name) => !name.startsWith('guard') && name !== 'hookguard-selftest')).toEqual([]);
    expect(find(objectsRendered, 'HookGuard', 'hookguard').metadata.name).toBe('hookguard');
    const config = parse(find(objectsRendered, 'ConfigMap', 'guard-config').data['config.yaml']);
    expect([config.certificates.serviceName, config.certificates.webhookName, config.leaderElection.leaseName]).toEqual(
      ['guard', 'guard', 'guard'],
    );
    const [webhook] = find(objectsRendered, 'MutatingWebhookConfiguration', 'guard').webhooks;
    expect(webhook.clientConfig.service.name).toBe('guard');
    expect(find(objectsRendered, 'ClusterRole', 'guard-webhook-ca').rules[0].resourceNames).toEqual(['guard']);
    expect(find(objectsRendered, 'Role', 'guard-leader-election').rules[1].resourceNames).toEqual([
      'guard',
      'guard-certificates',
    ]);
  });

  it('binds the service account given, and makes none for the server', () => {
    expect(
      objectsRendered.filter((object) => object.kind === 'ServiceAccount').map((object) => object.metadata.name),
    ).toEqual(['guard-sweep', 'guard-lifecycle']);
    expect(find(objectsRendered, 'Deployment', 'guard').spec.template.spec.serviceAccountName).toBe('platform-guard');
    for (const binding of objectsRendered.filter((object) => object.kind.endsWith('RoleBinding')))
      expect(binding.subjects[0].name, binding.metadata.name).toBe(
        ['guard-sweep', 'guard-lifecycle'].includes(binding.metadata.name) ? binding.metadata.name : 'platform-guard',
      );
    expect(
      find(objectsRendered, 'ValidatingAdmissionPolicy', 'guard-sweep-finalizers-only').spec.matchConditions[0]
        .expression,
    ).toBe("request.userInfo.username == 'system:serviceaccount:platform:guard-sweep'");
  });
});

describe('the opt-in NetworkPolicy, ServiceMonitor and PrometheusRule', () => {
  const everything = CASES[3] as Case;

  it('admits the webhook port from the control plane CIDRs only, and the metrics port from the monitoring namespace only', () => {
    expect(find(objects(everything), 'NetworkPolicy', 'hookguard').spec).toEqual({
      podSelector: { matchLabels: POD_LABELS },
      policyTypes: ['Ingress'],
      ingress: [
        { ports: [{ port: 10250, protocol: 'TCP' }], from: [{ ipBlock: { cidr: '172.16.0.0/28' } }] },
        {
          ports: [{ port: 9090, protocol: 'TCP' }],
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
        },
      ],
    });
  });

  it('admits the webhook port from anywhere while no control plane CIDR is given', async () => {
    const policy = find(
      await renderChart({ values: { networkPolicy: { enabled: true } } }),
      'NetworkPolicy',
      'hookguard',
    );
    expect(policy.spec.ingress).toEqual([
      { ports: [{ port: 8443, protocol: 'TCP' }] },
      {
        ports: [{ port: 8080, protocol: 'TCP' }],
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
    ]);
  });

  it("scrapes every replica's /metrics over plain HTTP, from the Service's metrics port", () => {
    const monitor = find(objects(everything), 'ServiceMonitor', 'hookguard');
    expect(monitor.metadata.labels.release).toBe('kube-prometheus-stack');
    expect(monitor.spec).toEqual({
      selector: { matchLabels: POD_LABELS },
      endpoints: [{ port: 'http-metrics', path: '/metrics', scheme: 'http', interval: '30s' }],
    });
    const service = find(objects(everything), 'Service', 'hookguard');
    expect(service.metadata.labels).toMatchObject(POD_LABELS);
    expect(service.spec.ports.map((port: Manifest) => port.name)).toContain('http-metrics');
  });

  it('alerts on the self-test (absent too), the certificate, latency near timeoutSeconds, failing open, refused calls, errors', () => {
    const rule = find(objects(everything), 'PrometheusRule', 'hookguard');
    const rules = rule.spec.groups.flatMap((group: Manifest) => group.rules);
    const webhooks = 'mutate\\\\.hookguard\\\\.io|validate\\\\.hookguard\\\\.io';
    const ns = everything.namespace;
    expect(rules.map((each: Manifest) => [each.alert, each.expr, each.for, each.labels.severity])).toEqual([
      [
        'HookguardSelfTestFailing',
        `absent(hookguard_selftest_last_success_timestamp_seconds{namespace="${ns}"}) or time() - max(hookguard_selftest_last_success_timestamp_seconds{namespace="${ns}"}) > 600`,
        '1m',
        'critical',
      ],
      [
        'HookguardWebhookSlow',
        `histogram_quantile(0.99, sum by (name, le) (rate(apiserver_admission_webhook_admission_duration_seconds_bucket{name=~"${webhooks}"}[5m]))) > 8`,
        '10m',
        'warning',
      ],
      [
        'HookguardWebhookFailingOpen',
        `sum by (name, type) (increase(apiserver_admission_webhook_fail_open_count{name=~"${webhooks}"}[10m])) > 0`,
        undefined,
        'warning',
      ],
      [
        'HookguardWebhookCallsRefused',
        `sum by (name, error_type) (increase(apiserver_admission_webhook_rejection_count{name=~"${webhooks}", error_type!="no_error"}[10m])) > 0`,
        undefined,
        'critical', // failurePolicy Fail in this case: a failed call refuses the hook
      ],
      [
        'HookguardErrors',
        `sum by (source) (increase(hookguard_errors_total{namespace="${ns}"}[10m])) > 0`,
        undefined,
        'warning',
      ],
      [
        'HookguardCertificateExpiresSoon',
        `min(hookguard_tls_certificate_not_after_timestamp_seconds{namespace="${ns}"}) - time() < 14 * 86400`,
        undefined,
        'warning',
      ],
    ]);
    for (const each of rules) expect(promqlErrors(each.expr), each.alert).toEqual([]);
    expect(promqlErrors('time() - max(hookguard_selftest_last_success_timestamp_seconds) >')).not.toEqual([]);
  });

  it('selects in the PromQL of the alerts and the Grafana dashboard only metrics hookguard or the API server serves', async () => {
    const dashboard = JSON.parse(find(objects(everything), 'ConfigMap', 'hookguard-dashboard').data['hookguard.json']);
    const expressions: Array<[string, string]> = [
      ...find(objects(everything), 'PrometheusRule', 'hookguard')
        .spec.groups.flatMap((group: Manifest) => group.rules)
        .map((rule: Manifest) => [rule.alert, rule.expr]),
      ...dashboard.panels.flatMap((panel: Manifest) =>
        (panel.targets ?? []).map((target: Manifest) => [`${panel.title} ${target.refId}`, target.expr]),
      ),
    ];
    const served = (await new Metrics({ selfTest: true, logLinesDropped: () => ({ audit: 0, other: 0 }) }).exposition())
      .text;
    const families = new Set(
      [...served.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
        type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!],
      ),
    );
    const unknown = expressions.flatMap(([where, expr]) => [
      ...promqlErrors(expr).map((error) => `${where}: ${error}`),
      ...metricNames(expr)
        .filter((metric) => !families.has(metric) && !API_SERVER_METRICS.includes(metric))
        .map((metric) => `${where}: ${metric}`),
    ]);
    expect(unknown).toEqual([]);
    const named = new Set(expressions.flatMap(([, expr]) => metricNames(expr)));
    // The dashboard shows what issue 28.5 lists: decisions, latency, rule actions, opt-outs, errors, self-test age.
    for (const metric of [
      'hookguard_admission_requests_total',
      'hookguard_admission_duration_seconds_bucket',
      'hookguard_rule_actions_total',
      'hookguard_opt_outs_total',
      'hookguard_errors_total',
      'hookguard_selftest_last_success_timestamp_seconds',
      'apiserver_admission_webhook_fail_open_count',
      'apiserver_admission_webhook_rejection_count',
    ])
      expect(named, metric).toContain(metric);
    expect(metricNames('sum(rate(not_a_metric_total[5m])) / on() absent(other)')).toEqual([
      'not_a_metric_total',
      'other',
    ]);
    expect(find(objects(everything), 'ConfigMap', 'hookguard-dashboard').metadata).toMatchObject({
      namespace: 'observability',
      labels: { grafana_dashboard: '1' },
    });
  });

  it('grants get on Flux HelmReleases only with hookWatch.helmReleaseEvents, and tells the server', async () => {
    const grants = async (helmReleaseEvents: boolean) => {
      const rendered = await renderChart({ values: { hookWatch: { helmReleaseEvents } } });
      const rules = find(rendered, 'ClusterRole', 'hookguard-hook-watcher').rules as Array<{ apiGroups: string[] }>;
      const config = find(rendered, 'ConfigMap', 'hookguard-config').data['config.yaml'] as string;
      return {
        helmReleases: rules.filter((rule) => rule.apiGroups.includes('helm.toolkit.fluxcd.io')),
        configured: config.includes(`helmReleaseEvents: ${helmReleaseEvents}`),
      };
    };
    expect(await grants(false)).toEqual({ helmReleases: [], configured: true });
    expect(await grants(true)).toEqual({
      helmReleases: [{ apiGroups: ['helm.toolkit.fluxcd.io'], resources: ['helmreleases'], verbs: ['get'] }],
      configured: true,
    });
  });

  it('keeps the self-test alert with the self-test off: absent() fires, saying to turn it on', async () => {
    const [alert] = find(
      await renderChart({ values: { prometheusRule: { enabled: true }, selfTest: { enabled: false } } }),
      'PrometheusRule',
      'hookguard',
    ).spec.groups[0].rules;
    expect([alert.alert, alert.expr.startsWith('absent('), alert.for]).toEqual([
      'HookguardSelfTestFailing',
      true,
      '15m',
    ]);
    expect(alert.annotations.description).toContain('selfTest.enabled is false, so none ever will: turn it on');
  });

  it('tells how to renew the certificate the way it was made', async () => {
    const renewal = async (certificates: Record<string, string>) =>
      find(
        await renderChart({ values: { prometheusRule: { enabled: true }, certificates } }),
        'PrometheusRule',
        'hookguard',
      ).spec.groups[0].rules.find((rule: Manifest) => rule.alert === 'HookguardCertificateExpiresSoon').annotations
        .description as string;
    expect(await renewal({ mode: 'self' })).toContain('hookguard renews it itself well before expiry');
    expect(await renewal({ mode: 'cert-manager' })).toContain('kubectl describe certificate hookguard-serving');
    expect(await renewal({ mode: 'secret', secretName: 'mine' })).toContain('Renew the Secret mine;');
  });
});

describe('every install command of the docs', () => {
  // Nothing is published (no image, no chart repository): an install that takes the chart's default image pulls
  // hookguard:0.1.0 from nowhere (issue 42 item 4). Each block that installs the chart also builds the image it sets.
  it.each(['README.md', 'charts/hookguard/README.md'])('%s: builds and sets the image it installs', (file) => {
    const text = readFileSync(join(repoRoot, file), 'utf8');
    const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map(([, body]) => body!.replace(/ \\\n\s*/g, ' '))
      .filter((body) => /^helm (install|upgrade --install) hookguard charts\/hookguard/m.test(body));
    expect(blocks.length).toBeGreaterThan(0);
    for (const body of blocks) {
      const image = /--set image\.repository=(\S+)/.exec(body)?.[1];
      expect(image, body).toBeDefined();
      const built = new RegExp(`docker build -t ${image}:0\\.1\\.0 \\.`);
      expect(built.test(body) || built.test(text.slice(0, text.indexOf(body))), body).toBe(true);
    }
  });
});

describe("the README's install", () => {
  const block = () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Install on a cluster'), readme.indexOf('## Upgrade'));
    // The block that installs (the one before it builds the image), its continued lines joined.
    const install = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].find(([, text]) => text!.includes('helm install'));
    return (install?.[1] ?? '')
      .replace(/ \\\n\s*/g, ' ')
      .split('\n')
      .filter((line) => /^[a-z]/.test(line));
  };

  it('is three commands: helm install, kubectl wait for Ready, kubectl get hookguard', () => {
    expect(block()).toEqual([
      'helm install hookguard charts/hookguard -n hookguard --create-namespace --set argocd.version=3.1.4 --set image.repository=my.registry/hookguard',
      'kubectl wait hookguard/hookguard --for=condition=Ready --timeout=5m',
      'kubectl get hookguard',
    ]);
  });

  it("installs what helm template renders from the same arguments, with a Ready condition in the CRD's schema", async () => {
    const [install] = block();
    const args = install!.split(' ').slice(2);
    const { helm } = await helmAndKubectl();
    const { stdout } = await execFileAsync(
      helm,
      [
        'template',
        ...args.filter((arg) => arg !== '--create-namespace').map((arg) => (arg === 'charts/hookguard' ? CHART : arg)),
      ],
      { env: { PATH: process.env.PATH ?? '', HOME: dir }, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(stdout).toContain('version: 3.1.4');
    const crd = find(objects(CASES[0] as Case), 'CustomResourceDefinition', 'hookguards.hookguard.io');
    const conditionTypes = crd.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions.items
      .properties.type.enum as string[];
    expect(conditionTypes).toContain('Ready');
  });
});

describe("the chart README's helm commands", () => {
  // Every helm command line of charts/hookguard/README.md, in code blocks and in code spans.
  const commands = (() => {
    const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
    // A line ending in a backslash goes on in the next, as the shell reads it.
    const inBlocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((match) =>
      match[1]!.replace(/ \\\n\s*/g, ' ').split('\n'),
    );
    const inSpans = [...readme.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
    return [...inBlocks, ...inSpans]
      .map((line) => line.trim())
      .filter((line) => /^helm \S+ \S+/.test(line))
      .map((line) => line.split(/\s+/));
  })();

  it('install, upgrade, test and uninstall', () => {
    expect(commands.map((words) => words[1]).sort()).toEqual(['install', 'test', 'uninstall', 'upgrade']);
  });

  it.each([4, 3] as const)('uses only flags that helm %i knows for each command', async (major) => {
    const helm = await helmBinary(major);
    for (const [, command, ...args] of commands) {
      const { stdout: help } = await execFileAsync(helm, [command!, '--help'], {
        env: { PATH: process.env.PATH ?? '', HOME: dir },
      });
      for (const flag of args.filter((arg) => arg.startsWith('-')).map((arg) => arg.split('=')[0]!))
        expect(help, `helm ${major} ${command} ${flag}`).toMatch(new RegExp(`(^|[ ,])${flag}[ ,=]`, 'm'));
    }
  });

  it("upgrades with the new chart's defaults: --reset-then-reuse-values, never --reuse-values", () => {
    // --reuse-values renders the new chart with the old chart's coalesced defaults (helm v3.21.4 and v4.3.2
    // pkg/action/upgrade.go reuseValues), so a value a newer chart adds would be missing.
    const upgrades = commands.filter((words) => words[1] === 'upgrade');
    expect(upgrades.map((words) => words.join(' '))).toEqual([
      'helm upgrade hookguard charts/hookguard -n hookguard --reset-then-reuse-values',
    ]);
  });

  it.each([4, 3] as const)(
    'renders the install line with helm %i: everything in the release namespace but the self-test namespace',
    async (major) => {
      const [install] = commands.filter((words) => words[1] === 'install');
      const args = install!
        .slice(2)
        .filter((arg) => arg !== '--create-namespace')
        .map((arg) => (arg === 'charts/hookguard' ? CHART : arg));
      const { stdout } = await execFileAsync(await helmBinary(major), ['template', ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: dir },
        maxBuffer: 16 * 1024 * 1024,
      });
      const rendered = parseAllDocuments(stdout).map((document) => document.toJS() as Manifest | null);
      const namespaces = rendered.flatMap((object) => (object?.metadata?.namespace ? [object.metadata.namespace] : []));
      expect(namespaces.length).toBeGreaterThan(5);
      expect(new Set(namespaces)).toEqual(new Set(['hookguard', 'hookguard-selftest']));
      expect(stdout).toContain('version: 3.1.4');
    },
  );
});

describe('the CRD (charts/hookguard/crds)', () => {
  it('ships the HookGuard kind: cluster-scoped, a status subresource, the printer columns', () => {
    const crd = find(objects(CASES[0] as Case), 'CustomResourceDefinition', 'hookguards.hookguard.io');
    expect([crd.spec.group, crd.spec.scope, crd.spec.names.kind]).toEqual(['hookguard.io', 'Cluster', 'HookGuard']);
    const [version] = crd.spec.versions;
    expect([version.name, version.served, version.storage, version.subresources]).toEqual([
      'v1alpha1',
      true,
      true,
      { status: {} },
    ]);
    expect(
      version.additionalPrinterColumns.map((column: Manifest) => [column.name, column.type, column.jsonPath]),
    ).toEqual([
      ['Ready', 'string', '.status.conditions[?(@.type=="Ready")].status'],
      ['Mode', 'string', '.status.mode'],
      ['Webhook', 'string', '.status.conditions[?(@.type=="WebhookCalled")].reason'],
      ['Certificate Expiry', 'string', '.status.certificateNotAfter'],
      ['Age', 'date', '.metadata.creationTimestamp'],
    ]);
  });
});

describe('helm lint and the values schema', () => {
  it.each([3, 4] as const)('helm %s lint --strict finds nothing', async (major) => {
    const { stdout } = await execFileAsync(await helmBinary(major), ['lint', '--strict', CHART], {
      env: { PATH: process.env.PATH ?? '', HOME: dir },
    });
    expect(stdout).toBe(
      '==> Linting ' + CHART + '\n[INFO] Chart.yaml: icon is recommended\n\n1 chart(s) linted, 0 chart(s) failed\n',
    );
  });

  it('states the Kubernetes version the manifests need and the artifacthub annotations', () => {
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as Manifest;
    expect([chart.apiVersion, chart.kubeVersion, chart.appVersion]).toEqual(['v2', '>=1.30.0-0', '0.1.0']);
    expect(Object.keys(chart.annotations).filter((key) => key.startsWith('artifacthub.io/'))).toEqual([
      'artifacthub.io/category',
      'artifacthub.io/license',
      'artifacthub.io/operator',
      'artifacthub.io/prerelease',
      'artifacthub.io/containsSecurityUpdates',
      'artifacthub.io/images',
      'artifacthub.io/crds',
      'artifacthub.io/crdsExamples',
    ]);
    expect(parse(chart.annotations['artifacthub.io/images'])).toEqual([
      { name: 'hookguard', image: 'hookguard:0.1.0' },
    ]);
  });

  // Each bad value with the line Helm 4 prints for it; Helm 3 must refuse it too (its wording differs).
  it.each([
    ['an unknown value', { replicas: 2 }, "- at '': additional properties 'replicas' not allowed"],
    ['an unknown mode', { mode: 'warn' }, "- at '/mode': value must be one of 'enforce', 'audit'"],
    [
      'a tag for an Argo CD version',
      { argocd: { version: 'latest' } },
      "- at '/argocd/version': 'latest' does not match pattern",
    ],
    ['a port out of range', { webhook: { port: 70000 } }, "- at '/webhook/port': maximum: got 70,000, want 65,535"],
    [
      'a timeout the API server refuses',
      { webhook: { timeoutSeconds: 31 } },
      "- at '/webhook/timeoutSeconds': maximum: got 31, want 30",
    ],
    [
      'an unknown failure policy',
      { webhook: { failurePolicy: 'Deny' } },
      "- at '/webhook/failurePolicy': value must be one of 'Ignore', 'Fail'",
    ],
    ['no replica', { replicaCount: 0 }, "- at '/replicaCount': minimum: got 0, want 1"],
    [
      'an unknown certificate mode',
      { certificates: { mode: 'vault' } },
      "- at '/certificates/mode': value must be one of 'self', 'cert-manager', 'secret'",
    ],
    [
      'a caBundle outside secret mode',
      { certificates: { caBundle: CA_BUNDLE } },
      "- at '/certificates/caBundle': value must be ''",
    ],
    [
      'a namespace that is not a DNS label',
      { excludedNamespaces: ['Apps'] },
      "- at '/excludedNamespaces/0': 'Apps' does not match pattern",
    ],
    [
      'an unknown sweep profile',
      { sweep: { profiles: ['kyverno'] } },
      "- at '/sweep/profiles/0': value must be one of 'argocd-hook', 'argo-workflows'",
    ],
    ['no sweep profile', { sweep: { profiles: [] } }, "- at '/sweep/profiles': minItems: got 0, want 1"],
    [
      'a digest that is not sha256',
      { image: { digest: 'latest' } },
      "- at '/image/digest': 'latest' does not match pattern",
    ],
    [
      'a memory request that is no quantity',
      { resources: { requests: { memory: 'lots' } } },
      "- at '/resources/requests/memory'",
    ],
    [
      "a sweep memory limit that is no quantity (the server's resources schema)",
      { sweep: { resources: { limits: { memory: '384 MiB' } } } },
      "- at '/sweep/resources/limits/memory'",
    ],
    [
      'a CIDR that is no CIDR',
      { networkPolicy: { controlPlaneCIDRs: ['10.0.0.1'] } },
      "- at '/networkPolicy/controlPlaneCIDRs/0': '10.0.0.1' does not match pattern",
    ],
    ['the mode in config', { config: { mode: 'audit' } }, "- at '/config/mode': value must be '(not here: set mode)'"],
    [
      'the webhook port in config',
      { config: { server: { port: 9443 } } },
      "- at '/config/server/port': value must be '(not here: set webhook.port)'",
    ],
    [
      'the TLS files in config',
      { config: { server: { tls: { certFile: '/x' } } } },
      "- at '/config/server/tls': value must be '(not here: set certificates)'",
    ],
    [
      'the Lease namespace in config',
      { config: { leaderElection: { leaseNamespace: 'x' } } },
      "- at '/config/leaderElection/leaseNamespace': value must be '(not here: the release namespace)'",
    ],
  ])('refuses %s', async (_name, values, line) => {
    const helm4 = await helmTemplate({ values });
    expect(helm4.status).toBe(1);
    expect(helm4.stderr).toContain(
      "Error: values don't meet the specifications of the schema(s) in the following chart(s):\nhookguard:\n",
    );
    expect(helm4.stderr).toContain(line);
    const helm3 = await helmTemplate({ values, helm: 3 });
    expect([helm3.status, helm3.stderr]).toEqual([1, expect.stringContaining("values don't meet the specifications")]);
  });

  it.each([3, 4] as const)('helm %s refuses to render for Kubernetes 1.29, and renders for 1.30', async (major) => {
    const old = await helmTemplate({ helm: major, kubeVersion: '1.29.9' });
    expect([old.status, old.stderr]).toEqual([
      1,
      expect.stringContaining('chart requires kubeVersion: >=1.30.0-0 which is incompatible with Kubernetes v1.29.9'),
    ]);
    expect((await helmTemplate({ helm: major, kubeVersion: '1.30.0-gke.1' })).status).toBe(0);
  });

  it('accepts every value the issue names at once (the matrix above) and the defaults', () => {
    expect(rendered.size).toBe(CASES.length);
  });
});

describe("the webhooks' match condition as the chart ships it (CEL, evaluated by @bufbuild/cel)", () => {
  let expression: string;
  beforeAll(() => {
    const expressions = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].map(
      (kind) => find(objects(CASES[0] as Case), kind, 'hookguard').webhooks[0].matchConditions[0].expression as string,
    );
    expect(expressions[0]).toBe(expressions[1]);
    expression = expressions[0] as string;
  });
  const job = (annotations?: Record<string, string>) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'x', namespace: 'apps', ...(annotations ? { annotations } : {}) },
  });

  it.each([
    ['a Helm hook', true, job({ 'helm.sh/hook': 'pre-install' })],
    ['an Argo CD hook', true, job({ 'argocd.argoproj.io/hook': 'PreSync' })],
    ['a Helm hook with an empty phase list', true, job({ 'helm.sh/hook': '' })],
    [
      'a Job with other annotations only',
      false,
      job({ 'helm.sh/hook-weight': '1', 'argocd.argoproj.io/sync-wave': '2' }),
    ],
    ['a Job with no annotations', false, job()],
    ['an object with no metadata', false, { apiVersion: 'v1', kind: 'Pod' }],
    ['null (what a DELETE carries as object)', false, null],
  ])('%s: %s', (_name, expected, object) => {
    expect(evaluateMatchCondition(expression, object)).toBe(expected);
  });

  it('lets through every object hookguard treats as a hook (generated annotations)', () => {
    const keys = fc.constantFrom(
      'helm.sh/hook',
      'argocd.argoproj.io/hook',
      'helm.sh/hook-delete-policy',
      'argocd.argoproj.io/tracking-id',
      'app',
      'hookguard.io/skip',
    );
    fc.assert(
      fc.property(
        fc.dictionary(keys, fc.string({ maxLength: 12 })),
        fc.constantFrom('Job', 'Pod'),
        (annotations, kind) => {
          const object = {
            apiVersion: kind === 'Job' ? 'batch/v1' : 'v1',
            kind,
            metadata: { name: 'x', namespace: 'apps', annotations },
          };
          const isHook = readHook(object, ARGOCD_CONTROLLER, HOOK_DETECTION) !== undefined;
          const matches = evaluateMatchCondition(expression, object);
          expect(matches).toBe('helm.sh/hook' in annotations || 'argocd.argoproj.io/hook' in annotations);
          if (isHook) expect(matches).toBe(true);
        },
      ),
    );
  });

  it('lets through every real chart hook in test/fixtures', () => {
    for (const { file, object } of loadFixtures()) expect(evaluateMatchCondition(expression, object), file).toBe(true);
  });
});

const HOOK_DETECTION = { argocdControllerUsernames: [ARGOCD_CONTROLLER] };

describe('Argo CD health checks (manifests/argocd, run in a real Lua VM)', () => {
  let scripts: Record<string, string>;
  beforeAll(async () => {
    const [patch] = await render('argocd');
    scripts = patch?.data ?? {};
  });
  const KEYS = [
    'resource.customizations.health.admissionregistration.k8s.io_MutatingWebhookConfiguration',
    'resource.customizations.health.admissionregistration.k8s.io_ValidatingWebhookConfiguration',
  ];

  it('patches argocd-cm in argocd with one check for each webhook configuration kind, and one for HookGuard', async () => {
    const [patch] = await render('argocd');
    expect([patch?.kind, patch?.metadata, Object.keys(patch?.data ?? {})]).toEqual([
      'ConfigMap',
      { name: 'argocd-cm', namespace: 'argocd' },
      [...KEYS, 'resource.customizations.health.hookguard.io_HookGuard'],
    ]);
  });

  it.each(KEYS)('%s: Progressing while a service webhook has no caBundle, Healthy once each has one', async (key) => {
    const script = scripts[key] as string;
    const kind = key.endsWith('MutatingWebhookConfiguration')
      ? 'MutatingWebhookConfiguration'
      : 'ValidatingWebhookConfiguration';
    // As the chart ships them by default (certificates.mode self): no caBundle until hookguard writes it.
    const shipped = find(objects(CASES[0] as Case), kind, 'hookguard');
    const name = shipped.webhooks[0].name;
    expect(await runHealthCheck(script, shipped)).toEqual({
      status: 'Progressing',
      message: `webhook ${name} has no caBundle yet: the API server cannot call it`,
    });
    const withEmptyBundle = structuredClone(shipped);
    withEmptyBundle.webhooks[0].clientConfig.caBundle = '';
    expect((await runHealthCheck(script, withEmptyBundle)).status).toBe('Progressing');
    const injected = structuredClone(shipped);
    injected.webhooks[0].clientConfig.caBundle = 'LS0tLS1CRUdJTi0tLS0t';
    expect(await runHealthCheck(script, injected)).toEqual({
      status: 'Healthy',
      message: 'every webhook has a caBundle',
    });
    const byUrl = {
      ...shipped,
      webhooks: [{ name: 'url.example.com', clientConfig: { url: 'https://hooks.example.com/x' } }],
    };
    expect((await runHealthCheck(script, byUrl)).status).toBe('Healthy');
    expect((await runHealthCheck(script, { ...shipped, webhooks: undefined })).status).toBe('Healthy');
  });
});

describe('the HookGuard health check (manifests/argocd, run in a real Lua VM)', () => {
  let script: string;
  beforeAll(async () => {
    const [patch] = await render('argocd');
    script = patch?.data?.['resource.customizations.health.hookguard.io_HookGuard'] as string;
  });
  const condition = (type: string, status: string, reason: string, message = `${type} ${reason}`) => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: '2026-09-01T00:00:00Z',
    observedGeneration: 1,
  });
  const hookGuard = (status?: Record<string, unknown>, generation = 1) => ({
    apiVersion: 'hookguard.io/v1alpha1',
    kind: 'HookGuard',
    metadata: { name: 'hookguard', generation },
    spec: {},
    ...(status ? { status } : {}),
  });
  const allTrue = [
    condition('WebhookCalled', 'True', 'Called'),
    condition('CertificateValid', 'True', 'Valid'),
    condition('ArgoCDKnown', 'True', 'Discovered'),
    condition('Ready', 'True', 'Ready', 'all good'),
  ];

  it.each([
    ['no status yet', hookGuard(), 'Progressing', "waiting for hookguard's first self-test"],
    [
      'a status without conditions',
      hookGuard({ mode: 'enforce' }),
      'Progressing',
      "waiting for hookguard's first self-test",
    ],
    [
      'conditions but no self-test yet',
      hookGuard({ observedGeneration: 1, conditions: [condition('CertificateValid', 'True', 'Valid')] }),
      'Progressing',
      "waiting for hookguard's first self-test",
    ],
    ['every condition True', hookGuard({ observedGeneration: 1, conditions: allTrue }), 'Healthy', 'all good'],
    [
      'every condition True, for an older generation',
      hookGuard({ observedGeneration: 1, conditions: allTrue }, 2),
      'Progressing',
      'the status is for generation 1, not 2',
    ],
    [
      'no observedGeneration',
      hookGuard({ conditions: allTrue }),
      'Progressing',
      'the status is for generation nil, not 1',
    ],
    [
      'the webhook not called',
      hookGuard({
        observedGeneration: 1,
        conditions: [
          condition('WebhookCalled', 'False', 'NotCalled', 'stale caBundle?'),
          condition('Ready', 'False', 'NotCalled', 'WebhookCalled=False'),
        ],
      }),
      'Degraded',
      'the API server does not call the webhook: stale caBundle?',
    ],
    [
      'called, but the certificate expires soon',
      hookGuard({
        observedGeneration: 1,
        conditions: [
          condition('WebhookCalled', 'True', 'Called'),
          condition('CertificateValid', 'False', 'ExpiresSoon'),
          condition('Ready', 'False', 'ExpiresSoon', 'CertificateValid=False'),
        ],
      }),
      'Degraded',
      'CertificateValid=False',
    ],
    [
      'the self-test could not run (WebhookCalled Unknown)',
      hookGuard({
        observedGeneration: 1,
        conditions: [condition('WebhookCalled', 'Unknown', 'Error'), condition('Ready', 'False', 'Error', 'forbidden')],
      }),
      'Degraded',
      'forbidden',
    ],
  ])('%s: %s', async (_name, object, status, message) => {
    expect(await runHealthCheck(script, object)).toEqual({ status, message });
  });
});

// manifests/argocd-cmp as a user includes it: a component of the kustomization that installs Argo CD, here over the
// upstream argocd-repo-server Deployment of argo-cd v3.4.0 (test/manifests/argocd/).
describe('the Argo CD Config Management Plugin component (manifests/argocd-cmp)', () => {
  let rendered: Manifest[];
  let upstream: Manifest;
  beforeAll(async () => {
    rendered = await renderKustomization(join('test', 'manifests', 'argocd'));
    upstream = parse(
      readFileSync(join(repoRoot, 'test', 'manifests', 'argocd', 'argocd-repo-server-deployment.yaml'), 'utf8'),
    ) as Manifest;
  });
  const deployment = () => find(rendered, 'Deployment', 'argocd-repo-server');
  const sidecar = () => deployment().spec.template.spec.containers.find((c: Manifest) => c.name === 'hookguard-helm');

  it('adds only its ConfigMap, holding plugin.yaml as shipped, to what Argo CD installs', () => {
    expect(rendered.map((object) => `${object.kind}/${object.metadata.name}`)).toEqual([
      expect.stringMatching(/^ConfigMap\/hookguard-cmp-plugin-[a-z0-9]+$/),
      'Deployment/argocd-repo-server',
    ]);
    const configMap = rendered[0]!;
    expect(configMap.metadata.namespace).toBe('argocd');
    expect(configMap.data).toEqual({
      'plugin.yaml': readFileSync(join(repoRoot, 'manifests', 'argocd-cmp', 'plugin.yaml'), 'utf8'),
    });
    assertValidKubeObject(configMap);
  });

  it("registers the sidecar as Argo CD's docs do: argocd-cmp-server, the plugin's config, the shared sockets", () => {
    const configMap = rendered[0]!.metadata.name as string;
    expect(sidecar()).toMatchObject({
      image: 'hookguard-cmp:0.1.0',
      command: ['/var/run/argocd/argocd-cmp-server'],
      volumeMounts: [
        { mountPath: '/var/run/argocd', name: 'var-files' },
        { mountPath: '/home/argocd/cmp-server/plugins', name: 'plugins' },
        {
          mountPath: '/home/argocd/cmp-server/config/plugin.yaml',
          subPath: 'plugin.yaml',
          name: 'hookguard-cmp-plugin',
        },
        { mountPath: '/tmp', name: 'hookguard-cmp-tmp' },
      ],
    });
    const volumes = deployment().spec.template.spec.volumes as Manifest[];
    expect(volumes.find((volume) => volume.name === 'hookguard-cmp-plugin')).toEqual({
      name: 'hookguard-cmp-plugin',
      configMap: { name: configMap },
    });
    // Every volume it mounts exists; var-files and plugins are the upstream Deployment's own emptyDirs.
    for (const mount of sidecar().volumeMounts as Manifest[])
      expect(volumes.map((volume) => volume.name)).toContain(mount.name);
    for (const name of ['var-files', 'plugins'])
      expect(upstream.spec.template.spec.volumes).toContainEqual({ name, emptyDir: {} });
    assertValidKubeObject(deployment());
  });

  it('leaves the upstream containers as they were, and passes Pod Security "restricted" itself', () => {
    const others = deployment().spec.template.spec.containers.filter((c: Manifest) => c.name !== 'hookguard-helm');
    expect(others).toEqual(upstream.spec.template.spec.containers);
    expect(deployment().spec.template.spec.initContainers).toEqual(upstream.spec.template.spec.initContainers);
    expect(restrictedViolations({ containers: [sidecar()] })).toEqual([]);
  });
});

const DEFAULT_SHUTDOWN_TIMEOUT_S = 20;

/** The "restricted" Pod Security Standard (kubernetes.io/docs/concepts/security/pod-security-standards), checked field by field. */
/**
 * The API server's admission webhook metrics (kubernetes staging/src/k8s.io/apiserver/pkg/admission/metrics/
 * metrics.go, newAdmissionMetrics, as stored at 01b9f4b6): the histogram webhook_admission_duration_seconds and the
 * counters webhook_rejection_count, webhook_fail_open_count, webhook_request_total, under apiserver_admission_.
 */
const API_SERVER_METRICS = [
  'apiserver_admission_webhook_admission_duration_seconds_bucket',
  'apiserver_admission_webhook_admission_duration_seconds_sum',
  'apiserver_admission_webhook_admission_duration_seconds_count',
  'apiserver_admission_webhook_rejection_count',
  'apiserver_admission_webhook_fail_open_count',
  'apiserver_admission_webhook_request_total',
];

/** openshift.io/sa.scc.uid-range of a namespace, as cluster-policy-controller writes it: first UID / size. */
const OPENSHIFT_UID_RANGE = { first: 1000680000, size: 10000 };

/**
 * What OpenShift's restricted-v2 SCC (security.openshift.io/v1, shipped with every OpenShift 4.11+) refuses in a
 * pod, by its strategies: runAsUser MustRunAsRange and fsGroup MustRunAs in the namespace's range (a UID left unset
 * is assigned from it: openshift/apiserver-library-go pkg/securitycontextconstraints/user/mustrunasrange.go),
 * seLinuxContext MustRunAs (an seLinuxOptions given must be the namespace's: none is), allowPrivilegeEscalation
 * false, requiredDropCapabilities ALL, allowedCapabilities NET_BIND_SERVICE, seccompProfiles runtime/default, its
 * volume types, no host namespaces or ports. runAsNonRoot is what the pods promise besides.
 */
function restrictedV2Violations(pod: Manifest, range: { first: number; size: number }): string[] {
  const violations: string[] = [];
  const inRange = (id: number) => id >= range.first && id < range.first + range.size;
  const rangeText = `${range.first}/${range.size}`;
  const podContext = pod.securityContext ?? {};
  for (const key of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[key]) violations.push(key);
  const allowedVolumes = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  for (const volume of pod.volumes ?? [])
    for (const type of Object.keys(volume).filter((key) => key !== 'name'))
      if (!allowedVolumes.includes(type)) violations.push(`volume ${volume.name}: ${type}`);
  for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
    const context = container.securityContext ?? {};
    const at = `container ${container.name}`;
    const uid = context.runAsUser ?? podContext.runAsUser;
    if (uid !== undefined && !inRange(uid)) violations.push(`${at}: runAsUser ${uid} outside ${rangeText}`);
    if ((context.runAsNonRoot ?? podContext.runAsNonRoot) !== true) violations.push(`${at}: runAsNonRoot is not true`);
    if (context.privileged) violations.push(`${at}: privileged`);
    if (context.allowPrivilegeEscalation !== false) violations.push(`${at}: allowPrivilegeEscalation is not false`);
    if (!(context.capabilities?.drop ?? []).includes('ALL')) violations.push(`${at}: does not drop ALL capabilities`);
    if ((context.capabilities?.add ?? []).some((capability: string) => capability !== 'NET_BIND_SERVICE'))
      violations.push(`${at}: adds capabilities`);
    const seccomp = context.seccompProfile?.type ?? podContext.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault') violations.push(`${at}: seccompProfile ${String(seccomp)}`);
    if (context.seLinuxOptions ?? podContext.seLinuxOptions) violations.push(`${at}: seLinuxOptions set`);
    if (container.ports?.some((port: Manifest) => port.hostPort)) violations.push(`${at}: hostPort`);
  }
  if (podContext.fsGroup !== undefined && !inRange(podContext.fsGroup))
    violations.push(`fsGroup ${podContext.fsGroup} outside ${rangeText}`);
  return violations;
}

function restrictedViolations(pod: Manifest): string[] {
  const violations: string[] = [];
  const allowedVolumes = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  for (const volume of pod.volumes ?? []) {
    const types = Object.keys(volume).filter((key) => key !== 'name');
    if (!types.every((type) => allowedVolumes.includes(type)))
      violations.push(`volume ${volume.name}: ${types.join(',')}`);
  }
  for (const key of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[key]) violations.push(key);
  const podContext = pod.securityContext ?? {};
  for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
    const context = container.securityContext ?? {};
    const at = `container ${container.name}`;
    if (context.privileged) violations.push(`${at}: privileged`);
    if (context.allowPrivilegeEscalation !== false) violations.push(`${at}: allowPrivilegeEscalation is not false`);
    if (!(context.capabilities?.drop ?? []).includes('ALL')) violations.push(`${at}: does not drop ALL capabilities`);
    if ((context.capabilities?.add ?? []).some((capability: string) => capability !== 'NET_BIND_SERVICE'))
      violations.push(`${at}: adds capabilities`);
    if ((context.runAsNonRoot ?? podContext.runAsNonRoot) !== true) violations.push(`${at}: runAsNonRoot is not true`);
    if ((context.runAsUser ?? podContext.runAsUser) === 0) violations.push(`${at}: runs as UID 0`);
    const seccomp = context.seccompProfile?.type ?? podContext.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost')
      violations.push(`${at}: seccompProfile ${String(seccomp)}`);
    if (container.ports?.some((port: Manifest) => port.hostPort)) violations.push(`${at}: hostPort`);
    // Not part of "restricted", but what the issue asks of hookguard's own pods.
    if (context.readOnlyRootFilesystem !== true) violations.push(`${at}: root file system is writable`);
    if (container.resources?.limits?.cpu !== undefined) violations.push(`${at}: has a CPU limit`);
    if (container.resources?.requests?.cpu === undefined || container.resources?.requests?.memory === undefined)
      violations.push(`${at}: no requests`);
  }
  return violations;
}
