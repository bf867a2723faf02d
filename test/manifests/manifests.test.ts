// The shipped manifests, rendered by a real `kubectl kustomize` and checked against the Kubernetes schema, the
// settings the issue requires, Pod Security "restricted", and hookguard itself (its config loader, its hook test).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { readHook } from '../../src/core/hook.js';
import { runCommand } from '../support/command.js';
import { SKIP_MESSAGE, haveSharedFixtures, loadSharedFixtures } from '../support/fixtures.js';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { schemaValidator } from '../support/fake-admission.js';
import { probeJob } from '../../src/selftest/probe.js';
import { Metrics } from '../../src/http/metrics.js';
import { promqlErrors } from '../support/promql.js';
import { repoRoot } from '../support/k8s-tools.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import {
  evaluateMatchCondition,
  find,
  OVERLAYS,
  render,
  renderKustomization,
  runHealthCheck,
  type Manifest,
  type Overlay,
} from '../support/manifests.js';

const rendered = new Map<Overlay, Manifest[]>();
const dir = mkdtempSync(join(tmpdir(), 'hookguard-manifests-'));

beforeAll(async () => {
  for (const overlay of OVERLAYS) rendered.set(overlay, await render(`overlays/${overlay}`));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const objects = (overlay: Overlay) => rendered.get(overlay) ?? [];
const usesCertManager = (overlay: Overlay) => overlay.startsWith('cert-manager');
const modeOf = (overlay: Overlay) => (overlay.endsWith('audit') ? 'audit' : 'enforce');

const BASE_KINDS = [
  'Namespace/hookguard',
  'Namespace/hookguard-selftest',
  'CustomResourceDefinition/hookguards.hookguard.io',
  'HookGuard/hookguard',
  'Role/hookguard-self-test',
  'Role/hookguard-leader-election',
  'RoleBinding/hookguard-self-test',
  'RoleBinding/hookguard-leader-election',
  'ClusterRole/hookguard-status',
  'ClusterRoleBinding/hookguard-status',
  'ServiceAccount/hookguard',
  'ServiceAccount/hookguard-sweep',
  'ClusterRole/hookguard-discovery',
  'ClusterRole/hookguard-sweep',
  'ClusterRoleBinding/hookguard-discovery',
  'ClusterRoleBinding/hookguard-sweep',
  'Service/hookguard',
  'Deployment/hookguard',
  'CronJob/hookguard-sweep',
  'ValidatingAdmissionPolicy/hookguard-sweep-finalizers-only',
  'ValidatingAdmissionPolicyBinding/hookguard-sweep-finalizers-only',
  'PodDisruptionBudget/hookguard',
  'MutatingWebhookConfiguration/hookguard',
  'ValidatingWebhookConfiguration/hookguard',
];
const CERT_MANAGER_KINDS = [
  'Issuer/hookguard-selfsigned',
  'Issuer/hookguard-ca',
  'Certificate/hookguard-ca',
  'Certificate/hookguard-serving',
];

const HOOK_CONDITION = [
  {
    name: 'has-hook-annotation',
    expression:
      'object != null && has(object.metadata) && has(object.metadata.annotations) && ' +
      "('helm.sh/hook' in object.metadata.annotations || 'argocd.argoproj.io/hook' in object.metadata.annotations)",
  },
];
const NAMESPACE_SELECTOR = {
  matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'hookguard'] }],
};
const rule = (group: string, resource: string, operations: string[]) => ({
  apiGroups: [group],
  apiVersions: ['v1'],
  resources: [resource],
  operations,
  scope: 'Namespaced',
});

describe.each(OVERLAYS)('overlay %s', (overlay) => {
  it('renders exactly the objects it should, each valid against the Kubernetes schema', () => {
    const names = objects(overlay).map((object) => `${object.kind}/${object.metadata.name}`);
    const configMaps = names.filter((name) => name.startsWith('ConfigMap/hookguard-config-'));
    expect(configMaps).toHaveLength(1);
    const expected = [...BASE_KINDS, ...(usesCertManager(overlay) ? CERT_MANAGER_KINDS : [])];
    expect(names.filter((name) => !configMaps.includes(name)).sort()).toEqual(expected.sort());
    const crd = find(objects(overlay), 'CustomResourceDefinition', 'hookguards.hookguard.io');
    const hookGuardErrors = schemaValidator(crd.spec.versions[0].schema.openAPIV3Schema);
    for (const object of objects(overlay)) {
      const name = `${object.kind}/${object.metadata.name}`;
      if (object.kind === 'HookGuard') expect(hookGuardErrors(object), name).toEqual([]);
      else expect(() => assertValidKubeObject(object), name).not.toThrow();
    }
  });

  it('labels everything part-of hookguard and puts every namespaced object in hookguard (the self-test Role in its namespace)', () => {
    for (const object of objects(overlay)) {
      expect(object.metadata.labels?.['app.kubernetes.io/part-of'], `${object.kind}/${object.metadata.name}`).toBe(
        'hookguard',
      );
      const clusterScoped = [
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
      const inSelfTestNamespace = object.metadata.name === 'hookguard-self-test';
      expect(object.metadata.namespace, `${object.kind}/${object.metadata.name}`).toBe(
        clusterScoped.includes(object.kind) ? undefined : inSelfTestNamespace ? 'hookguard-selftest' : 'hookguard',
      );
    }
  });

  it('registers both webhooks safely: v1 only, no side effects, Ignore, 5 s, the hook match condition, kube-system and hookguard left out', () => {
    const mutating = find(objects(overlay), 'MutatingWebhookConfiguration', 'hookguard');
    const validating = find(objects(overlay), 'ValidatingWebhookConfiguration', 'hookguard');
    const common = {
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Ignore',
      timeoutSeconds: 5,
      matchPolicy: 'Equivalent',
      namespaceSelector: NAMESPACE_SELECTOR,
      matchConditions: HOOK_CONDITION,
    };
    expect(mutating.webhooks).toEqual([
      {
        ...common,
        name: 'mutate.hookguard.io',
        reinvocationPolicy: 'IfNeeded',
        clientConfig: { service: { name: 'hookguard', namespace: 'hookguard', path: '/mutate', port: 443 } },
        rules: [rule('batch', 'jobs', ['CREATE', 'UPDATE']), rule('', 'pods', ['CREATE'])],
      },
    ]);
    expect(validating.webhooks).toEqual([
      {
        ...common,
        name: 'validate.hookguard.io',
        clientConfig: { service: { name: 'hookguard', namespace: 'hookguard', path: '/validate', port: 443 } },
        rules: [rule('batch', 'jobs', ['CREATE']), rule('', 'pods', ['CREATE'])],
      },
    ]);
    const annotations = usesCertManager(overlay)
      ? { 'cert-manager.io/inject-ca-from': 'hookguard/hookguard-serving' }
      : undefined;
    expect([mutating.metadata.annotations, validating.metadata.annotations]).toEqual([annotations, annotations]);
  });

  it('points the webhooks at the Service, the Service at the pods, the PDB at the pods', () => {
    const deployment = find(objects(overlay), 'Deployment', 'hookguard');
    const service = find(objects(overlay), 'Service', 'hookguard');
    const pdb = find(objects(overlay), 'PodDisruptionBudget', 'hookguard');
    const podLabels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(podLabels);
    expect(service.spec.selector).toEqual(podLabels);
    expect(pdb.spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: podLabels } });
    expect(service.spec.ports).toEqual([{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }]);
    expect(deployment.spec.template.spec.containers[0].ports).toEqual([
      { name: 'https', containerPort: 8443, protocol: 'TCP' },
    ]);
  });

  it('runs 2 replicas that stay available through an upgrade, spread across nodes and zones, probed over HTTPS', () => {
    const deployment = find(objects(overlay), 'Deployment', 'hookguard');
    const { spec } = deployment;
    expect(spec.replicas).toBe(2);
    expect(spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(spec.template.spec.topologySpreadConstraints.map((constraint: Manifest) => constraint.topologyKey)).toEqual([
      'kubernetes.io/hostname',
      'topology.kubernetes.io/zone',
    ]);
    const [container] = spec.template.spec.containers;
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
    expect(container.resources).toEqual({ requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '256Mi' } });
    expect(spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(DEFAULT_SHUTDOWN_TIMEOUT_S);
  });

  it(`serves in ${modeOf(overlay)} mode with a config file hookguard itself accepts, and the certificate where the Secret is mounted`, () => {
    const deployment = find(objects(overlay), 'Deployment', 'hookguard');
    const configMap = objects(overlay).find((object) => object.kind === 'ConfigMap') as Manifest;
    const [container] = deployment.spec.template.spec.containers;
    expect(container.args).toEqual(['serve']);
    const env = Object.fromEntries(container.env.map((variable: Manifest) => [variable.name, variable.value]));
    expect(env).toEqual({ HOOKGUARD_CONFIG: '/etc/hookguard/config/config.yaml', HOOKGUARD_MODE: modeOf(overlay) });
    const file = join(dir, `${overlay}.yaml`);
    writeFileSync(file, configMap.data['config.yaml']);
    const config = loadConfig({ file, env });
    expect(config.mode).toBe(modeOf(overlay));
    expect(config.server.tls).toMatchObject({
      certFile: '/etc/hookguard/tls/tls.crt',
      keyFile: '/etc/hookguard/tls/tls.key',
    });
    expect(config.excludedNamespaces).toEqual(['kube-system', 'hookguard']);
    const mounts = Object.fromEntries(container.volumeMounts.map((mount: Manifest) => [mount.name, mount.mountPath]));
    expect(mounts).toEqual({ tls: '/etc/hookguard/tls', config: '/etc/hookguard/config', tmp: '/tmp' });
    const volumes = Object.fromEntries(
      deployment.spec.template.spec.volumes.map((volume: Manifest) => [volume.name, volume]),
    );
    expect(volumes.tls.secret).toEqual({ secretName: 'hookguard-tls' });
    expect(volumes.config.configMap).toEqual({ name: configMap.metadata.name });
    if (usesCertManager(overlay))
      expect(find(objects(overlay), 'Certificate', 'hookguard-serving').spec.secretName).toBe('hookguard-tls');
  });

  it(`runs the sweep every 5 minutes, one run at a time, as its own service account, ${modeOf(overlay) === 'audit' ? 'as a dry run' : 'with --apply'}`, () => {
    const cronJob = find(objects(overlay), 'CronJob', 'hookguard-sweep');
    expect(cronJob.spec).toMatchObject({ schedule: '*/5 * * * *', concurrencyPolicy: 'Forbid' });
    const pod = cronJob.spec.jobTemplate.spec.template.spec;
    expect(pod.serviceAccountName).toBe('hookguard-sweep');
    expect(pod.containers[0].args).toEqual(modeOf(overlay) === 'audit' ? ['sweep'] : ['sweep', '--apply']);
    expect(pod.containers[0].image).toBe(
      find(objects(overlay), 'Deployment', 'hookguard').spec.template.spec.containers[0].image,
    );
  });

  it('gives the sweep arguments and a config file the CLI accepts (it stops only for want of a cluster)', async () => {
    const cronJob = find(objects(overlay), 'CronJob', 'hookguard-sweep');
    const [container] = cronJob.spec.jobTemplate.spec.template.spec.containers;
    const configMap = objects(overlay).find((object) => object.kind === 'ConfigMap') as Manifest;
    const file = join(dir, `sweep-${overlay}.yaml`);
    writeFileSync(file, configMap.data['config.yaml']);
    expect(container.env).toEqual([
      { name: 'HOOKGUARD_CONFIG', value: '/etc/hookguard/config/config.yaml' },
      // npm run bench:sweep measures the sweep with this NODE_OPTIONS (docs/sweep.md: the sweep at scale).
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=1' },
    ]);
    const run = await runCommand(container.args, undefined, { HOOKGUARD_CONFIG: file, HOME: dir });
    expect([run.status, run.stderr]).toEqual([
      2,
      'hookguard sweep: no cluster to sweep: set KUBECONFIG, or run in a pod with a service account\n',
    ]);
  });

  it('grants exactly what discovery, the namespace watch and sweep need, each to its own service account', () => {
    const rules = (name: string) => find(objects(overlay), 'ClusterRole', name).rules;
    expect(rules('hookguard-discovery')).toEqual([
      { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
    ]);
    expect(rules('hookguard-sweep')).toEqual([
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['list', 'get', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'get', 'patch'] },
      { apiGroups: ['argoproj.io'], resources: ['workflows'], verbs: ['get'] },
      { apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['get'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
    ]);
    for (const [binding, account] of [
      ['hookguard-discovery', 'hookguard'],
      ['hookguard-sweep', 'hookguard-sweep'],
    ]) {
      const found = find(objects(overlay), 'ClusterRoleBinding', binding as string);
      expect([found.roleRef, found.subjects]).toEqual([
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: binding },
        [{ kind: 'ServiceAccount', name: account, namespace: 'hookguard' }],
      ]);
    }
  });

  it("grants the server's service account exactly what the self-test needs: a dry-run create of the probe Job, its Lease, the HookGuard status", () => {
    const config = loadConfig();
    const role = (kind: string, name: string) => find(objects(overlay), kind, name);
    expect(role('Role', 'hookguard-self-test')).toMatchObject({
      metadata: { namespace: config.selfTest.namespace },
      rules: [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['create'] }],
    });
    expect(role('Role', 'hookguard-leader-election')).toMatchObject({
      metadata: { namespace: config.leaderElection.leaseNamespace },
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          resourceNames: [config.leaderElection.leaseName],
          verbs: ['get', 'update'],
        },
      ],
    });
    expect(role('ClusterRole', 'hookguard-status').rules).toEqual([
      { apiGroups: ['hookguard.io'], resources: ['hookguards'], resourceNames: ['hookguard'], verbs: ['get'] },
      {
        apiGroups: ['hookguard.io'],
        resources: ['hookguards/status'],
        resourceNames: ['hookguard'],
        verbs: ['update'],
      },
    ]);
    for (const [kind, name, roleKind] of [
      ['RoleBinding', 'hookguard-self-test', 'Role'],
      ['RoleBinding', 'hookguard-leader-election', 'Role'],
      ['ClusterRoleBinding', 'hookguard-status', 'ClusterRole'],
    ] as const) {
      const binding = role(kind, name);
      expect([binding.roleRef, binding.subjects]).toEqual([
        { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
        [{ kind: 'ServiceAccount', name: 'hookguard', namespace: 'hookguard' }],
      ]);
    }
  });

  it('dry-runs the probe in a namespace that exists, that both webhooks select, and that hookguard judges', () => {
    const config = loadConfig();
    const namespace = find(objects(overlay), 'Namespace', config.selfTest.namespace);
    expect(namespace.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    const configMap = objects(overlay).find((object) => object.kind === 'ConfigMap') as Manifest;
    const file = join(dir, `self-test-${overlay}.yaml`);
    writeFileSync(file, configMap.data['config.yaml']);
    expect(loadConfig({ file }).excludedNamespaces).not.toContain(config.selfTest.namespace);
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const [webhook] = find(objects(overlay), kind, 'hookguard').webhooks;
      const [excluded] = webhook.namespaceSelector.matchExpressions;
      expect([excluded.key, excluded.operator]).toEqual(['kubernetes.io/metadata.name', 'NotIn']);
      expect(excluded.values).not.toContain(config.selfTest.namespace);
      expect(evaluateMatchCondition(webhook.matchConditions[0].expression, probeJob(config.selfTest.namespace))).toBe(
        true,
      );
    }
  });

  it('ships the HookGuard kind: cluster-scoped, a status subresource, the printer columns, and the one object', () => {
    const crd = find(objects(overlay), 'CustomResourceDefinition', 'hookguards.hookguard.io');
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
    expect(find(objects(overlay), 'HookGuard', 'hookguard')).toMatchObject({
      apiVersion: 'hookguard.io/v1alpha1',
      spec: {},
    });
  });

  it('passes Pod Security "restricted" in every pod it runs, with a read-only root file system and no CPU limit', () => {
    expect(find(objects(overlay), 'Namespace', 'hookguard').metadata.labels['pod-security.kubernetes.io/enforce']).toBe(
      'restricted',
    );
    const pods = [
      find(objects(overlay), 'Deployment', 'hookguard').spec.template.spec,
      find(objects(overlay), 'CronJob', 'hookguard-sweep').spec.jobTemplate.spec.template.spec,
    ];
    for (const pod of pods) expect(restrictedViolations(pod)).toEqual([]);
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

describe("the webhooks' match condition as shipped (CEL, evaluated by @bufbuild/cel)", () => {
  let expression: string;
  beforeAll(() => {
    const expressions = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].map(
      (kind) => find(objects('enforce'), kind, 'hookguard').webhooks[0].matchConditions[0].expression as string,
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
    const shipped = find(objects('audit'), kind, 'hookguard');
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

describe('the sample PrometheusRule (manifests/prometheus)', () => {
  let rule: Manifest;
  beforeAll(async () => {
    [rule] = (await render('prometheus')) as [Manifest];
  });

  it('is a valid PrometheusRule in hookguard, labelled part-of hookguard', () => {
    expect(() => assertValidKubeObject(rule)).not.toThrow();
    expect([rule.metadata.namespace, rule.metadata.labels['app.kubernetes.io/part-of']]).toEqual([
      'hookguard',
      'hookguard',
    ]);
  });

  it('alerts when the self-test has not succeeded for 10 minutes and when the certificate expires within 14 days', () => {
    const rules = rule.spec.groups.flatMap((group: Manifest) => group.rules);
    expect(rules.map((each: Manifest) => [each.alert, each.expr, each.for])).toEqual([
      ['HookguardSelfTestFailing', 'time() - max(hookguard_selftest_last_success_timestamp_seconds) > 600', '1m'],
      [
        'HookguardCertificateExpiresSoon',
        'min(hookguard_tls_certificate_not_after_timestamp_seconds) - time() < 14 * 86400',
        undefined,
      ],
    ]);
  });

  it('parses every expression with the Prometheus PromQL grammar and names only metrics hookguard serves', async () => {
    const rules = rule.spec.groups.flatMap((group: Manifest) => group.rules);
    const served = (await new Metrics({ selfTest: true }).exposition()).text;
    for (const each of rules) {
      expect(promqlErrors(each.expr), each.alert).toEqual([]);
      for (const metric of each.expr.match(/hookguard_[a-z_]+/g) ?? [])
        expect(served, metric).toContain(`# TYPE ${metric} `);
    }
    expect(promqlErrors('time() - max(hookguard_selftest_last_success_timestamp_seconds) >')).not.toEqual([]);
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
