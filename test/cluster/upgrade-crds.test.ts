// `hookguard chart-hook upgrade-crds` (the chart's pre-upgrade hook) against the real API server's server-side apply
// (issue 36: in place of the stand-in's), run as the built CLI with the identity of a ServiceAccount bound to the
// chart's own lifecycle ClusterRole, and `chart-hook delete-webhooks` refused by the real RBAC. The CRD applied is the
// one the hook's Job mounts (the chart's `hookguard-crds` ConfigMap, rendered by helm) under a group of the test's own,
// so that the cluster's hookguard CRD is never touched: the chart's lifecycle rules are bound with that name in their
// resourceNames.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { cliPath } from '../support/cli.js';
import { find, renderChart, type Manifest } from '../support/manifests.js';
import {
  clusterDir,
  deleteNamespace,
  describeCluster,
  kubeconfig as adminKubeconfig,
  kubectl,
  kubectlPath,
  newNamespace,
  run,
} from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';

const CHART_NAME = 'hookguards.hookguard.io';
/** The cluster's hookguard server's own identity: bound to nothing about CRDs. */
const serverKubeconfig = join(clusterDir, 'hookguard', 'kubeconfig');

describeCluster('hookguard chart-hook upgrade-crds against the real API server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-upgrade-crds-'));
  const group = `i${randomBytes(3).toString('hex')}.hookguard.test`;
  const name = `hookguards.${group}`;
  let ns = '';
  let chartCrd: Manifest;
  let crdFile = '';
  let lifecycleKubeconfig = '';
  let patchOnlyKubeconfig = '';
  const clusterScoped: string[] = [];
  /** The webhook configurations the lifecycle identity may delete: this test's. */
  const lifecycleWebhooks = () => `${ns}-lifecycle`;

  /** A kubeconfig for `account` of the test namespace, bound to `rules` at the cluster scope. */
  async function identity(account: string, rules: Manifest[]): Promise<string> {
    const role = `${ns}-${account}`;
    await kubectl(['create', 'serviceaccount', account, '-n', ns]);
    await kubectl(
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: role },
        rules,
      }),
    );
    await kubectl(['create', 'clusterrolebinding', role, `--clusterrole=${role}`, `--serviceaccount=${ns}:${account}`]);
    clusterScoped.push(`clusterrole/${role}`, `clusterrolebinding/${role}`);
    const token = (await kubectl(['create', 'token', account, '-n', ns])).trim();
    const admin = parse(await kubectl(['config', 'view', '--raw', '--kubeconfig', adminKubeconfig])) as Manifest;
    const file = join(dir, `kubeconfig-${account}`);
    writeFileSync(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: admin.clusters,
        users: [{ name: account, user: { token } }],
        contexts: [{ name: account, context: { cluster: admin.clusters[0].name, user: account } }],
        'current-context': account,
      }),
    );
    return file;
  }

  beforeAll(async () => {
    ns = await newNamespace('upgrade-crds');
    const objects = await renderChart();
    const text = find(objects, 'ConfigMap', 'hookguard-crds').data[`${CHART_NAME}.yaml`] as string;
    chartCrd = parse(text) as Manifest;
    chartCrd.metadata.name = name;
    chartCrd.spec.group = group;
    crdFile = join(dir, `${name}.yaml`);
    writeFileSync(crdFile, stringify(chartCrd));
    clusterScoped.push(`customresourcedefinition/${name}`);
    // The chart's lifecycle ClusterRole, its CRD rule naming this test's CRD.
    const lifecycle = find(objects, 'ClusterRole', 'hookguard-lifecycle').rules as Manifest[];
    // Its webhook rule names this test's webhook configurations, so that it can never delete the cluster's.
    const rules = lifecycle.map((rule) =>
      rule.resources?.includes('customresourcedefinitions')
        ? { ...rule, resourceNames: [name] }
        : rule.resources?.includes('mutatingwebhookconfigurations')
          ? { ...rule, resourceNames: [lifecycleWebhooks()] }
          : rule,
    );
    expect(rules.filter((rule) => rule.resourceNames?.[0] === lifecycleWebhooks())).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
        resourceNames: [lifecycleWebhooks()],
        verbs: ['delete'],
      },
    ]);
    expect(rules.filter((rule) => rule.resourceNames?.[0] === name)).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: [name],
        verbs: ['patch', 'create'],
      },
    ]);
    lifecycleKubeconfig = await identity('lifecycle', rules);
    // The chart's ClusterRole before it granted `create`: an apply that finds no CRD needs it.
    patchOnlyKubeconfig = await identity(
      'patch-only',
      rules.map((rule) => (rule.resourceNames?.[0] === name ? { ...rule, verbs: ['patch'] } : rule)),
    );
  });
  afterAll(async () => {
    for (const object of clusterScoped)
      await run(kubectlPath, ['delete', object, '--ignore-not-found', '--wait=false']);
    if (ns) await deleteNamespace(ns);
    rmSync(dir, { recursive: true, force: true });
  });

  const upgrade = async (kubeconfig: string, file = crdFile) => {
    const result = await run(process.execPath, [cliPath, 'chart-hook', 'upgrade-crds', file], {
      env: { KUBECONFIG: kubeconfig, HOME: dir },
    });
    return [result.status, result.stdout, result.stderr];
  };
  const stored = async () =>
    JSON.parse(await kubectl(['get', 'crd', name, '--show-managed-fields', '-o', 'json'])) as Manifest;
  const deleteCrd = async () => {
    await kubectl(['delete', 'crd', name, '--ignore-not-found', '--wait=true']);
  };
  const applied = `applied CustomResourceDefinition ${name}\n`;
  /** The chart's CRD as the API server stores it: its spec, defaulted (conversion: None). */
  const storedSpec = () => ({ ...chartCrd.spec, conversion: { strategy: 'None' } });
  const managers = (crd: Manifest) =>
    (crd.metadata.managedFields as Manifest[]).map((entry) => [
      entry.manager,
      entry.operation,
      entry.apiVersion,
      entry.subresource ?? '',
    ]);

  it('says what the API server refused, exit 1: an identity that may not create the CRD, and one that may not patch it', async () => {
    expect(await upgrade(patchOnlyKubeconfig)).toEqual([
      1,
      '',
      `hookguard chart-hook: cannot apply CustomResourceDefinition ${name} (kubeconfig ${patchOnlyKubeconfig}): HTTP 403: customresourcedefinitions.apiextensions.k8s.io "${name}" is forbidden: User "system:serviceaccount:${ns}:patch-only" cannot create resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope\n`,
    ]);
    expect((await run(kubectlPath, ['get', 'crd', name])).stderr).toContain('NotFound');
    expect(await upgrade(serverKubeconfig)).toEqual([
      1,
      '',
      `hookguard chart-hook: cannot apply CustomResourceDefinition ${name} (kubeconfig ${serverKubeconfig}): HTTP 403: customresourcedefinitions.apiextensions.k8s.io "${name}" is forbidden: User "system:serviceaccount:hookguard:hookguard" cannot patch resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope\n`,
    ]);
  });

  it('creates the CRD when it is missing, as the chart lifecycle identity, owned by hookguard-chart', async () => {
    await deleteCrd();
    expect(await upgrade(lifecycleKubeconfig)).toEqual([0, applied, '']);
    const crd = await stored();
    expect(crd.spec).toEqual(storedSpec());
    expect(crd.metadata.generation).toBe(1);
    // The API server's own CRD controllers write the status (acceptedNames, conditions) as kube-apiserver.
    expect(managers(crd)).toEqual([
      ['hookguard-chart', 'Apply', 'apiextensions.k8s.io/v1', ''],
      ['kube-apiserver', 'Update', 'apiextensions.k8s.io/v1', 'status'],
    ]);
    expect(crd.status.storedVersions).toEqual(['v1alpha1']);
  });

  it("updates an older CRD to exactly the chart's, taking the changed field from its manager (force), and a second run writes nothing", async () => {
    await deleteCrd();
    // The CRD an older chart installed: without the Webhook column, created by kubectl (an Update manager).
    const older = structuredClone(chartCrd);
    const [version] = older.spec.versions as Manifest[];
    version!.additionalPrinterColumns = (version!.additionalPrinterColumns as Manifest[]).filter(
      (column) => column.name !== 'Webhook',
    );
    await kubectl(['create', '--field-manager=helm', '-f', '-'], JSON.stringify(older));
    const before = await stored();
    // The same apply without force is refused: helm owns the field that changes.
    const unforced = await run(kubectlPath, [
      'apply',
      '--server-side',
      '--field-manager=hookguard-chart',
      '-f',
      crdFile,
    ]);
    // kubectl prints the 409's message, then its advice. No time in it: an Update manager is named without one.
    expect([unforced.status, unforced.stderr.split('\n')[0]]).toEqual([
      1,
      'error: Apply failed with 1 conflict: conflict with "helm" using apiextensions.k8s.io/v1: .spec.versions',
    ]);

    expect(await upgrade(lifecycleKubeconfig)).toEqual([0, applied, '']);
    const after = await stored();
    expect(after.spec).toEqual(storedSpec());
    expect([after.metadata.uid, after.metadata.generation]).toEqual([before.metadata.uid, 2]);
    expect(managers(after)).toEqual([
      ['hookguard-chart', 'Apply', 'apiextensions.k8s.io/v1', ''],
      ['helm', 'Update', 'apiextensions.k8s.io/v1', ''],
      ['kube-apiserver', 'Update', 'apiextensions.k8s.io/v1', 'status'],
    ]);

    // A retried hook, or the next upgrade of the same chart: nothing is written.
    expect(await upgrade(lifecycleKubeconfig)).toEqual([0, applied, '']);
    expect((await stored()).metadata.resourceVersion).toBe(after.metadata.resourceVersion);
    // Its first step, `kubectl delete crd --wait` of the CRD the case before created, once took 161 s in a loaded
    // .ci/run (12 s elsewhere): the API server's CRD finalizer had not let go of it sooner. Cause not yet found.
  }, 300_000);

  it('a CRD that drops a version objects are stored in: the 422 in one line, exit 1, the CRD unchanged', async () => {
    const before = await stored();
    const [version] = chartCrd.spec.versions as Manifest[];
    const laterCrd = join(dir, 'later-crd.json');
    writeFileSync(
      laterCrd,
      JSON.stringify({ ...chartCrd, spec: { ...chartCrd.spec, versions: [{ ...version, name: 'v1' }] } }),
    );
    const v1alpha1 = 'v1alpha1';
    expect(await upgrade(lifecycleKubeconfig, laterCrd)).toEqual([
      1,
      '',
      `hookguard chart-hook: cannot apply CustomResourceDefinition ${name} (kubeconfig ${lifecycleKubeconfig}): HTTP 422: CustomResourceDefinition.apiextensions.k8s.io "${name}" is invalid: status.storedVersions[0]: Invalid value: "${v1alpha1}": missing from spec.versions; ${v1alpha1} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ${v1alpha1} and removes ${v1alpha1} from status.storedVersions\n`,
    ]);
    expect((await stored()).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('delete-webhooks (the pre-delete hook) as an identity that may not delete them: the 403, exit 1, both kept', async () => {
    const webhooks = `${ns}-webhooks`;
    for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']) {
      await kubectl(
        ['create', '-f', '-'],
        JSON.stringify({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: webhooks } }),
      );
      clusterScoped.push(`${kind.toLowerCase()}/${webhooks}`);
    }
    const result = await run(process.execPath, [cliPath, 'chart-hook', 'delete-webhooks', webhooks], {
      env: { KUBECONFIG: serverKubeconfig, HOME: dir },
    });
    expect([result.status, result.stdout, result.stderr]).toEqual([
      1,
      '',
      `hookguard chart-hook: cannot delete ValidatingWebhookConfiguration and MutatingWebhookConfiguration ${webhooks} (kubeconfig ${serverKubeconfig}): HTTP 403: validatingwebhookconfigurations.admissionregistration.k8s.io "${webhooks}" is forbidden: User "system:serviceaccount:hookguard:hookguard" cannot delete resource "validatingwebhookconfigurations" in API group "admissionregistration.k8s.io" at the cluster scope\n`,
    ]);
    await kubectl(['get', 'validatingwebhookconfiguration,mutatingwebhookconfiguration', webhooks]);
  });
  it('delete-webhooks (the pre-delete hook) as the chart lifecycle identity deletes both, and takes those gone as deleted', async () => {
    for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']) {
      await kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind,
          metadata: { name: lifecycleWebhooks() },
        }),
      );
      clusterScoped.push(`${kind.toLowerCase()}/${lifecycleWebhooks()}`);
    }
    const deleteWebhooks = async () => {
      const result = await run(process.execPath, [cliPath, 'chart-hook', 'delete-webhooks', lifecycleWebhooks()], {
        env: { KUBECONFIG: lifecycleKubeconfig, HOME: dir },
      });
      return [result.status, result.stdout, result.stderr];
    };
    expect(await deleteWebhooks()).toEqual([
      0,
      `deleted ValidatingWebhookConfiguration and MutatingWebhookConfiguration ${lifecycleWebhooks()}\n`,
      '',
    ]);
    const left = await run(kubectlPath, [
      'get',
      'validatingwebhookconfiguration,mutatingwebhookconfiguration',
      lifecycleWebhooks(),
      '--ignore-not-found',
      '-o',
      'name',
    ]);
    expect([left.status, left.stdout]).toEqual([0, '']);
    // Run again (a retried hook, or an uninstall after someone deleted them): the API server's 404s count as done.
    expect(await deleteWebhooks()).toEqual([
      0,
      `deleted ValidatingWebhookConfiguration and MutatingWebhookConfiguration ${lifecycleWebhooks()}\n`,
      '',
    ]);
  });

  it('upgrade-crds with no API server answering (the fault proxy stopped) says the request failed and why, exit 1', async () => {
    const proxy = await FaultProxy.start();
    const proxyKubeconfig = join(dir, 'kubeconfig-gone');
    // No request gets through, so the kubeconfig needs no real identity.
    writeFileSync(proxyKubeconfig, proxy.kubeConfig('no-token').exportConfig());
    await proxy.stop();
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
    expect(await upgrade(proxyKubeconfig)).toEqual([
      1,
      '',
      `hookguard chart-hook: cannot apply CustomResourceDefinition ${name} (kubeconfig ${proxyKubeconfig}): request to ${proxy.url}${path}?fieldManager=hookguard-chart&force=true failed, reason: connect ECONNREFUSED 127.0.0.1:${proxy.port}\n`,
    ]);
  });
});
