// Finds the cluster's Argo CD application controllers and keeps their versions current, per instance
// (namespace). Admission never waits for it: requests read the last snapshot, synchronously.
import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ArgoInstance, ArgoInstances } from '../core/argocd-instances.js';
import { normalizeArgoVersion } from '../core/argocd-version.js';
import type { KubeObject } from '../core/types.js';
import { plainObject } from '../kube/plain.js';
import { Reflector, reflectorSettingsOf, type ListResult, type ReflectorTarget } from '../kube/reflector.js';
import { controllerUsername, controllerVersion, isRunning, type GitopsVersions } from './controller-version.js';

export interface DiscoverySettings {
  labelSelector: string;
  /** Namespaces to watch, unless clusterWide. */
  namespaces: readonly string[];
  /** Watch every namespace (discovery.clusterWide): any namespace's matching workload then names an Argo CD. */
  clusterWide: boolean;
  backoffInitialMs: number;
  backoffMaxMs: number;
  watchTimeoutSeconds: number;
  /** How long past watchTimeoutSeconds a silent watch is given before it is restarted (default 30 s). */
  stallGraceMs?: number;
  /** `argocd.instanceVersions`: the version of the Argo CD in a namespace, over what its controller says. */
  instanceVersions?: InstanceVersions;
  /** `argocd.openshiftGitopsVersions`: the Argo CD version each OpenShift GitOps release ships. */
  gitopsVersions?: GitopsVersions;
}

/** Namespace → the version the config gives the Argo CD there. */
export type InstanceVersions = Readonly<Record<string, string>>;

const INSTANCE_VERSIONS_KEY = 'argocd.instanceVersions';

export interface InstanceStatus {
  namespace: string;
  version: string | null;
  source: string;
}

export type DiscoveryStatus =
  | { enabled: false; reason: string; instances?: InstanceStatus[] }
  | { enabled: true; synced: boolean; watching: boolean; lastError?: string; instances: InstanceStatus[] };

/** Where the HTTP app reads Argo CD versions from: both calls are cheap and never wait on the network. */
export interface ArgoVersionSource {
  instances(): ArgoInstances;
  status(): DiscoveryStatus;
}

/**
 * The source used when discovery does not run: the instances the config gives a version (`argocd.instanceVersions`),
 * and the reason for /readyz.
 */
export function discoveryOff(reason: string, instanceVersions: InstanceVersions = {}): ArgoVersionSource {
  const instances = instancesFrom([], instanceVersions);
  const status: DiscoveryStatus = {
    enabled: false,
    reason,
    ...(instances.size > 0 ? { instances: instanceStatuses(instances) } : {}),
  };
  return { instances: () => instances, status: () => status };
}

function instanceStatuses(instances: ArgoInstances): InstanceStatus[] {
  return [...instances.values()].map(({ namespace, version, source }) => ({
    namespace,
    version: version ?? null,
    source,
  }));
}

/**
 * What the controllers of one namespace say. Controllers that disagree (mid-migration, say) make the version
 * unknown: no denial on a guess. Only running ones count (a StatefulSet at zero replicas beside the Deployment).
 */
function discoveredVersion(
  workloads: readonly KubeObject[],
  gitopsVersions: GitopsVersions,
): { version: string | undefined; source: string } {
  const running = workloads.filter(isRunning);
  const found = (running.length > 0 ? running : workloads).map((workload) => ({
    workload,
    ...controllerVersion(workload, gitopsVersions),
  }));
  const versions = new Set(found.map((entry) => entry.version));
  if (versions.size === 1) {
    const source = found
      .map((entry) => `${entry.workload.kind} ${entry.workload.metadata?.name}: ${entry.source}`)
      .join('; ');
    return { version: found[0]!.version, source };
  }
  const listed = found
    .map((entry) => `${entry.workload.kind} ${entry.workload.metadata?.name}: ${entry.version ?? 'unknown'}`)
    .join(', ');
  return { version: undefined, source: `unknown: controllers disagree (${listed})` };
}

/**
 * An instance: its version from the config when `argocd.instanceVersions` names its namespace, else from its
 * controllers; every controller's service account is its identity. A configured namespace is an instance even
 * before (or without) discovery seeing a controller there.
 */
function instanceOf(
  namespace: string,
  workloads: readonly KubeObject[],
  configured: string | undefined,
  gitopsVersions: GitopsVersions,
): ArgoInstance {
  const controllerUsernames = [
    ...new Set(workloads.map(controllerUsername).filter((username): username is string => username !== undefined)),
  ];
  const discovered = workloads.length > 0 ? discoveredVersion(workloads, gitopsVersions) : undefined;
  if (configured === undefined) return { namespace, ...discovered!, controllerUsernames };
  const version = normalizeArgoVersion(configured);
  const source = `${INSTANCE_VERSIONS_KEY}: ${configured}${discovered ? ` (discovered: ${discovered.source})` : '; no controller discovered'}`;
  return { namespace, version, source, controllerUsernames };
}

export function instancesFrom(
  workloads: readonly KubeObject[],
  instanceVersions: InstanceVersions = {},
  gitopsVersions: GitopsVersions = {},
): ArgoInstances {
  const byNamespace = new Map<string, KubeObject[]>(Object.keys(instanceVersions).map((namespace) => [namespace, []]));
  for (const workload of workloads) {
    const namespace = workload.metadata?.namespace ?? '';
    byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), workload]);
  }
  return new Map(
    [...byNamespace]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([namespace, list]) => [
        namespace,
        instanceOf(namespace, list, instanceVersions[namespace], gitopsVersions),
      ]),
  );
}

/**
 * A list's items as the watch gives them: with their kind and apiVersion, which the API server leaves out of each item
 * of a List (only watch events carry them) and which an instance's source names ("StatefulSet argocd-…").
 */
export function listedWorkloads(
  list: { items: unknown[]; metadata?: { resourceVersion?: string } },
  kind: 'Deployment' | 'StatefulSet',
): ListResult {
  return {
    items: list.items.map((item) => ({ apiVersion: 'apps/v1', kind, ...plainObject(item) })),
    resourceVersion: list.metadata?.resourceVersion ?? '',
  };
}

function targetsFor(kubeConfig: KubeConfig, settings: DiscoverySettings): ReflectorTarget[] {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const labelSelector = settings.labelSelector;
  const scopes: Array<string | undefined> = settings.clusterWide ? [undefined] : [...settings.namespaces];
  return scopes.flatMap((namespace) => {
    const where = namespace === undefined ? 'all namespaces' : `namespace ${namespace}`;
    const prefix =
      namespace === undefined ? '/apis/apps/v1' : `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}`;
    return [
      {
        description: `deployments in ${where}`,
        path: `${prefix}/deployments`,
        labelSelector,
        list: async () =>
          listedWorkloads(
            namespace === undefined
              ? await apps.listDeploymentForAllNamespaces({ labelSelector })
              : await apps.listNamespacedDeployment({ namespace, labelSelector }),
            'Deployment',
          ),
      },
      {
        description: `statefulsets in ${where}`,
        path: `${prefix}/statefulsets`,
        labelSelector,
        list: async () =>
          listedWorkloads(
            namespace === undefined
              ? await apps.listStatefulSetForAllNamespaces({ labelSelector })
              : await apps.listNamespacedStatefulSet({ namespace, labelSelector }),
            'StatefulSet',
          ),
      },
    ];
  });
}

export class ArgoDiscovery implements ArgoVersionSource {
  private readonly reflectors: Reflector[];
  private readonly workloads = new Map<Reflector, readonly KubeObject[]>();
  private readonly instanceVersions: InstanceVersions;
  private readonly gitopsVersions: GitopsVersions;
  private snapshot: ArgoInstances;

  constructor(
    kubeConfig: KubeConfig,
    settings: DiscoverySettings,
    private readonly logger: Logger,
  ) {
    this.instanceVersions = settings.instanceVersions ?? {};
    this.gitopsVersions = settings.gitopsVersions ?? {};
    // The configured versions hold from the start; what discovery finds joins them once every list is in.
    this.snapshot = instancesFrom([], this.instanceVersions);
    const reflectorSettings = reflectorSettingsOf(settings);
    this.reflectors = targetsFor(kubeConfig, settings).map((target) => {
      const reflector: Reflector = new Reflector(kubeConfig, target, reflectorSettings, logger, (objects) =>
        this.update(reflector, objects),
      );
      return reflector;
    });
  }

  start(): void {
    for (const reflector of this.reflectors) reflector.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((reflector) => reflector.stop()));
  }

  instances(): ArgoInstances {
    return this.snapshot;
  }

  /** Synced once every list has completed: before that, hookguard judges with an unknown version. */
  status(): DiscoveryStatus {
    const lastError = this.reflectors.find((reflector) => reflector.lastError !== undefined)?.lastError;
    return {
      enabled: true,
      synced: this.reflectors.every((reflector) => reflector.synced),
      watching: this.reflectors.every((reflector) => reflector.connected),
      ...(lastError !== undefined ? { lastError } : {}),
      instances: instanceStatuses(this.snapshot),
    };
  }

  private update(reflector: Reflector, objects: readonly KubeObject[]): void {
    this.workloads.set(reflector, objects);
    // Until every list is in, an instance could be judged by half its controllers: publish nothing yet.
    if (!this.reflectors.every((each) => each.synced)) return;
    const next = instancesFrom([...this.workloads.values()].flat(), this.instanceVersions, this.gitopsVersions);
    this.logChanges(this.snapshot, next);
    this.snapshot = next;
  }

  private logChanges(before: ArgoInstances, after: ArgoInstances): void {
    for (const [namespace, instance] of after) {
      const previous = before.get(namespace);
      if (previous && previous.version === instance.version && previous.source === instance.source) continue;
      const fields = {
        namespace,
        version: instance.version ?? 'unknown',
        previousVersion: previous ? (previous.version ?? 'unknown') : undefined,
        source: instance.source,
      };
      if (instance.version === undefined)
        this.logger.warn(
          { ...fields, fix: `give its version in the config: ${INSTANCE_VERSIONS_KEY}: {${namespace}: X.Y.Z}` },
          'Argo CD instance version unknown: hooks it applies get mutations only, never denials',
        );
      else
        this.logger.info(
          fields,
          !previous
            ? 'Argo CD instance discovered'
            : previous.version !== instance.version
              ? 'Argo CD instance version changed'
              : 'Argo CD instance changed',
        );
    }
    for (const namespace of before.keys()) {
      if (!after.has(namespace)) this.logger.info({ namespace }, 'Argo CD instance gone');
    }
  }
}
