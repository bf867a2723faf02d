// The Helm chart (charts/hookguard), rendered by the real helm 4.1.4 and helm 3.18.0 over a matrix of values, and
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
import { SKIP_MESSAGE, haveSharedFixtures, loadSharedFixtures } from '../support/fixtures.js';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { schemaValidator } from '../support/fake-admission.js';
import { probeJob } from '../../src/controllers/selftest/probe.js';
import { Metrics } from '../../src/http/metrics.js';
import { promqlErrors } from '../support/promql.js';
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

/** The matrix: each value of the list set away from its default in at least one case. */
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
  ].sort();
}

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
    const crd = find(objects(each), 'CustomResourceDefinition', 'hookguards.hookguard.io');
    const hookGuardErrors = schemaValidator(crd.spec.versions[0].schema.openAPIV3Schema);
    for (const object of objects(each)) {
      const name = `${object.kind}/${object.metadata.name}`;
      if (object.kind === 'HookGuard') expect(hookGuardErrors(object), name).toEqual([]);
      else expect(() => assertValidKubeObject(object), name).not.toThrow();
    }
  });

  it(`labels everything part-of hookguard and puts every namespaced object in ${ns} (the self-test Role in its namespace)`, () => {
    for (const object of objects(each)) {
      const name = `${object.kind}/${object.metadata.name}`;
      if (object.kind === 'CustomResourceDefinition') continue; // crds/ is not templated
      expect(object.metadata.labels?.['app.kubernetes.io/part-of'], name).toBe('hookguard');
      expect(object.metadata.labels?.['app.kubernetes.io/instance'], name).toBe('hookguard');
      const inSelfTestNamespace = object.metadata.name === 'hookguard-self-test';
      expect(object.metadata.namespace, name).toBe(
        CLUSTER_SCOPED.includes(object.kind) ? undefined : inSelfTestNamespace ? value(each, 'selfTest.namespace') : ns,
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
      namespaceSelector: {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: excludedNamespaces(each) }],
      },
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
    expect(deployment.spec.template.metadata.labels).toEqual(POD_LABELS);
    expect(service.spec.selector).toEqual(POD_LABELS);
    expect(container.ports).toEqual([
      { name: 'https', containerPort: value(each, 'webhook.port'), protocol: 'TCP' },
      { name: 'http-probes', containerPort: value(each, 'probePort'), protocol: 'TCP' },
    ]);
    expect(service.spec.ports).toEqual([
      { name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' },
      { name: 'http-metrics', port: value(each, 'probePort'), targetPort: 'http-probes', protocol: 'TCP' },
    ]);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http-probes', scheme: 'HTTP' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http-probes', scheme: 'HTTP' });
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
    for (const key of scheduling) expect(pod[key], key).toEqual(each.values[key]);
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
    expect(container.env).toEqual([{ name: 'HOOKGUARD_CONFIG', value: '/etc/hookguard/config/config.yaml' }]);
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
      expect(mounts).toEqual({ config: '/etc/hookguard/config', tmp: '/tmp' });
    } else {
      expect(settings.certificates).toEqual({ mode: 'files' });
      expect(config.server.tls).toMatchObject({
        certFile: '/etc/hookguard/tls/tls.crt',
        keyFile: '/etc/hookguard/tls/tls.key',
      });
      expect(mounts).toEqual({ tls: '/etc/hookguard/tls', config: '/etc/hookguard/config', tmp: '/tmp' });
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
    'lets the server keep its own certificate: get, update, patch on its Secret and on both webhook configurations, by name',
    () => {
      expect(find(objects(each), 'Role', 'hookguard-certificates').rules).toEqual([
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['hookguard-tls'],
          verbs: ['get', 'update', 'patch'],
        },
      ]);
      expect(find(objects(each), 'ClusterRole', 'hookguard-webhook-ca').rules).toEqual([
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
          resourceNames: ['hookguard'],
          verbs: ['get', 'update', 'patch'],
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
      ]);
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
    const pods = [find(objects(each), 'Deployment', 'hookguard').spec.template.spec];
    if (value(each, 'sweep.enabled'))
      pods.push(find(objects(each), 'CronJob', 'hookguard-sweep').spec.jobTemplate.spec.template.spec);
    for (const pod of pods) expect(restrictedViolations(pod)).toEqual([]);
  });

  it('renders the same objects with Helm 3.18.0 as with Helm 4.1.4 (Helm 3 orders unknown kinds otherwise)', async () => {
    const byName = (list: Manifest[]) =>
      new Map(list.map((object) => [`${object.kind}/${object.metadata.namespace}/${object.metadata.name}`, object]));
    expect(byName(await renderChart(options(each, 3)))).toEqual(byName(objects(each)));
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

  it('alerts when the self-test has not succeeded for 10 minutes and when the certificate expires within 14 days', async () => {
    const rule = find(objects(everything), 'PrometheusRule', 'hookguard');
    const rules = rule.spec.groups.flatMap((group: Manifest) => group.rules);
    expect(rules.map((each: Manifest) => [each.alert, each.expr, each.for])).toEqual([
      ['HookguardSelfTestFailing', 'time() - max(hookguard_selftest_last_success_timestamp_seconds) > 600', '1m'],
      [
        'HookguardCertificateExpiresSoon',
        'min(hookguard_tls_certificate_not_after_timestamp_seconds) - time() < 14 * 86400',
        undefined,
      ],
    ]);
    const served = (await new Metrics({ selfTest: true }).exposition()).text;
    for (const each of rules) {
      expect(promqlErrors(each.expr), each.alert).toEqual([]);
      for (const metric of each.expr.match(/hookguard_[a-z_]+/g) ?? [])
        expect(served, metric).toContain(`# TYPE ${metric} `);
    }
    expect(promqlErrors('time() - max(hookguard_selftest_last_success_timestamp_seconds) >')).not.toEqual([]);
  });

  it('tells how to renew the certificate the way it was made', async () => {
    const renewal = async (certificates: Record<string, string>) =>
      find(
        await renderChart({ values: { prometheusRule: { enabled: true }, certificates } }),
        'PrometheusRule',
        'hookguard',
      ).spec.groups[0].rules[1].annotations.description as string;
    expect(await renewal({ mode: 'self' })).toContain('hookguard renews it itself well before expiry');
    expect(await renewal({ mode: 'cert-manager' })).toContain('kubectl describe certificate hookguard-serving');
    expect(await renewal({ mode: 'secret', secretName: 'mine' })).toContain('Renew the Secret mine;');
  });
});

describe("the README's install", () => {
  const block = () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Install on a cluster'), readme.indexOf('## Upgrade'));
    return (/```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '').split('\n').filter((line) => /^[a-z]/.test(line));
  };

  it('is three commands: helm install, kubectl wait for Ready, kubectl get hookguard', () => {
    expect(block()).toEqual([
      'helm install hookguard charts/hookguard -n hookguard --create-namespace --set argocd.version=3.1.4',
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
    const inBlocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((match) => match[1]!.split('\n'));
    const inSpans = [...readme.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
    return [...inBlocks, ...inSpans]
      .map((line) => line.trim())
      .filter((line) => /^helm \S+ \S+/.test(line))
      .map((line) => line.split(/\s+/));
  })();

  it('install, upgrade and uninstall', () => {
    expect(commands.map((words) => words[1]).sort()).toEqual(['install', 'uninstall', 'upgrade']);
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
    // --reuse-values renders the new chart with the old chart's coalesced defaults (helm v3.18.0 and v4.1.4
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

  it.skipIf(!haveSharedFixtures)(
    haveSharedFixtures ? 'lets through every real chart hook in the shared fixtures' : SKIP_MESSAGE,
    () => {
      const fixtures = loadSharedFixtures();
      expect(fixtures.length).toBeGreaterThan(0);
      for (const { file, object } of fixtures) expect(evaluateMatchCondition(expression, object), file).toBe(true);
    },
  );
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
