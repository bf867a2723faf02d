// `hookguard chart-hook upgrade-crds` (the chart's pre-upgrade hook), and delete-webhooks refused, run as the built CLI against the stand-in for
// kube-apiserver (test/support/fake-apiserver.ts), which answers server-side apply as kube-apiserver v1.33 does in the
// subset test/support/server-side-apply.ts states, and authorizes each request with the RBAC rules of the chart's
// lifecycle ClusterRole as the real helm renders it. The CRD applied is the one the hook's Job mounts: the chart's
// `hookguard-crds` ConfigMap, rendered by helm.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCommand } from '../support/command.js';
import { FakeApiServer, rbacAuthorizer, serviceAccountToken, type PolicyRule } from '../support/fake-apiserver.js';
import { find, renderChart, type Manifest } from '../support/manifests.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-upgrade-crds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NAME = 'hookguards.hookguard.io';
const PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${NAME}`;
const LIFECYCLE = 'system:serviceaccount:hookguard:hookguard-lifecycle';
/** The server's own identity: bound to nothing about CRDs. */
const SERVER = 'system:serviceaccount:hookguard:hookguard';

let crdFile: string;
let chartCrd: Manifest;
let rulesByUser: Record<string, PolicyRule[]>;

/** What each service account may do, from the chart's ClusterRoleBindings and the ClusterRoles they bind. */
function clusterRules(objects: readonly Manifest[]): Record<string, PolicyRule[]> {
  const rules: Record<string, PolicyRule[]> = {};
  for (const binding of objects.filter((object) => object.kind === 'ClusterRoleBinding'))
    for (const subject of binding.subjects as Manifest[]) {
      const user = `system:serviceaccount:${subject.namespace}:${subject.name}`;
      (rules[user] ??= []).push(...(find(objects, 'ClusterRole', binding.roleRef.name).rules as PolicyRule[]));
    }
  return rules;
}

beforeAll(async () => {
  const objects = await renderChart();
  const text = find(objects, 'ConfigMap', 'hookguard-crds').data[`${NAME}.yaml`] as string;
  crdFile = join(dir, `${NAME}.yaml`);
  writeFileSync(crdFile, text);
  chartCrd = parse(text) as Manifest;
  rulesByUser = clusterRules(objects);
});

/** The stand-in, authorizing as the chart's RBAC does; and the environment of a CLI run as `user`. */
async function cluster(user = LIFECYCLE) {
  const fake = await new FakeApiServer().start();
  fake.authorize = rbacAuthorizer(rulesByUser);
  const kubeconfig = join(dir, `kubeconfig-${fake.port}`);
  writeFileSync(kubeconfig, fake.kubeConfig('hookguard', serviceAccountToken(user)).exportConfig());
  const env = { KUBECONFIG: kubeconfig, HOME: dir };
  const upgrade = async (file = crdFile) => {
    const run = await runCommand(['chart-hook', 'upgrade-crds', file], undefined, env);
    return [run.status, run.stdout, run.stderr];
  };
  const patches = () =>
    fake.requests
      .filter((request) => request.method === 'PATCH')
      .map(({ path, contentType, query, status }) => ({ path, contentType, query, status }));
  return { fake, kubeconfig, upgrade, patches };
}

const APPLIED = ['applied CustomResourceDefinition hookguards.hookguard.io\n'];
/** The request applyCrd must send: server-side apply, hookguard's field manager, force. */
const APPLY = {
  path: PATH,
  contentType: 'application/apply-patch+yaml',
  query: { fieldManager: 'hookguard-chart', force: 'true' },
};
/** The chart's CRD as kube-apiserver stores it: its spec, defaulted (conversion: None). */
const storedSpec = () => ({ ...chartCrd.spec, conversion: { strategy: 'None' } });
const chartFields = () => ({ 'f:spec': { 'f:group': {}, 'f:scope': {}, 'f:names': {}, 'f:versions': {} } });
const applyEntry = () => ({
  manager: 'hookguard-chart',
  operation: 'Apply',
  apiVersion: 'apiextensions.k8s.io/v1',
  time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
  fieldsType: 'FieldsV1',
  fieldsV1: chartFields(),
});

/** The CRD an older chart installed: v1alpha1 without the Webhook column, created by `helm` (an Update manager). */
function olderCrd(): Manifest {
  const older = structuredClone(chartCrd);
  const [version] = older.spec.versions as Manifest[];
  version!.additionalPrinterColumns = (version!.additionalPrinterColumns as Manifest[]).filter(
    (column) => column.name !== 'Webhook',
  );
  return {
    ...older,
    metadata: {
      name: NAME,
      managedFields: [
        {
          manager: 'helm',
          operation: 'Update',
          apiVersion: 'apiextensions.k8s.io/v1',
          time: '2026-01-05T10:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:spec': { 'f:conversion': {}, ...chartFields()['f:spec'] } },
        },
      ],
    },
    spec: { ...older.spec, conversion: { strategy: 'None' } },
    status: { acceptedNames: { plural: 'hookguards', kind: 'HookGuard' }, storedVersions: ['v1alpha1'] },
  };
}

describe('hookguard chart-hook upgrade-crds against the stand-in API server', () => {
  it('creates the CRD when it is missing (201), as the chart lifecycle identity, owned by hookguard-chart', async () => {
    const { fake, upgrade, patches } = await cluster();
    try {
      expect(await upgrade()).toEqual([0, ...APPLIED, '']);
      expect(patches()).toEqual([{ ...APPLY, status: 201 }]);
      const crd = fake.get('CustomResourceDefinition', '', NAME)!;
      expect(crd.spec).toEqual(storedSpec());
      expect(crd.metadata.generation).toBe(1);
      expect(crd.metadata.managedFields).toEqual([applyEntry()]);
      expect(crd.status).toEqual({ acceptedNames: { plural: '', kind: '' }, storedVersions: ['v1alpha1'] });
    } finally {
      await fake.stop();
    }
  });

  it("updates an older CRD to exactly the chart's, taking the changed field from its manager (force), and a second run changes nothing", async () => {
    const { fake, upgrade, patches } = await cluster();
    try {
      const before = fake.put(olderCrd());
      // The same apply without force is refused: helm owns the one field that changes.
      const unforced = await fetch(`${fake.url}${PATH}?fieldManager=hookguard-chart`, {
        method: 'PATCH',
        headers: {
          'content-type': 'application/apply-patch+yaml',
          authorization: `Bearer ${serviceAccountToken(LIFECYCLE)}`,
        },
        body: JSON.stringify(chartCrd),
      });
      expect([unforced.status, ((await unforced.json()) as { message: string }).message]).toEqual([
        409,
        'Apply failed with 1 conflict: conflict with "helm" using apiextensions.k8s.io/v1 at 2026-01-05T10:00:00Z: .spec.versions',
      ]);

      expect(await upgrade()).toEqual([0, ...APPLIED, '']);
      expect(patches().slice(1)).toEqual([{ ...APPLY, status: 200 }]);
      const after = fake.get('CustomResourceDefinition', '', NAME)!;
      expect(after.spec).toEqual(storedSpec());
      expect([after.metadata.uid, after.metadata.generation]).toEqual([before.metadata.uid, 2]);
      expect(after.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion);
      // hookguard-chart owns what it applies; helm keeps the fields whose values did not change (shared).
      expect(after.metadata.managedFields).toEqual([
        applyEntry(),
        {
          ...(olderCrd().metadata.managedFields as Manifest[])[0],
          fieldsV1: { 'f:spec': { 'f:conversion': {}, 'f:group': {}, 'f:scope': {}, 'f:names': {} } },
        },
      ]);
      expect(after.status).toEqual(before.status);

      // A retried hook, or the next upgrade of the same chart: nothing is written.
      expect(await upgrade()).toEqual([0, ...APPLIED, '']);
      expect(patches().slice(2)).toEqual([{ ...APPLY, status: 200 }]);
      expect(fake.get('CustomResourceDefinition', '', NAME)).toEqual(after);
    } finally {
      await fake.stop();
    }
  });

  it('says what the API server refused, exit 1: an identity that may not patch the CRD, and one that may not create it', async () => {
    const server = await cluster(SERVER);
    try {
      server.fake.put(olderCrd());
      expect(await server.upgrade()).toEqual([
        1,
        '',
        `hookguard chart-hook: cannot apply CustomResourceDefinition ${NAME} (kubeconfig ${server.kubeconfig}): HTTP 403: customresourcedefinitions.apiextensions.k8s.io "${NAME}" is forbidden: User "${SERVER}" cannot patch resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope\n`,
      ]);
    } finally {
      await server.fake.stop();
    }
    // The chart's ClusterRole before it granted `create`: an apply that finds no CRD needs it.
    const patchOnly = await cluster();
    const rules = rulesByUser[LIFECYCLE]!.map((rule) =>
      rule.resources?.includes('customresourcedefinitions') ? { ...rule, verbs: ['patch'] } : rule,
    );
    patchOnly.fake.authorize = rbacAuthorizer({ [LIFECYCLE]: rules });
    try {
      expect(await patchOnly.upgrade()).toEqual([
        1,
        '',
        `hookguard chart-hook: cannot apply CustomResourceDefinition ${NAME} (kubeconfig ${patchOnly.kubeconfig}): HTTP 403: customresourcedefinitions.apiextensions.k8s.io "${NAME}" is forbidden: User "${LIFECYCLE}" cannot create resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope\n`,
      ]);
      expect(patchOnly.fake.get('CustomResourceDefinition', '', NAME)).toBeUndefined();
    } finally {
      await patchOnly.fake.stop();
    }
  });
});

describe('hookguard chart-hook upgrade-crds refused by the CRD validation', () => {
  it('a CRD that drops a version objects are stored in: the 422 in one line, exit 1, the CRD unchanged', async () => {
    const { fake, kubeconfig, upgrade } = await cluster();
    try {
      const before = fake.put(olderCrd());
      // A later chart that serves v1 only, without migrating what v1alpha1 stored.
      const [version] = chartCrd.spec.versions as Manifest[];
      const laterCrd = join(dir, 'later-crd.json');
      writeFileSync(
        laterCrd,
        JSON.stringify({ ...chartCrd, spec: { ...chartCrd.spec, versions: [{ ...version, name: 'v1' }] } }),
      );
      const v1alpha1 = 'v1alpha1';
      expect(await upgrade(laterCrd)).toEqual([
        1,
        '',
        `hookguard chart-hook: cannot apply CustomResourceDefinition ${NAME} (kubeconfig ${kubeconfig}): HTTP 422: CustomResourceDefinition.apiextensions.k8s.io "${NAME}" is invalid: status.storedVersions[0]: Invalid value: "${v1alpha1}": missing from spec.versions; ${v1alpha1} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ${v1alpha1} and removes ${v1alpha1} from status.storedVersions\n`,
      ]);
      expect(fake.get('CustomResourceDefinition', '', NAME)).toEqual(before);
    } finally {
      await fake.stop();
    }
  });
});

describe('hookguard chart-hook upgrade-crds with no API server answering', () => {
  it('says the request failed and why, exit 1', async () => {
    const { fake, kubeconfig, upgrade } = await cluster();
    await fake.stop();
    expect(await upgrade()).toEqual([
      1,
      '',
      `hookguard chart-hook: cannot apply CustomResourceDefinition ${NAME} (kubeconfig ${kubeconfig}): request to ${fake.url}${PATH}?fieldManager=hookguard-chart&force=true failed, reason: connect ECONNREFUSED 127.0.0.1:${fake.port}\n`,
    ]);
  });
});

describe('hookguard chart-hook delete-webhooks against the stand-in API server', () => {
  it('says what the API server refused, exit 1, and deletes nothing', async () => {
    const { fake, kubeconfig } = await cluster(SERVER);
    try {
      fake.putWebhookConfigurations('hookguard');
      const run = await runCommand(['chart-hook', 'delete-webhooks', 'hookguard'], undefined, {
        KUBECONFIG: kubeconfig,
        HOME: dir,
      });
      expect([run.status, run.stdout, run.stderr]).toEqual([
        1,
        '',
        `hookguard chart-hook: cannot delete ValidatingWebhookConfiguration and MutatingWebhookConfiguration hookguard (kubeconfig ${kubeconfig}): HTTP 403: validatingwebhookconfigurations.admissionregistration.k8s.io "hookguard" is forbidden: User "${SERVER}" cannot delete resource "validatingwebhookconfigurations" in API group "admissionregistration.k8s.io" at the cluster scope\n`,
      ]);
      expect(fake.get('ValidatingWebhookConfiguration', '', 'hookguard')).toBeDefined();
      expect(fake.get('MutatingWebhookConfiguration', '', 'hookguard')).toBeDefined();
    } finally {
      await fake.stop();
    }
  });
});

describe('the stand-in answers server-side apply as kube-apiserver does', () => {
  const send = async (fake: FakeApiServer, query: string, contentType: string, body: string) => {
    const response = await fetch(`${fake.url}${PATH}${query}`, {
      method: 'PATCH',
      headers: { 'content-type': contentType },
      body,
    });
    const status = (await response.json()) as { code: number; message: string };
    return [response.status, status.code, status.message];
  };

  it.each([
    [
      'an unknown patch type: 415',
      '?fieldManager=m',
      'application/yaml',
      'apiVersion: apiextensions.k8s.io/v1',
      415,
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml',
    ],
    [
      'apply without a fieldManager: 422',
      '?force=true',
      'application/apply-patch+yaml',
      'apiVersion: apiextensions.k8s.io/v1',
      422,
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    ],
    [
      'force with a JSON patch: 422',
      '?force=true',
      'application/json-patch+json',
      '[]',
      422,
      'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    ],
    [
      'an apply of another apiVersion: 400',
      '?fieldManager=m',
      'application/apply-patch+yaml',
      `apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: ${NAME}}`,
      400,
      'Incorrect version specified in apply patch. Specified patch version: apiextensions.k8s.io/v1beta1, expected: apiextensions.k8s.io/v1',
    ],
    [
      'an apply naming another object: 400',
      '?fieldManager=m',
      'application/apply-patch+yaml',
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: other.hookguard.io}',
      400,
      `the name of the object (other.hookguard.io) does not match the name on the URL (${NAME})`,
    ],
  ])('%s', async (_name, query, contentType, body, code, message) => {
    const fake = await new FakeApiServer().start();
    try {
      expect(await send(fake, query, contentType, body)).toEqual([code, code, message]);
      expect(fake.get('CustomResourceDefinition', '', NAME)).toBeUndefined();
    } finally {
      await fake.stop();
    }
  });

  it('takes YAML (apply-patch+yaml is YAML or JSON), and names every manager in conflict, sorted', async () => {
    const fake = await new FakeApiServer().start();
    try {
      const yaml = `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${NAME}\n  labels: {team: a}\nspec:\n  group: hookguard.io\n  scope: Cluster\n`;
      expect(await send(fake, '?fieldManager=first', 'application/apply-patch+yaml', yaml)).toEqual([
        201,
        undefined,
        undefined,
      ]);
      const second = yaml.replace('team: a', 'team: b').replace('Cluster', 'Namespaced');
      expect(await send(fake, '?fieldManager=second', 'application/apply-patch+yaml', second)).toEqual([
        409,
        409,
        'Apply failed with 2 conflicts: conflicts with "first":\n- .metadata.labels.team\n- .spec.scope',
      ]);
    } finally {
      await fake.stop();
    }
  });
});
