// The chart's admission.mode policies on the real control plane (kube-apiserver 1.37.2, `npm run cluster:up`): what
// `helm template` renders for the API server's own version (its admission policies, bindings and parameters, and no
// webhook configuration), applied with kubectl, changes hook Jobs created in a namespace no webhook configuration
// reaches. test/manifests/chart-policies.test.ts holds the rendered objects equal to `hookguard policies`; this holds
// that the API server accepts them and applies them: parameters in the release namespace read through the
// binding's paramRef, the chart's labels, the excluded namespaces.
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { kubePolicyParamsClient, policyParamsTask } from '../../src/controllers/policy-params.js';
import { discoveryOff } from '../../src/discovery/discovery.js';
import { find, renderChart, type Manifest } from '../support/manifests.js';
import {
  adminKubeConfig,
  AUDIT_NAMESPACE_LABEL,
  clusterState,
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlJson,
  kubectlPath,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import { untilEveryPolicyActs } from './support/policy-probes.js';

// Out of the cluster's own hookguard webhooks (test/cluster/cluster.js installs them for namespaces without it): both
// namespaces, so that only the policies act, the release namespace's exclusion included.
const WEBHOOK_OUT_OF_REACH = { [AUDIT_NAMESPACE_LABEL]: 'chart-policies' };

/** A Helm hook Job: no TTL, no delete policy, retries and termination message policy as written. */
function hookJob(name: string, hook: string, spec: Record<string, unknown> = {}): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations: { 'helm.sh/hook': hook } },
    spec: {
      ...spec,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'migrate', image: 'busybox' }] } },
    },
  };
}

describeCluster("the chart's admission.mode policies on kube-apiserver 1.37.2", () => {
  let release = '';
  let hooks = '';
  let applied: Manifest[] = [];
  let rendered: Manifest[] = [];
  /** The API server's own version, which helm renders for. */
  let KUBE_VERSION = '';

  /** kubectl create (or a server dry run) in the hooks' namespace: the stored object and the warnings. */
  async function create(object: Manifest, dryRun = false): Promise<{ stored: Manifest; warnings: string[] }> {
    const result = await run(
      kubectlPath,
      ['create', '-n', hooks, '-o', 'json', ...(dryRun ? ['--dry-run=server'] : []), '-f', '-'],
      { input: JSON.stringify(object) },
    );
    expect([result.status, result.stderr.replace(/^Warning: .*\n/gm, '')]).toEqual([0, '']);
    const warnings = [...result.stderr.matchAll(/^Warning: (.*)$/gm)].map((match) => match[1]!);
    return { stored: JSON.parse(result.stdout) as Manifest, warnings };
  }

  beforeAll(async () => {
    const server = JSON.parse(await kubectl(['version', '-o', 'json'])) as { serverVersion: { gitVersion: string } };
    KUBE_VERSION = server.serverVersion.gitVersion;
    release = await newNamespace('chart-policies', WEBHOOK_OUT_OF_REACH);
    hooks = await newNamespace('chart-policies-hooks', WEBHOOK_OUT_OF_REACH);
    rendered = await renderChart({
      namespace: release,
      values: { admission: { mode: 'policies' } },
      kubeVersion: KUBE_VERSION,
    });
    applied = rendered.filter(
      (object) =>
        object.metadata.labels?.['hookguard.io/policies'] === 'generated' ||
        object.metadata.name === 'hookguard-policy-params',
    );
    await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: applied }));
    // What the chart's server does on its Lease holder (config policyParams, which the chart turns on): one write of
    // the parameters into the release namespace, here with discovery off (argocd.version null: unknown).
    const kubeConfig = adminKubeConfig();
    const written = new AbortController();
    const task = policyParamsTask(
      loadConfig({ overrides: { 'policyParams.enabled': true, 'policyParams.namespace': release } }),
      {
        apply: async (configMap) => {
          await kubePolicyParamsClient(kubeConfig).apply(configMap);
          written.abort();
        },
      },
      () => discoveryOff('not in this test'),
      pino({ level: 'silent' }),
    );
    await task.run(written.signal);
    await untilEveryPolicyActs(create);
  }, 120_000);

  afterAll(async () => {
    if (applied.length > 0)
      await run(kubectlPath, ['delete', '--ignore-not-found', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: applied }),
      });
    await deleteNamespace(hooks);
    await deleteNamespace(release);
  });

  it('renders no webhook configuration, and no webhook configuration of the cluster reaches the hooks namespace', async () => {
    expect(rendered.filter((object) => /WebhookConfiguration$/.test(object.kind))).toEqual([]);
    for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
      const { items } = await kubectlJson<{ items: Manifest[] }>(['get', kind]);
      for (const configuration of items)
        for (const webhook of configuration.webhooks as Manifest[])
          expect(webhook.namespaceSelector?.matchExpressions, webhook.name).toContainEqual({
            key: AUDIT_NAMESPACE_LABEL,
            operator: 'DoesNotExist',
          });
    }
  });

  it("lets the chart's server write the parameters (server-side apply, field manager hookguard), by that name only", async () => {
    const params = await kubectlJson<Manifest>([
      'get',
      'configmap',
      'hookguard-policy-params',
      '-n',
      release,
      '--show-managed-fields',
    ]);
    expect(params.data).toEqual({ argocdVersion: '', ttlFloorOnArgoSyncHooks: 'true' });
    expect(params.metadata.managedFields.map((field: Manifest) => [field.manager, field.operation])).toEqual([
      ['hookguard', 'Apply'],
    ]);
    expect(find(rendered, 'RoleBinding', 'hookguard-policy-params').subjects[0].name).toBe('hookguard');
    const can = async (verb: string, name: string) =>
      (
        await run(kubectlPath, [
          'auth',
          'can-i',
          verb,
          `configmaps/${name}`,
          '-n',
          release,
          `--as=system:serviceaccount:${release}:hookguard`,
        ])
      ).stdout.trim();
    expect([await can('patch', 'hookguard-policy-params'), await can('create', 'hookguard-policy-params')]).toEqual([
      'yes',
      'yes',
    ]);
    expect([await can('patch', 'hookguard-config'), await can('get', 'hookguard-policy-params')]).toEqual(['no', 'no']);
  });

  it("gives a hook Job the policies' changes: the label, a TTL, FallbackToLogsOnError, and the deadline warning", async () => {
    const { stored, warnings } = await create(hookJob('migrate', 'pre-install,pre-upgrade'));
    expect(stored.metadata.labels?.['hookguard.io/hook']).toBe('admitted');
    expect(stored.spec.ttlSecondsAfterFinished).toBe(86400);
    expect(stored.spec.template.spec.containers[0].terminationMessagePolicy).toBe('FallbackToLogsOnError');
    expect(warnings).toEqual([
      expect.stringMatching(
        /^Validation failed for ValidatingAdmissionPolicy 'hookguard-hook-deadline' with binding 'hookguard-hook-deadline': hookguard \[hook-deadline\]: /,
      ),
    ]);
  });

  it("raises a TTL below the floor (the binding reads the parameters in the release namespace) and a cleanup hook's retries", async () => {
    const floored = await create(hookJob('short-ttl', 'post-install', { ttlSecondsAfterFinished: 5 }));
    expect(floored.stored.spec.ttlSecondsAfterFinished).toBe(60);
    const cleanup = await create(hookJob('cleanup', 'pre-delete', { backoffLimit: 0 }));
    expect(cleanup.stored.spec.backoffLimit).toBe(3);
  });

  it('accepts the audit-mode binding of the deadline warning, [Audit, Warn] (issue 38.3)', async () => {
    const audit = await renderChart({
      namespace: release,
      values: { admission: { mode: 'policies' }, mode: 'audit' },
      kubeVersion: KUBE_VERSION,
    });
    const binding = find(audit, 'ValidatingAdmissionPolicyBinding', 'hookguard-hook-deadline');
    // Under another name: the enforce-mode binding of that name is applied already.
    const renamed = { ...binding, metadata: { ...binding.metadata, name: 'hookguard-hook-deadline-audit' } };
    const created = await run(kubectlPath, ['create', '--dry-run=server', '-o', 'json', '-f', '-'], {
      input: JSON.stringify(renamed),
    });
    expect([created.status, created.stderr]).toEqual([0, '']);
    expect((JSON.parse(created.stdout) as Manifest).spec.validationActions).toEqual(['Audit', 'Warn']);
  });

  it("with the webhook too (admission.mode both): the policies change the hook first, so the webhook's rule has nothing left to do", async () => {
    // The API server runs MutatingAdmissionPolicy before MutatingAdmissionWebhook (kubernetes v1.37.2
    // pkg/kubeapiserver/options/plugins.go, AllOrderedPlugins). The cluster's own hookguard webhook reaches this
    // namespace; its count of hook-pod-restart-policy's changes (Pods only, which the self-test's probe Job never
    // touches) says whether the webhook made the change.
    const reached = await newNamespace('chart-policies-both');
    try {
      const state = clusterState();
      const changes = async () => {
        const text = await (await fetch(`http://127.0.0.1:${state.ports.hookguardProbe}/metrics`)).text();
        const line = /^hookguard_rule_actions_total\{rule="hook-pod-restart-policy",action="mutate"\} (\d+)$/m.exec(
          text,
        );
        return Number(line?.[1] ?? 0);
      };
      const pod = (name: string) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, annotations: { 'helm.sh/hook': 'test' } },
        spec: { restartPolicy: 'Always', containers: [{ name: 'test', image: 'busybox' }] },
      });
      const createIn = async (namespace: string, object: Manifest) => {
        const result = await run(kubectlPath, ['create', '-n', namespace, '-o', 'json', '-f', '-'], {
          input: JSON.stringify(object),
        });
        expect(result.status, result.stderr).toBe(0);
        return JSON.parse(result.stdout) as Manifest;
      };
      // The check can fail: with the policy's binding gone, the webhook makes the change and counts it.
      await kubectl(['delete', 'mutatingadmissionpolicybinding', 'hookguard-hook-pod-restart-policy']);
      await waitUntil('the webhook alone to change a hook Pod', async () => {
        const before = await changes();
        const stored = await createIn(reached, pod(`webhook-${before}-${Date.now()}`));
        return stored.spec.restartPolicy === 'Never' && (await changes()) === before + 1;
      });
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify(find(applied, 'MutatingAdmissionPolicyBinding', 'hookguard-hook-pod-restart-policy')),
      );
      await waitUntil('the policy to change a hook Pod before the webhook', async () => {
        const before = await changes();
        const stored = await createIn(reached, pod(`both-${before}-${Date.now()}`));
        return stored.spec.restartPolicy === 'Never' && (await changes()) === before;
      });
    } finally {
      await deleteNamespace(reached);
    }
  });

  it('leaves a Job that is no hook, and a hook in the release namespace (excluded), as they were', async () => {
    const plain = hookJob('plain', 'pre-install');
    delete plain.metadata.annotations;
    const { stored } = await create(plain);
    expect([stored.metadata.labels?.['hookguard.io/hook'], stored.spec.ttlSecondsAfterFinished]).toEqual([
      undefined,
      undefined,
    ]);
    const inRelease = await run(kubectlPath, ['create', '-n', release, '--dry-run=server', '-o', 'json', '-f', '-'], {
      input: JSON.stringify(hookJob('excluded', 'pre-install')),
    });
    expect(inRelease.status).toBe(0);
    expect((JSON.parse(inRelease.stdout) as Manifest).spec.ttlSecondsAfterFinished).toBeUndefined();
  });
});
