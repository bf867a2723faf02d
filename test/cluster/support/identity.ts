// hookguard's identity as the chart grants it, for a second hookguard a test runs in a namespace of its own: the
// cluster's hookguard (namespace `hookguard`) keeps its Lease, Secret and webhook configurations to itself.
import { HOOKGUARD_NAMESPACE } from '../cluster.js';
import { kubectl, kubectlJson } from './cluster.js';
import { serviceAccountToken } from './fault-proxy.js';

/** What the chart's release labels every object it renders with (charts/hookguard/templates/_helpers.tpl). */
const CHART_OBJECTS = 'app.kubernetes.io/instance=hookguard';

interface Listed<Item> {
  items: Item[];
}
interface Role {
  metadata: { name: string; namespace: string };
  rules?: unknown[];
}
interface RoleBinding {
  metadata: { name: string; namespace: string };
  roleRef: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
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
  await kubectl(['create', 'serviceaccount', 'hookguard', '-n', namespace]);
  const account = `${namespace}:hookguard`;
  const made: string[][] = [];
  const chartBindings = async (kind: 'clusterrolebindings' | 'rolebindings') =>
    (await kubectlJson<Listed<RoleBinding>>(['get', kind, '-A', '-l', CHART_OBJECTS])).items.filter((binding) =>
      binding.subjects?.some(
        (subject) =>
          subject.kind === 'ServiceAccount' &&
          subject.name === 'hookguard' &&
          subject.namespace === HOOKGUARD_NAMESPACE,
      ),
    );
  for (const binding of await chartBindings('clusterrolebindings')) {
    const name = `${namespace}-${binding.metadata.name}`;
    await kubectl([
      'create',
      'clusterrolebinding',
      name,
      `--clusterrole=${binding.roleRef.name}`,
      `--serviceaccount=${account}`,
    ]);
    made.push(['clusterrolebinding', name]);
  }
  for (const binding of await chartBindings('rolebindings')) {
    const where = binding.metadata.namespace;
    if (where === HOOKGUARD_NAMESPACE) {
      const role = await kubectlJson<Role>(['get', 'role', binding.roleRef.name, '-n', where]);
      const copy = {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: role.metadata.name, namespace },
        rules: role.rules,
      };
      await kubectl(['apply', '-f', '-'], JSON.stringify(copy));
      await kubectl([
        'create',
        'rolebinding',
        role.metadata.name,
        '-n',
        namespace,
        `--role=${role.metadata.name}`,
        `--serviceaccount=${account}`,
      ]);
    } else {
      const name = `${namespace}-${binding.metadata.name}`;
      await kubectl([
        'create',
        'rolebinding',
        name,
        '-n',
        where,
        `--role=${binding.roleRef.name}`,
        `--serviceaccount=${account}`,
      ]);
      made.push(['rolebinding', name, '-n', where]);
    }
  }
  return {
    subject: `system:serviceaccount:${account}`,
    token: await serviceAccountToken(namespace, 'hookguard'),
    release: async () => {
      for (const object of made) await kubectl(['delete', ...object, '--ignore-not-found']);
    },
  };
}
