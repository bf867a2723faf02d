// docs/server.md's RBAC table is what the chart grants, and what src/ calls (issue 25.9): rendered by the real helm,
// each Role and ClusterRole bound to a service account turned into rows, compared with the table's rows; and each
// Kubernetes API call src/ makes through @kubernetes/client-node's typed clients turned into a permission that the
// table must grant to the service account that runs that code, and each verb the table grants (but list and watch,
// made by raw requests) one src/ calls as that account. A rule with resourceNames grants no create, list or watch:
// kube-apiserver authorizes those with no name (RBAC's ResourceNameMatches then fails).
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

/**
 * The service account that runs each file of src/ making typed calls: the server's (`serve`), the sweep CronJob's, the
 * chart hooks'. A file missing here fails the test, naming it.
 */
const ACCOUNT_OF: ReadonlyArray<[prefix: string, account: string]> = [
  ['src/controllers/', 'hookguard'],
  ['src/discovery/', 'hookguard'],
  ['src/tls/', 'hookguard'],
  ['src/kube/leader-election.ts', 'hookguard'],
  ['src/sweep/', 'hookguard-sweep'],
  ['src/kube/chart-lifecycle.ts', 'hookguard-lifecycle'],
];

/**
 * Verbs kube-apiserver authorizes with no object name (a POST's create, list, watch): a rule with resourceNames never
 * grants them. The create a server-side apply asks for when the object is missing carries its name
 * (kubernetes/apiserver v0.33.0 pkg/endpoints/handlers/patch.go createAuthorizerAttributes, `Name: name`), so a named
 * rule grants that one: it is written `create … (by apply)`.
 */
const UNNAMED_VERBS = new Set(['create', 'list', 'watch', 'deletecollection']);
const BY_APPLY = ' (by apply)';

/** `account verb group/resource` for every request a grant allows. */
function permissionsOf(grants: readonly Grant[]): Set<string> {
  return new Set(
    grants.flatMap((grant) =>
      grant.verbs.split(', ').flatMap((verb) => {
        const permission = `${grant.account} ${verb} ${grant.group}/${grant.resource}`;
        const unnamed = grant.names === '' || !UNNAMED_VERBS.has(verb) ? [permission] : [];
        return verb === 'create' ? [...unnamed, `${permission}${BY_APPLY}`] : unnamed;
      }),
    ),
  );
}

/** What is called and not granted, and granted (but list and watch) and never called, both per account. */
function mismatches(
  called: ReadonlySet<string>,
  grants: readonly Grant[],
): { calledNotGranted: string[]; grantedNeverCalled: string[] } {
  const granted = permissionsOf(grants);
  const plain = (permission: string) => permission.replace(BY_APPLY, '');
  const calledAtAll = new Set([...called].map(plain));
  const byValue = (permission: string) => permission.slice(permission.indexOf(' ') + 1) in GRANTED_BY_VALUE;
  return {
    calledNotGranted: [...called].filter((permission) => !granted.has(permission) && !byValue(permission)),
    grantedNeverCalled: [...new Set([...granted].map(plain))].filter(
      (permission) => !/^\S+ (list|watch) /.test(permission) && !calledAtAll.has(permission),
    ),
  };
}

/** The group of each kind src/ calls through a typed client; a kind missing here fails the test, naming it. */
const KIND_GROUPS: Record<string, string> = {
  Job: 'batch',
  Pod: '',
  Secret: '',
  ConfigMap: '',
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
  // The policies' parameters (src/controllers/policy-params.ts), granted by name in the release namespace.
  'patch /configmaps': 'admission.mode policies or both',
  'create /configmaps (by apply)': 'admission.mode policies or both',
  'get helm.toolkit.fluxcd.io/helmreleases': 'hookWatch.helmReleaseEvents',
};
type Resources = Array<[group: string, resource: string]>;
/**
 * The custom resources each CustomObjectsApi call reaches, for every file or (a call whose plural is a parameter)
 * per file: a file not listed fails the test, naming it.
 */
const CUSTOM_RESOURCES: Record<string, Resources | Record<string, Resources>> = {
  ClusterCustomObject: [['hookguard.io', 'hookguards']],
  ClusterCustomObjectStatus: [['hookguard.io', 'hookguards/status']],
  // The hook watcher reads a failed container's log only with hookWatch.eventLogs, which grants it (not by default).
  NamespacedPodLog: [['', 'pods/log']],
  NamespacedCustomObject: {
    'src/controllers/hooks/client.ts': [
      ['argoproj.io', 'applications'],
      ['helm.toolkit.fluxcd.io', 'helmreleases'],
    ],
    'src/sweep/client.ts': [
      ['argoproj.io', 'applications'],
      ['argoproj.io', 'workflows'],
    ],
  },
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

/** Each typed client call of src/ as `account verb group/resource`. */
function calls(): { permissions: Set<string>; unknown: string[] } {
  const permissions = new Set<string>();
  const unknown: string[] = [];
  for (const file of sourceFiles(join(repoRoot, 'src'))) {
    const text = readFileSync(file, 'utf8');
    const clients = [...text.matchAll(/const (\w+) = \w+\.makeApiClient\(/g)].map((match) => match[1]);
    if (clients.length === 0) continue;
    const path = file.slice(repoRoot.length + 1);
    const account = ACCOUNT_OF.find(([prefix]) => path.startsWith(prefix))?.[1];
    if (account === undefined) {
      unknown.push(`${path}: which service account runs it? add it to ACCOUNT_OF`);
      continue;
    }
    const call = new RegExp(
      `\\b(?:${clients.join('|')})\\.(create|read|get|replace|patch|list|delete)(Namespaced|Cluster)?([A-Z][A-Za-z]*?)(ForAllNamespaces)?(?:WithHttpInfo)?\\(`,
      'g',
    );
    for (const [, verb, scope = '', kind] of text.matchAll(call)) {
      const entry = CUSTOM_RESOURCES[`${scope}${kind}`];
      const custom = entry === undefined || Array.isArray(entry) ? entry : entry[path];
      const targets =
        custom ??
        (kind! in KIND_GROUPS ? [[KIND_GROUPS[kind!]!, `${kind!.toLowerCase()}s`] as [string, string]] : undefined);
      if (!targets) unknown.push(`${verb}${scope}${kind} in ${file.slice(repoRoot.length + 1)}`);
      for (const [group, resource] of targets ?? []) {
        permissions.add(`${account} ${VERBS[verb!]} ${group}/${resource}`);
        // A server-side apply that finds no object creates it, and kube-apiserver asks `create` for that too
        // (kubernetes/apiserver v0.33.0 pkg/endpoints/handlers/patch.go createAuthorizerAttributes).
        if (verb === 'patch' && text.includes('PatchStrategy.ServerSideApply'))
          permissions.add(`${account} create ${group}/${resource}${BY_APPLY}`);
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

  it('grants every call src/ makes to the account that makes it, and no verb it never calls (list and watch come from raw list+watch requests)', () => {
    const { permissions, unknown } = calls();
    expect(unknown, 'a call of a kind this test does not know: add it to KIND_GROUPS').toEqual([]);
    expect(mismatches(permissions, documented)).toEqual({ calledNotGranted: [], grantedNeverCalled: [] });
  });
});

describe('the comparison itself fails on what it is there to catch', () => {
  const grant = (account: string, verbs: string, names = ''): Grant => ({
    account,
    grantedBy: 'ClusterRole',
    group: 'batch',
    resource: 'jobs',
    names,
    verbs,
  });

  it('a call one account makes, granted only to another: not granted (permissions are not pooled)', () => {
    expect(mismatches(new Set(['hookguard-sweep patch batch/jobs']), [grant('hookguard', 'patch')])).toEqual({
      calledNotGranted: ['hookguard-sweep patch batch/jobs'],
      grantedNeverCalled: ['hookguard patch batch/jobs'],
    });
  });

  it('a create or list granted only by a rule with resourceNames: not granted; get, and the create of an apply, are', () => {
    const named = grant('hookguard', 'get, create', 'hookguard');
    expect(mismatches(new Set(['hookguard create batch/jobs', 'hookguard get batch/jobs']), [named])).toEqual({
      calledNotGranted: ['hookguard create batch/jobs'],
      grantedNeverCalled: [],
    });
    expect(
      mismatches(new Set([`hookguard create batch/jobs${BY_APPLY}`, 'hookguard get batch/jobs']), [named]),
    ).toEqual({
      calledNotGranted: [],
      grantedNeverCalled: [],
    });
    expect(mismatches(new Set(['hookguard list batch/jobs']), [grant('hookguard', 'list', 'a')])).toEqual({
      calledNotGranted: ['hookguard list batch/jobs'],
      grantedNeverCalled: [],
    });
  });
});
