// docs/server.md's RBAC table is what the chart grants, and what src/ calls (issue 25.9): rendered by the real helm,
// each Role and ClusterRole bound to a service account turned into rows, compared with the table's rows; and each
// Kubernetes API call src/ makes through @kubernetes/client-node's typed clients turned into a permission that the
// table must grant, and each verb the table grants (but list and watch, made by raw requests) one src/ calls.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/k8s-tools.js';
import { renderChart, type Manifest } from '../support/manifests.js';

const DOC = 'docs/server.md';

interface Grant {
  account: string;
  grantedBy: string;
  group: string;
  resource: string;
  names: string;
  verbs: string;
}

const key = (grant: Grant) => JSON.stringify(grant);

function chartGrants(objects: Manifest[]): Grant[] {
  const roles = new Map(
    objects
      .filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')
      .map((o) => [`${o.kind}/${o.metadata.name}`, o]),
  );
  return objects
    .filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')
    .flatMap((binding) => {
      const role = roles.get(`${binding.roleRef.kind}/${binding.roleRef.name}`)!;
      return (binding.subjects as Manifest[]).flatMap((subject) =>
        (role.rules as Manifest[]).flatMap((rule) =>
          (rule.apiGroups as string[]).flatMap((group) =>
            (rule.resources as string[]).map((resource) => ({
              account: subject.name,
              grantedBy: role.kind === 'Role' ? `Role in ${role.metadata.namespace}` : 'ClusterRole',
              group,
              resource,
              names: (rule.resourceNames ?? []).join(', '),
              verbs: (rule.verbs as string[]).join(', '),
            })),
          ),
        ),
      );
    });
}

/** The table's rows, code spans unwrapped, `""` the core group. */
function documentedGrants(markdown: string): Grant[] {
  const table = /<!-- rbac table[^>]*-->\n([\s\S]*?)<!-- end of the rbac table -->/.exec(markdown)?.[1] ?? '';
  const plain = (cell: string) => cell.trim().replaceAll('`', '');
  return table
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [account, grantedBy, group, resource, names, verbs] = line.split('|').slice(1).map(plain);
      return {
        account: account!,
        grantedBy: grantedBy!,
        group: group === '""' ? '' : group!,
        resource: resource!,
        names: names!,
        verbs: verbs!,
      };
    });
}

/** The group of each kind src/ calls through a typed client; a kind missing here fails the test, naming it. */
const KIND_GROUPS: Record<string, string> = {
  Job: 'batch',
  Pod: '',
  Secret: '',
  Namespace: '',
  Event: 'events.k8s.io',
  Lease: 'coordination.k8s.io',
  Deployment: 'apps',
  StatefulSet: 'apps',
  CustomResourceDefinition: 'apiextensions.k8s.io',
  MutatingWebhookConfiguration: 'admissionregistration.k8s.io',
  ValidatingWebhookConfiguration: 'admissionregistration.k8s.io',
};
/** Calls src/ makes only where a chart value grants them: not in the default table. */
const GRANTED_BY_VALUE: Record<string, string> = {
  'get /pods/log': 'hookWatch.eventLogs',
  'get /namespaces': 'hookWatch.eventLogs',
};
/** The custom resources each CustomObjectsApi call reaches (src/controllers/selftest/client.ts, src/sweep/client.ts). */
const CUSTOM_RESOURCES: Record<string, Array<[string, string]>> = {
  ClusterCustomObject: [['hookguard.io', 'hookguards']],
  ClusterCustomObjectStatus: [['hookguard.io', 'hookguards/status']],
  // The hook watcher reads a failed container's log only with hookWatch.eventLogs, which grants it (not by default).
  NamespacedPodLog: [['', 'pods/log']],
  NamespacedCustomObject: [
    ['argoproj.io', 'applications'],
    ['argoproj.io', 'workflows'],
  ],
};
const VERBS: Record<string, string> = {
  create: 'create',
  read: 'get',
  get: 'get',
  replace: 'update',
  patch: 'patch',
  list: 'list',
  delete: 'delete',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Each typed client call of src/ as `verb group/resource`. */
function calls(): { permissions: Set<string>; unknown: string[] } {
  const permissions = new Set<string>();
  const unknown: string[] = [];
  for (const file of sourceFiles(join(repoRoot, 'src'))) {
    const text = readFileSync(file, 'utf8');
    const clients = [...text.matchAll(/const (\w+) = \w+\.makeApiClient\(/g)].map((match) => match[1]);
    if (clients.length === 0) continue;
    const call = new RegExp(
      `\\b(?:${clients.join('|')})\\.(create|read|get|replace|patch|list|delete)(Namespaced|Cluster)?([A-Z][A-Za-z]*?)(ForAllNamespaces)?(?:WithHttpInfo)?\\(`,
      'g',
    );
    for (const [, verb, scope = '', kind] of text.matchAll(call)) {
      const custom = CUSTOM_RESOURCES[`${scope}${kind}`];
      const targets =
        custom ??
        (kind! in KIND_GROUPS ? [[KIND_GROUPS[kind!]!, `${kind!.toLowerCase()}s`] as [string, string]] : undefined);
      if (!targets) unknown.push(`${verb}${scope}${kind} in ${file.slice(repoRoot.length + 1)}`);
      for (const [group, resource] of targets ?? []) {
        permissions.add(`${VERBS[verb!]} ${group}/${resource}`);
        // A server-side apply that finds no object creates it, and kube-apiserver asks `create` for that too
        // (kubernetes/apiserver v0.33.0 pkg/endpoints/handlers/patch.go createAuthorizerAttributes).
        if (verb === 'patch' && text.includes('PatchStrategy.ServerSideApply'))
          permissions.add(`create ${group}/${resource}`);
      }
    }
  }
  return { permissions, unknown };
}

describe(`${DOC}'s RBAC table`, () => {
  let chart: Grant[] = [];
  const documented = documentedGrants(readFileSync(join(repoRoot, DOC), 'utf8'));
  beforeAll(async () => {
    chart = chartGrants(await renderChart({ namespace: 'hookguard' }));
  });

  it('lists exactly what the chart grants with its defaults', () => {
    expect(documented.length).toBeGreaterThan(0);
    const [inChart, inDoc] = [new Set(chart.map(key)), new Set(documented.map(key))];
    expect({
      'granted by the chart, missing from the table': chart.filter((grant) => !inDoc.has(key(grant))),
      'in the table, not granted by the chart': documented.filter((grant) => !inChart.has(key(grant))),
    }).toEqual({ 'granted by the chart, missing from the table': [], 'in the table, not granted by the chart': [] });
  });

  it('grants every call src/ makes, and no verb src/ never calls (list and watch come from raw list+watch requests)', () => {
    const { permissions, unknown } = calls();
    expect(unknown, 'a call of a kind this test does not know: add it to KIND_GROUPS').toEqual([]);
    const granted = new Set(
      documented.flatMap((grant) => grant.verbs.split(', ').map((verb) => `${verb} ${grant.group}/${grant.resource}`)),
    );
    expect(
      [...permissions].filter((permission) => !granted.has(permission) && !(permission in GRANTED_BY_VALUE)),
      'called, not granted',
    ).toEqual([]);
    expect(
      [...granted].filter((permission) => !/^(list|watch) /.test(permission) && !permissions.has(permission)),
      'granted, never called',
    ).toEqual([]);
  });
});
