// hookguard's identity as the chart grants it, for a second hookguard a test runs in a namespace of its own: the
// cluster's hookguard (namespace `hookguard`) keeps its Lease, Secret and webhook configurations to itself.
import { CoreV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { HOOKGUARD_NAMESPACE } from '../cluster.js';
import { adminApi, ignoringNotFound } from './cluster.js';
import { serviceAccountToken } from './fault-proxy.js';

/** What the chart's release labels every object it renders with (charts/hookguard/templates/_helpers.tpl). */
const CHART_OBJECTS = 'app.kubernetes.io/instance=hookguard';
const RBAC_GROUP = 'rbac.authorization.k8s.io';

interface Role {
  metadata: { name: string; namespace: string };
  rules?: V1PolicyRule[];
}
interface RoleBinding {
  metadata: { name: string; namespace: string };
  roleRef: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
}

/** The chart's grants to hookguard's ServiceAccount (not the sweep's), as the cluster installed them. */
interface ChartGrants {
  clusterRoleBindings: RoleBinding[];
  /** The Roles its RoleBindings in hookguard's own namespace bind. */
  homeRoles: Role[];
  /** Its RoleBindings in other namespaces. */
  roleBindingsElsewhere: RoleBinding[];
}

let chartGrantsRead: Promise<ChartGrants> | undefined;

/**
 * Read once per test process: the chart's RBAC does not change during a run, and a file may make many identities at
 * once (the self-test's fifteen worlds).
 */
function chartGrants(): Promise<ChartGrants> {
  return (chartGrantsRead ??= readChartGrants());
}

async function readChartGrants(): Promise<ChartGrants> {
  const rbac = adminApi(RbacAuthorizationV1Api);
  const ofHookguard = (bindings: { items: unknown[] }) =>
    (bindings.items as RoleBinding[]).filter((binding) =>
      binding.subjects?.some(
        (subject) =>
          subject.kind === 'ServiceAccount' &&
          subject.name === 'hookguard' &&
          subject.namespace === HOOKGUARD_NAMESPACE,
      ),
    );
  const [clusterRoleBindings, roleBindings] = await Promise.all([
    rbac.listClusterRoleBinding({ labelSelector: CHART_OBJECTS }).then(ofHookguard),
    rbac.listRoleBindingForAllNamespaces({ labelSelector: CHART_OBJECTS }).then(ofHookguard),
  ]);
  const home = (binding: RoleBinding) => binding.metadata.namespace === HOOKGUARD_NAMESPACE;
  const homeRoles = await Promise.all(
    roleBindings
      .filter(home)
      .map((binding) => rbac.readNamespacedRole({ name: binding.roleRef.name, namespace: HOOKGUARD_NAMESPACE })),
  );
  return {
    clusterRoleBindings,
    homeRoles: homeRoles as Role[],
    roleBindingsElsewhere: roleBindings.filter((binding) => !home(binding)),
  };
}

export interface ChartIdentity {
  /** system:serviceaccount:NS:hookguard, as the API server and hookguard's log name it. */
  subject: string;
  /** A TokenRequest token of that ServiceAccount, valid one hour. */
  token: string;
  /** Removes what it made outside NAMESPACE (whose deletion takes the rest). */
  release(): Promise<void>;
}

/**
 * A ServiceAccount `hookguard` in NAMESPACE with exactly the chart's rights, read from what the cluster installed, so
 * a grant the chart forgot fails here as it would in production: bound to each of the chart's ClusterRoles; the
 * chart's Roles in hookguard's own namespace (its Leases, its Secret, by resourceNames) copied into NAMESPACE and bound
 * there, as they would be with the chart installed in NAMESPACE; its Roles elsewhere (the self-test's namespace) bound
 * where they are.
 */
export async function chartIdentity(namespace: string): Promise<ChartIdentity> {
  const { clusterRoleBindings, homeRoles, roleBindingsElsewhere } = await chartGrants();
  const rbac = adminApi(RbacAuthorizationV1Api);
  const subjects = [{ kind: 'ServiceAccount', name: 'hookguard', namespace }];
  /** Deletes what it made outside NAMESPACE. */
  const made: Array<() => Promise<unknown>> = [];
  await Promise.all([
    adminApi(CoreV1Api).createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'hookguard' } } }),
    ...clusterRoleBindings.map(async (binding) => {
      const name = `${namespace}-${binding.metadata.name}`;
      const roleRef = { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: binding.roleRef.name };
      await rbac.createClusterRoleBinding({ body: { metadata: { name }, roleRef, subjects } });
      made.push(() => rbac.deleteClusterRoleBinding({ name }));
    }),
    ...homeRoles.map(async (role) => {
      const name = role.metadata.name;
      await rbac.createNamespacedRole({ namespace, body: { metadata: { name, namespace }, rules: role.rules } });
      const roleRef = { apiGroup: RBAC_GROUP, kind: 'Role', name };
      await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name, namespace }, roleRef, subjects } });
    }),
    ...roleBindingsElsewhere.map(async (binding) => {
      const where = binding.metadata.namespace;
      const name = `${namespace}-${binding.metadata.name}`;
      const roleRef = { apiGroup: RBAC_GROUP, kind: 'Role', name: binding.roleRef.name };
      await rbac.createNamespacedRoleBinding({
        namespace: where,
        body: { metadata: { name, namespace: where }, roleRef, subjects },
      });
      made.push(() => rbac.deleteNamespacedRoleBinding({ name, namespace: where }));
    }),
  ]);
  return {
    subject: `system:serviceaccount:${namespace}:hookguard`,
    token: await serviceAccountToken(namespace, 'hookguard'),
    release: async () => {
      await Promise.all(made.map((remove) => ignoringNotFound(remove())));
    },
  };
}
