// A hookguard installation of a test's own beside the cluster's, for the certificate and self-test tests (issue 36):
// a namespace out of the cluster hookguard's reach (hookguard's namespace and the self-test's probe namespace at
// once), a ServiceAccount with exactly the chart's rights there (support/identity.ts), the chart's webhook
// configurations copied under a name of the test's own and selecting only that namespace, an ExternalName Service
// `hookguard` that reaches a port on this machine (as cluster.js does for the cluster's hookguard), and a HookGuard
// object of the test's own. The chart's rules that name hookguard's objects (the webhook configurations, the
// HookGuard object) are bound renamed, as the chart would render them for an installation of that name; nothing the
// cluster's hookguard keeps (its Secret, Lease, webhook configurations, HookGuard object) is read or written.
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1Role,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import {
  AUDIT_NAMESPACE_LABEL,
  adminApi,
  adminKubeConfig,
  adminObjectApi,
  deleteNamespace,
  ignoringNotFound,
  JSON_PATCH,
  kubeconfig,
  kubectl,
  newNamespace,
} from './cluster.js';
import { chartIdentity, type ChartIdentity } from './identity.js';

type Json = Record<string, any>;

/** `over` laid over `base`, objects key by key. */
function merged(base: Json, over: Json): Json {
  const result: Json = { ...base };
  for (const [key, value] of Object.entries(over))
    result[key] =
      value && typeof value === 'object' && !Array.isArray(value) && result[key] && typeof result[key] === 'object'
        ? merged(result[key] as Json, value as Json)
        : value;
  return result;
}

export const WEBHOOK_KINDS = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];

/** The chart's ClusterRoles whose rules name hookguard's cluster-scoped objects, bound renamed. */
const NAMED_CLUSTER_ROLES = ['hookguard-webhook-ca', 'hookguard-status'];
/** The chart's Role in the self-test's namespace (a dry-run create of Jobs), copied into the test's. */
const SELF_TEST_ROLE = 'hookguard-self-test';
const SELF_TEST_NAMESPACE = 'hookguard-selftest';

let chartRolesRead: Promise<{ namedClusterRoles: V1ClusterRole[]; selfTestRole: V1Role }> | undefined;

/** The chart's roles an installation copies, read once per test process: the chart's RBAC does not change in a run. */
function chartRoles(): Promise<{ namedClusterRoles: V1ClusterRole[]; selfTestRole: V1Role }> {
  const rbac = adminApi(RbacAuthorizationV1Api);
  return (chartRolesRead ??= Promise.all([
    Promise.all(NAMED_CLUSTER_ROLES.map((name) => rbac.readClusterRole({ name }))),
    rbac.readNamespacedRole({ name: SELF_TEST_ROLE, namespace: SELF_TEST_NAMESPACE }),
  ]).then(([namedClusterRoles, selfTestRole]) => ({ namedClusterRoles, selfTestRole })));
}

export interface OwnInstall {
  /** hookguard's namespace (Secret, Lease, Service) and the self-test's probe namespace. */
  ns: string;
  /** The name of both webhook configurations and of the HookGuard object. */
  name: string;
  identity: ChartIdentity;
  /** A KubeConfig of the chart identity, straight to the API server. */
  kubeConfig: KubeConfig;
  /** The settings that point a hookguard at this installation (src/config/keys.ts). */
  config: {
    certificates: { namespace: string; webhookName: string };
    selfTest: { namespace: string };
    leaderElection: { leaseNamespace: string };
  };
  /** The HookGuard resource of src/controllers/selftest/client.ts for this installation's object. */
  resource: { group: string; version: string; plural: string; name: string };
  /** The Service and both webhook configurations aimed at another port (a process that chose its own). */
  pointAt(port: number): Promise<void>;
  /**
   * A kubeconfig file of the chart identity, straight to the API server, and a config file for `hookguard serve` on
   * this installation with `settings` over it, both in `dir`: the hook watcher off (the cluster's hookguard posts the
   * Events on hooks), its Lease, Secret, webhook configurations and probe namespace this installation's.
   */
  serveFiles(dir: string, settings?: Record<string, unknown>): { kubeconfig: string; config: string };
  release(): Promise<void>;
}

/** The cluster hookguard's configuration of this kind as the chart installed it, renamed and aimed at this test. */
async function webhookConfiguration(kind: WebhookKind, name: string, ns: string, port: number, caBundle?: string) {
  const installed = await configurationOf(kind, 'hookguard');
  return {
    apiVersion: installed.apiVersion,
    kind,
    metadata: { name },
    webhooks: (installed.webhooks as Json[]).map((webhook) => ({
      ...webhook,
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      clientConfig: {
        service: { ...webhook.clientConfig.service, namespace: ns, name: 'hookguard', port },
        ...(caBundle === undefined ? {} : { caBundle: Buffer.from(caBundle).toString('base64') }),
      },
    })),
  };
}

/**
 * An installation of the test's own: the webhooks call 127.0.0.1:`port` through the Service hookguard.NS.svc (the TLS
 * server name the API server sends), with `caBundle` (PEM) if given, else none until a keeper writes it.
 */
export async function ownInstall(prefix: string, options: { port: number; caBundle?: string }): Promise<OwnInstall> {
  const ns = await newNamespace(prefix, { [AUDIT_NAMESPACE_LABEL]: 'certs' });
  const name = ns;
  // What it copies from the chart's installation, read while chartIdentity binds the rest.
  const [identity, { namedClusterRoles, selfTestRole }, configurations] = await Promise.all([
    chartIdentity(ns),
    chartRoles(),
    Promise.all(WEBHOOK_KINDS.map((kind) => webhookConfiguration(kind, name, ns, options.port, options.caBundle))),
  ]);
  const account = { kind: 'ServiceAccount', name: 'hookguard', namespace: ns };
  const rbac = 'rbac.authorization.k8s.io/v1';
  const objects: Json[] = [
    ...(namedClusterRoles as Json[]).flatMap((role) => [
      {
        apiVersion: rbac,
        kind: 'ClusterRole',
        metadata: { name: `${ns}-${role.metadata.name}` },
        rules: (role.rules as Json[]).map((rule) =>
          rule.resourceNames ? { ...rule, resourceNames: (rule.resourceNames as string[]).map(() => name) } : rule,
        ),
      },
      {
        apiVersion: rbac,
        kind: 'ClusterRoleBinding',
        metadata: { name: `${ns}-${role.metadata.name}-renamed` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${ns}-${role.metadata.name}` },
        subjects: [account],
      },
    ]),
    { apiVersion: rbac, kind: 'Role', metadata: { name: SELF_TEST_ROLE, namespace: ns }, rules: selfTestRole.rules },
    {
      apiVersion: rbac,
      kind: 'RoleBinding',
      metadata: { name: SELF_TEST_ROLE, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: SELF_TEST_ROLE },
      subjects: [account],
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'hookguard', namespace: ns },
      spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port: options.port }] },
    },
    ...configurations,
    { apiVersion: 'hookguard.io/v1alpha1', kind: 'HookGuard', metadata: { name }, spec: {} },
  ];
  const made = objects.filter((object) => !object.metadata.namespace);
  await Promise.all([
    ...objects.map((object) => adminObjectApi().create(object)),
    // chartIdentity bound the chart's own, naming the cluster hookguard's objects: this installation has the renamed
    // ones only, so nothing it does can reach those.
    ...NAMED_CLUSTER_ROLES.map((role) =>
      adminApi(RbacAuthorizationV1Api).deleteClusterRoleBinding({ name: `${ns}-${role}` }),
    ),
  ]);
  const cluster = adminKubeConfig().getCurrentCluster();
  if (!cluster) throw new Error(`${kubeconfig} names no cluster`);
  const own = new KubeConfig();
  own.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'hookguard', token: identity.token }],
    contexts: [{ name: 'hookguard', cluster: cluster.name, user: 'hookguard' }],
    currentContext: 'hookguard',
  });
  return {
    ns,
    name,
    identity,
    kubeConfig: own,
    config: {
      certificates: { namespace: ns, webhookName: name },
      selfTest: { namespace: ns },
      leaderElection: { leaseNamespace: ns },
    },
    resource: { group: 'hookguard.io', version: 'v1alpha1', plural: 'hookguards', name },
    pointAt: async (port) => {
      await adminApi(CoreV1Api).patchNamespacedService(
        { name: 'hookguard', namespace: ns, body: [{ op: 'replace', path: '/spec/ports/0/port', value: port }] },
        JSON_PATCH,
      );
      await patchEveryWebhook(WEBHOOK_KINDS, name, (index) => ({
        op: 'replace',
        path: `/webhooks/${index}/clientConfig/service/port`,
        value: port,
      }));
    },
    serveFiles: (dir, settings = {}) => {
      const files = { kubeconfig: join(dir, `kubeconfig-${ns}`), config: join(dir, `config-${ns}.yaml`) };
      writeFileSync(files.kubeconfig, own.exportConfig(), { mode: 0o600 });
      const base = {
        argocd: { version: '3.0.1' },
        server: { shutdownDelayMs: 0 },
        hookWatch: { enabled: false },
        certificates: { namespace: ns, webhookName: name },
        selfTest: { namespace: ns },
        leaderElection: { leaseNamespace: ns },
      };
      writeFileSync(files.config, stringify(merged(base, settings)));
      return files;
    },
    release: async () => {
      await Promise.all(made.map((object) => ignoringNotFound(adminObjectApi().delete(object))));
      await identity.release();
      await deleteNamespace(ns);
    },
  };
}

async function configurationOf(kind: WebhookKind, name: string): Promise<Json> {
  const admission = adminApi(AdmissionregistrationV1Api);
  return kind === 'MutatingWebhookConfiguration'
    ? await admission.readMutatingWebhookConfiguration({ name })
    : await admission.readValidatingWebhookConfiguration({ name });
}

/** A JSON patch of the configurations of `kinds` named `name`: `operation(index)` on each of their webhooks. */
async function patchEveryWebhook(kinds: readonly WebhookKind[], name: string, operation: (index: number) => Json) {
  const admission = adminApi(AdmissionregistrationV1Api);
  for (const kind of kinds) {
    const body = ((await configurationOf(kind, name)).webhooks as Json[]).map((_webhook, index) => operation(index));
    if (kind === 'MutatingWebhookConfiguration')
      await admission.patchMutatingWebhookConfiguration({ name, body }, JSON_PATCH);
    else await admission.patchValidatingWebhookConfiguration({ name, body }, JSON_PATCH);
  }
}

/** Every webhook's caBundle in both configurations named `name`, decoded (undefined where there is none). */
export async function caBundles(name: string): Promise<(string | undefined)[]> {
  const bundles: (string | undefined)[] = [];
  for (const kind of WEBHOOK_KINDS)
    for (const webhook of (await configurationOf(kind, name)).webhooks as Json[]) {
      const bundle = webhook.clientConfig.caBundle as Buffer | string | undefined;
      bundles.push(bundle === undefined ? undefined : Buffer.from(bundle as string, 'base64').toString());
    }
  return bundles;
}

/** Sets every webhook's caBundle of the configurations of `kinds` named `name`, as an administrator would. */
export async function setCaBundles(name: string, kinds: readonly WebhookKind[], bundle: string): Promise<void> {
  await patchEveryWebhook(kinds, name, (index) => ({
    op: 'add',
    path: `/webhooks/${index}/clientConfig/caBundle`,
    value: Buffer.from(bundle).toString('base64'),
  }));
}

/** An annotation of both configurations named `name`. */
export async function annotationsOf(name: string, key: string): Promise<(string | undefined)[]> {
  const values: (string | undefined)[] = [];
  for (const kind of WEBHOOK_KINDS) values.push((await configurationOf(kind, name)).metadata.annotations?.[key]);
  return values;
}

/** Sets an annotation on both configurations named `name`, as a restore or a GitOps tool would. */
export async function annotate(name: string, key: string, value: string): Promise<void> {
  for (const kind of WEBHOOK_KINDS)
    await kubectl(['annotate', '--overwrite', kind.toLowerCase(), name, `${key}=${value}`]);
}

/** The Secret `name` in `ns` decoded, {} when it does not exist. */
export async function secretData(ns: string, name = 'hookguard-tls'): Promise<Record<string, string>> {
  try {
    const secret = await adminApi(CoreV1Api).readNamespacedSecret({ name, namespace: ns });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
    );
  } catch (error) {
    if ((error as { code?: number }).code === 404) return {};
    throw error;
  }
}

/** The Secret as stored (type, labels, managedFields), as the administrator reads it. */
export async function storedSecret(ns: string, name = 'hookguard-tls'): Promise<Json> {
  return await adminApi(CoreV1Api).readNamespacedSecret({ name, namespace: ns });
}

/** Replaces keys of the Secret's data, as an administrator (or an attacker holding that right) would. */
export async function patchSecret(ns: string, data: Record<string, string>, name = 'hookguard-tls'): Promise<void> {
  const encoded = Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
  );
  // From a file: a patch may be larger than one command-line argument may be (128 KiB on Linux).
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-patch-'));
  try {
    const file = join(dir, 'patch.json');
    writeFileSync(file, JSON.stringify({ data: encoded }));
    await kubectl(['patch', 'secret', name, '-n', ns, '--type=merge', '--patch-file', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function deleteSecret(ns: string, name = 'hookguard-tls'): Promise<void> {
  await kubectl(['delete', 'secret', name, '-n', ns]);
}

/**
 * A Service's endpoints on this machine: a TCP relay on 127.0.0.1 that hands each connection to one of `targets`
 * (ports of hookguard processes), picked at random, as kube-proxy would; a replica being stopped leaves them first.
 * The webhooks' Service names its port, so which replicas serve changes at once, without the API server's cache of
 * webhook configurations in between.
 */
export class Endpoints {
  readonly targets = new Set<number>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  port = 0;

  private constructor() {
    this.server = createServer((socket) => {
      const targets = [...this.targets];
      const target = targets[Math.floor(Math.random() * targets.length)];
      if (target === undefined) {
        socket.destroy();
        return;
      }
      const upstream = connect(target, '127.0.0.1');
      for (const each of [socket, upstream]) {
        this.sockets.add(each);
        each.once('close', () => this.sockets.delete(each));
        each.on('error', () => {
          socket.destroy();
          upstream.destroy();
        });
      }
      socket.pipe(upstream).pipe(socket);
    });
  }

  static async start(): Promise<Endpoints> {
    const endpoints = new Endpoints();
    endpoints.server.listen(0, '127.0.0.1');
    await once(endpoints.server, 'listening');
    endpoints.port = (endpoints.server.address() as AddressInfo).port;
    return endpoints;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
