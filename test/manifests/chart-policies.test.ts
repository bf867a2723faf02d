// The chart's admission.mode (issue 38.4): policies renders exactly what `hookguard policies` generates from the
// config the chart gives the server, and no webhook configuration; both renders the two; webhook (the default)
// renders what it always did. The policies come from charts/hookguard/files/admission-policies.json, which must be
// what src/policies/chart.ts generates (`npm run chart:policies`).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { chartPolicies } from '../../src/policies/chart.js';
import { admissionPolicies, POLICIES_LABEL, POLICY_SETTINGS } from '../../src/policies/generate.js';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { CHART, find, helmTemplate, renderChart, type Manifest } from '../support/manifests.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-chart-policies-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WEBHOOK_KINDS = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];
const KUBE = '1.37.2';

const key = (object: Manifest) => `${object.kind}/${object.metadata.name}`;

/** What the chart rendered of hookguard policies: the policies and their bindings. */
const policyObjects = (objects: readonly Manifest[]) =>
  objects.filter((object) => object.metadata.labels?.[POLICIES_LABEL] !== undefined);

/** The server's config file as the chart rendered it, loaded by hookguard. */
function serverConfig(objects: readonly Manifest[], name: string) {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, find(objects, 'ConfigMap', 'hookguard-config').data['config.yaml']);
  return loadConfig({ file });
}

/**
 * `hookguard policies` run on the config file the chart rendered for the server, in the release namespace, but the
 * parameters ConfigMap: the server writes that one (config policyParams).
 */
function generatedFrom(objects: readonly Manifest[], namespace: string, name: string): Manifest[] {
  return admissionPolicies(decisionContext(serverConfig(objects, name)), { namespace }).filter(
    (object) => object.kind !== 'ConfigMap',
  );
}

describe('charts/hookguard/files/admission-policies.json', () => {
  it('is what src/policies generates (run `npm run chart:policies` after changing src/policies or a rule)', () => {
    const committed = JSON.parse(readFileSync(join(CHART, 'files', 'admission-policies.json'), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(chartPolicies())));
  });

  it.each(POLICY_SETTINGS)(
    'lists %s, which changes the generated policies (so the chart refuses a value other than its default)',
    (path) => {
      const changed: Record<string, unknown> = {
        'rules.hookTtl.ttlSecondsAfterFinished': 7200,
        'rules.ttlFloor.minTtlSecondsAfterFinished': 120,
        'rules.idempotentCleanup.minBackoffLimit': 5,
        'rules.hookDeadline.activeDeadlineSeconds': 600,
        'rules.hookDeadline.parallelJobs': true,
        'rules.hookDeadline.warn': false,
        'argocd.controllerUsernames': 'system:serviceaccount:gitops:argocd-application-controller',
        'argocd.trackingLabel': 'app.example.com/instance',
      };
      const generate = (overrides: Record<string, unknown>) =>
        admissionPolicies(decisionContext(loadConfig({ overrides })), { namespace: 'hookguard' });
      // parallelJobs counts only with a deadline set, as the rule reads it.
      const base = path.endsWith('parallelJobs') ? { 'rules.hookDeadline.activeDeadlineSeconds': 600 } : {};
      expect(generate({ ...base, [path]: changed[path] })).not.toEqual(generate(base));
    },
  );
});

describe.each([
  { name: 'policies, defaults', mode: 'policies', namespace: 'hookguard', values: {} },
  {
    name: 'policies, audit mode, more excluded namespaces, hook-label off',
    mode: 'policies',
    namespace: 'platform-tools',
    values: {
      mode: 'audit',
      excludedNamespaces: ['istio-system'],
      config: { rules: { hookLabel: { enabled: false } } },
    },
  },
  {
    name: 'both, ttl-floor and hook-deadline off',
    mode: 'both',
    namespace: 'security',
    values: {
      excludedNamespaces: ['istio-system', 'security'],
      config: { rules: { ttlFloor: { enabled: false }, hookDeadline: { enabled: false } } },
    },
  },
])('admission.mode $mode: $name', ({ name, mode, namespace, values }) => {
  const render = (helm: 3 | 4) =>
    renderChart({ namespace, values: { ...values, admission: { mode } }, helm, kubeVersion: KUBE });

  it.each([4, 3] as const)(
    'helm %s renders exactly what hookguard policies generates from the config the server gets, with the chart labels',
    async (helm) => {
      const objects = await render(helm);
      const rendered = policyObjects(objects);
      const generated = generatedFrom(objects, namespace, `${name}-${helm}`);
      expect(rendered.map(key).sort()).toEqual(generated.map(key).sort());
      for (const object of generated) {
        const { labels, ...metadata } = object.metadata as Manifest;
        const chart = find(rendered, object.kind, metadata.name);
        expect({ ...chart, metadata: { ...chart.metadata, labels: undefined } }, key(object)).toEqual({
          ...object,
          metadata: { ...metadata, labels: undefined },
        });
        expect(chart.metadata.labels).toMatchObject({
          [POLICIES_LABEL]: labels[POLICIES_LABEL],
          'app.kubernetes.io/part-of': 'hookguard',
          'app.kubernetes.io/instance': 'hookguard',
        });
        if (object.kind === 'ValidatingAdmissionPolicy')
          expect(() => assertValidKubeObject(chart), key(object)).not.toThrow();
      }
    },
  );

  it(`${mode === 'policies' ? 'installs no webhook configuration and no self-test' : 'keeps both webhook configurations and the self-test'}; the Deployment and the sweep stay`, async () => {
    const objects = await render(4);
    const kinds = new Set(objects.map((object) => object.kind));
    for (const kind of WEBHOOK_KINDS) expect(kinds.has(kind), kind).toBe(mode === 'both');
    expect(objects.some((object) => object.kind === 'Pod' && object.metadata.name === 'hookguard-test')).toBe(
      mode === 'both',
    );
    const config = serverConfig(objects, `${name}-serve`);
    expect(config.selfTest.enabled).toBe(mode === 'both');
    // The server keeps the parameters the bindings read, in the release namespace, with a Role for that one name.
    expect(config.policyParams).toMatchObject({ enabled: true, namespace });
    expect(
      objects.some((object) => object.kind === 'ConfigMap' && object.metadata.name === 'hookguard-policy-params'),
    ).toBe(false);
    expect(find(objects, 'Role', 'hookguard-policy-params').rules).toEqual([
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['hookguard-policy-params'],
        verbs: ['patch', 'create'],
      },
    ]);
    expect(find(objects, 'RoleBinding', 'hookguard-policy-params').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'hookguard', namespace },
    ]);
    expect(find(objects, 'Deployment', 'hookguard').spec.replicas).toBe(2);
    expect(find(objects, 'CronJob', 'hookguard-sweep')).toBeDefined();
  });
});

describe('admission.mode policies with the PrometheusRule on', () => {
  it('has no self-test alert, which would fire for ever: nothing runs the self-test without webhooks', async () => {
    const values = { admission: { mode: 'policies' }, prometheusRule: { enabled: true } };
    const rule = find(await renderChart({ values, kubeVersion: KUBE }), 'PrometheusRule', 'hookguard');
    const alerts = (rule.spec.groups as Manifest[]).flatMap((group) => (group.rules as Manifest[]).map((r) => r.alert));
    expect(alerts).not.toContain('HookguardSelfTestFailing');
    expect(alerts).toContain('HookguardErrors');
  });
});

describe('admission.mode webhook (the default)', () => {
  it('renders no admission policy of hookguard policies, and both webhook configurations', async () => {
    const objects = await renderChart({ kubeVersion: KUBE });
    expect(policyObjects(objects).map(key)).toEqual([]);
    expect(objects.filter((object) => object.metadata.name === 'hookguard-policy-params').map(key)).toEqual([]);
    expect(serverConfig(objects, 'webhook').policyParams.enabled).toBe(false);
    expect(objects.filter((object) => WEBHOOK_KINDS.includes(object.kind)).map(key)).toEqual([
      'MutatingWebhookConfiguration/hookguard',
      'ValidatingWebhookConfiguration/hookguard',
    ]);
  });
});

describe('what admission.mode policies and both refuse', () => {
  it.each([
    ['policies', 3],
    ['both', 4],
  ] as const)(
    '%s: helm %s refuses Kubernetes 1.35, naming the version, and renders for 1.36.0-gke.1',
    async (mode, helm) => {
      const values = { admission: { mode } };
      const old = await helmTemplate({ values, helm, kubeVersion: '1.35.4' });
      expect([old.status, old.stderr]).toEqual([
        1,
        expect.stringContaining(
          `admission.mode ${mode} needs Kubernetes 1.36 or later (MutatingAdmissionPolicy admissionregistration.k8s.io/v1); this cluster is v1.35.4: use admission.mode webhook`,
        ),
      ]);
      expect((await helmTemplate({ values, helm, kubeVersion: '1.36.0-gke.1' })).status).toBe(0);
    },
  );

  it.each([
    [
      'a rule setting the CEL is written from',
      { config: { rules: { hookTtl: { ttlSecondsAfterFinished: 3600 } } } },
      'admission.mode policies renders the policies generated for config.rules.hookTtl.ttlSecondsAfterFinished 86400, not 3600',
    ],
    [
      'an Argo CD identity',
      { config: { argocd: { trackingLabel: 'app.example.com/instance' } } },
      'renders the policies generated for config.argocd.trackingLabel null, not "app.example.com/instance"',
    ],
    [
      'a remote Argo CD',
      { argocd: { remote: { 'system:serviceaccount:kube-system:argocd-manager': null } } },
      'argocd.remote adds Argo CD identities to the policies',
    ],
  ])('refuses %s, saying to generate them with hookguard policies instead', async (_name, values, message) => {
    const result = await helmTemplate({ values: { ...values, admission: { mode: 'policies' } }, kubeVersion: KUBE });
    expect([result.status, result.stderr]).toEqual([1, expect.stringContaining(message)]);
    expect(result.stderr).toContain('hookguard policies');
  });

  it('renders a rule setting written at its default, a switch of a rule the policies carry, a pinned Argo CD', async () => {
    const values = {
      admission: { mode: 'policies' },
      argocd: { version: '3.1.4' },
      config: {
        rules: { hookTtl: { ttlSecondsAfterFinished: 86400, enabled: false }, minRuntime: { enabled: false } },
      },
    };
    const objects = await renderChart({ values, kubeVersion: KUBE });
    expect(policyObjects(objects).map(key)).not.toContain('MutatingAdmissionPolicy/hookguard-hook-ttl');
    expect(policyObjects(objects).map(key)).toContain('MutatingAdmissionPolicy/hookguard-ttl-floor');
  });

  it('refuses an admission.mode it does not know', async () => {
    const result = await helmTemplate({ values: { admission: { mode: 'vap' } }, kubeVersion: KUBE });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('admission');
  });
});
