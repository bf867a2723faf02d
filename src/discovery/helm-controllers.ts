// Finds Flux's helm-controllers and keeps their versions current, as ArgoDiscovery does for Argo CD (the same
// Reflector, the same trust model: only the configured namespaces are looked in unless discovery.clusterWide).
// Admission never waits for it: requests read the last snapshot.
import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { NO_HELM_CONTROLLERS, type HelmControllers } from '../core/flux.js';
import type { KubeObject } from '../core/types.js';
import { plainObject } from '../kube/plain.js';
import { Reflector, reflectorSettingsOf, type ListResult, type ReflectorTarget } from '../kube/reflector.js';
import { isRunning } from './controller-version.js';
import type { DiscoverySettings } from './discovery.js';
import { helmControllerVersion } from './helm-controller-version.js';

export interface HelmControllerStatus {
  namespace: string;
  name: string;
  version: string | null;
  source: string;
}

export type FluxDiscoveryStatus =
  | { enabled: false; reason: string; helmControllers: HelmControllerStatus[] }
  | { enabled: true; synced: boolean; watching: boolean; lastError?: string; helmControllers: HelmControllerStatus[] };

/** Where the HTTP app reads the helm-controllers from: both calls are cheap and never wait on the network. */
export interface HelmControllerSource {
  helmControllers(): HelmControllers;
  status(): FluxDiscoveryStatus;
}

/** What the running helm-controller Deployments say (one at zero replicas deploys nothing). */
export function helmControllerStatuses(workloads: readonly KubeObject[]): HelmControllerStatus[] {
  return workloads
    .filter(isRunning)
    .map((workload) => ({
      namespace: workload.metadata?.namespace ?? '',
      name: workload.metadata?.name ?? '',
      ...helmControllerVersion(workload),
    }))
    .map(({ version, ...rest }) => ({ ...rest, version: version ?? null }))
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

/** The snapshot rules read: every known version, and whether one runs whose version is unknown. */
export function helmControllersOf(statuses: readonly HelmControllerStatus[]): HelmControllers {
  if (statuses.length === 0) return NO_HELM_CONTROLLERS;
  const versions = [...new Set(statuses.flatMap((status) => (status.version === null ? [] : [status.version])))];
  return { versions, unknownVersion: statuses.some((status) => status.version === null) };
}

/** The source when Flux discovery does not run: the configured version (flux.helmControllerVersion), or none. */
export function fluxDiscoveryOff(reason: string, pinned: HelmControllers): HelmControllerSource {
  const status: FluxDiscoveryStatus = {
    enabled: false,
    reason,
    helmControllers: pinned.versions.map((version) => ({
      namespace: '',
      name: '',
      version,
      source: 'flux.helmControllerVersion',
    })),
  };
  return { helmControllers: () => pinned, status: () => status };
}

export type FluxDiscoverySettings = Pick<
  DiscoverySettings,
  'clusterWide' | 'backoffInitialMs' | 'backoffMaxMs' | 'watchTimeoutSeconds' | 'stallGraceMs'
> & { labelSelector: string; namespaces: readonly string[] };

function targetsFor(kubeConfig: KubeConfig, settings: FluxDiscoverySettings): ReflectorTarget[] {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const { labelSelector } = settings;
  const scopes: Array<string | undefined> = settings.clusterWide ? [undefined] : [...settings.namespaces];
  const plainList = (list: { items: unknown[]; metadata?: { resourceVersion?: string } }): ListResult => ({
    items: list.items.map(plainObject),
    resourceVersion: list.metadata?.resourceVersion ?? '',
  });
  return scopes.map((namespace) => ({
    description: `helm-controller deployments in ${namespace === undefined ? 'all namespaces' : `namespace ${namespace}`}`,
    path:
      namespace === undefined
        ? '/apis/apps/v1/deployments'
        : `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments`,
    labelSelector,
    list: async () =>
      plainList(
        namespace === undefined
          ? await apps.listDeploymentForAllNamespaces({ labelSelector })
          : await apps.listNamespacedDeployment({ namespace, labelSelector }),
      ),
  }));
}

export class HelmControllerDiscovery implements HelmControllerSource {
  private readonly reflectors: Reflector[];
  private readonly workloads = new Map<Reflector, readonly KubeObject[]>();
  private statuses: HelmControllerStatus[] = [];
  private snapshot: HelmControllers = NO_HELM_CONTROLLERS;

  constructor(
    kubeConfig: KubeConfig,
    settings: FluxDiscoverySettings,
    private readonly logger: Logger,
  ) {
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

  helmControllers(): HelmControllers {
    return this.snapshot;
  }

  status(): FluxDiscoveryStatus {
    const lastError = this.reflectors.find((reflector) => reflector.lastError !== undefined)?.lastError;
    return {
      enabled: true,
      synced: this.reflectors.every((reflector) => reflector.synced),
      watching: this.reflectors.every((reflector) => reflector.connected),
      ...(lastError !== undefined ? { lastError } : {}),
      helmControllers: this.statuses,
    };
  }

  private update(reflector: Reflector, objects: readonly KubeObject[]): void {
    this.workloads.set(reflector, objects);
    if (!this.reflectors.every((each) => each.synced)) return;
    const next = helmControllerStatuses([...this.workloads.values()].flat());
    if (JSON.stringify(next) !== JSON.stringify(this.statuses))
      this.logger.info({ helmControllers: next }, 'Flux helm-controllers discovered');
    this.statuses = next;
    this.snapshot = helmControllersOf(next);
  }
}
