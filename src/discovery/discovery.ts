// Finds the cluster's Argo CD application controllers and keeps their versions current, per instance
// (namespace). Admission never waits for it: requests read the last snapshot, synchronously.
import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { NO_INSTANCES, type ArgoInstance, type ArgoInstances } from '../core/argocd-instances.js';
import type { KubeObject } from '../core/types.js';
import { plainObject } from '../kube/plain.js';
import { Reflector, type ListResult, type ReflectorTarget } from '../kube/reflector.js';
import { controllerUsername, controllerVersion } from './controller-version.js';

export interface DiscoverySettings {
  labelSelector: string;
  /** Namespaces to watch; empty means the whole cluster. */
  namespaces: readonly string[];
  backoffInitialMs: number;
  backoffMaxMs: number;
  watchTimeoutSeconds: number;
  /** How long past watchTimeoutSeconds a silent watch is given before it is restarted (default 30 s). */
  stallGraceMs?: number;
}

export interface InstanceStatus {
  namespace: string;
  version: string | null;
  source: string;
}

export type DiscoveryStatus =
  | { enabled: false; reason: string }
  | { enabled: true; synced: boolean; watching: boolean; lastError?: string; instances: InstanceStatus[] };

/** Where the HTTP app reads Argo CD versions from: both calls are cheap and never wait on the network. */
export interface ArgoVersionSource {
  instances(): ArgoInstances;
  status(): DiscoveryStatus;
}

/** The source used when discovery does not run: no instances, and the reason for /readyz. */
export function discoveryOff(reason: string): ArgoVersionSource {
  const status: DiscoveryStatus = { enabled: false, reason };
  return { instances: () => NO_INSTANCES, status: () => status };
}

/** Controllers of one namespace that disagree (mid-migration, say) make its version unknown: no denial on a guess. */
function instanceOf(namespace: string, workloads: readonly KubeObject[]): ArgoInstance {
  const found = workloads.map((workload) => ({ workload, ...controllerVersion(workload) }));
  const versions = new Set(found.map((entry) => entry.version));
  const controllerUsernames = [
    ...new Set(workloads.map(controllerUsername).filter((username): username is string => username !== undefined)),
  ];
  if (versions.size === 1) {
    const source = found
      .map((entry) => `${entry.workload.kind} ${entry.workload.metadata?.name}: ${entry.source}`)
      .join('; ');
    return { namespace, version: found[0]!.version, source, controllerUsernames };
  }
  const listed = found
    .map((entry) => `${entry.workload.kind} ${entry.workload.metadata?.name}: ${entry.version ?? 'unknown'}`)
    .join(', ');
  return { namespace, version: undefined, source: `unknown: controllers disagree (${listed})`, controllerUsernames };
}

export function instancesFrom(workloads: readonly KubeObject[]): ArgoInstances {
  const byNamespace = new Map<string, KubeObject[]>();
  for (const workload of workloads) {
    const namespace = workload.metadata?.namespace ?? '';
    byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), workload]);
  }
  return new Map(
    [...byNamespace]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([namespace, list]) => [namespace, instanceOf(namespace, list)]),
  );
}

function plainList(list: { items: unknown[]; metadata?: { resourceVersion?: string } }): ListResult {
  return { items: list.items.map(plainObject), resourceVersion: list.metadata?.resourceVersion ?? '' };
}

function targetsFor(kubeConfig: KubeConfig, settings: DiscoverySettings): ReflectorTarget[] {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const labelSelector = settings.labelSelector;
  const scopes: Array<string | undefined> = settings.namespaces.length > 0 ? [...settings.namespaces] : [undefined];
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
          plainList(
            namespace === undefined
              ? await apps.listDeploymentForAllNamespaces({ labelSelector })
              : await apps.listNamespacedDeployment({ namespace, labelSelector }),
          ),
      },
      {
        description: `statefulsets in ${where}`,
        path: `${prefix}/statefulsets`,
        labelSelector,
        list: async () =>
          plainList(
            namespace === undefined
              ? await apps.listStatefulSetForAllNamespaces({ labelSelector })
              : await apps.listNamespacedStatefulSet({ namespace, labelSelector }),
          ),
      },
    ];
  });
}

export class ArgoDiscovery implements ArgoVersionSource {
  private readonly reflectors: Reflector[];
  private readonly workloads = new Map<Reflector, readonly KubeObject[]>();
  private snapshot: ArgoInstances = NO_INSTANCES;

  constructor(
    kubeConfig: KubeConfig,
    settings: DiscoverySettings,
    private readonly logger: Logger,
  ) {
    const reflectorSettings = {
      backoff: { initialMs: settings.backoffInitialMs, maxMs: settings.backoffMaxMs },
      watchTimeoutSeconds: settings.watchTimeoutSeconds,
      ...(settings.stallGraceMs !== undefined ? { stallGraceMs: settings.stallGraceMs } : {}),
    };
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
      instances: [...this.snapshot.values()].map(({ namespace, version, source }) => ({
        namespace,
        version: version ?? null,
        source,
      })),
    };
  }

  private update(reflector: Reflector, objects: readonly KubeObject[]): void {
    this.workloads.set(reflector, objects);
    // Until every list is in, an instance could be judged by half its controllers: publish nothing yet.
    if (!this.reflectors.every((each) => each.synced)) return;
    const next = instancesFrom([...this.workloads.values()].flat());
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
          fields,
          'Argo CD instance version unknown: hooks it applies get mutations only, never denials',
        );
      else this.logger.info(fields, previous ? 'Argo CD instance version changed' : 'Argo CD instance discovered');
    }
    for (const namespace of before.keys()) {
      if (!after.has(namespace)) this.logger.info({ namespace }, 'Argo CD instance gone');
    }
  }
}
