import type { Logger } from 'pino';
import type { Config } from '../config/keys.js';
import { kubeConnection } from '../kube/kubeconfig.js';
import { pinnedHelmControllers } from '../config/decision-context.js';
import { ArgoDiscovery, discoveryOff, type ArgoVersionSource } from './discovery.js';
import { fluxDiscoveryOff, HelmControllerDiscovery, type HelmControllerSource } from './helm-controllers.js';

export interface RunningDiscovery {
  source: ArgoVersionSource;
  stop(): Promise<void>;
}

/**
 * Starts discovery unless the version is pinned, discovery is disabled, or there is no cluster to ask; in
 * those cases it says why, once, and hookguard serves on with the configured (or an unknown) version.
 */
export function startDiscovery(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): RunningDiscovery {
  logger.info({ remote: config.argocd.remote }, 'remote Argo CD identities: judged with their configured versions');
  const off = (reason: string): RunningDiscovery => {
    logger.info({ reason }, 'Argo CD discovery off');
    return { source: discoveryOff(reason, config.argocd.instanceVersions), stop: async () => undefined };
  };
  if (config.argocd.version !== null) return off(`argocd.version is set to ${config.argocd.version}`);
  if (!config.discovery.enabled) return off('discovery.enabled is false');
  if (!config.discovery.clusterWide && config.discovery.namespaces.length === 0)
    return off('discovery.namespaces is empty and discovery.clusterWide is false: nowhere to look');
  const connection = kubeConnection(env);
  if (!connection) return off('no kubeconfig and no in-cluster service account: not running in a cluster');
  const discovery = new ArgoDiscovery(
    connection.kubeConfig,
    {
      ...config.discovery,
      instanceVersions: config.argocd.instanceVersions,
      gitopsVersions: config.argocd.openshiftGitopsVersions,
    },
    logger.child({ component: 'discovery' }),
  );
  logger.info(
    {
      from: connection.source,
      labelSelector: config.discovery.labelSelector,
      namespaces: config.discovery.clusterWide ? 'all (discovery.clusterWide)' : config.discovery.namespaces,
      instanceVersions: config.argocd.instanceVersions,
    },
    'Argo CD discovery on',
  );
  discovery.start();
  return { source: discovery, stop: () => discovery.stop() };
}

export interface RunningFluxDiscovery {
  source: HelmControllerSource;
  stop(): Promise<void>;
}

/**
 * Starts the discovery of Flux's helm-controllers unless `flux.helmControllerVersion` pins one, discovery is
 * disabled, or there is no cluster; then it says why, and admission uses the configured version (or none).
 */
export function startFluxDiscovery(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): RunningFluxDiscovery {
  const pinned = pinnedHelmControllers(config);
  const off = (reason: string): RunningFluxDiscovery => {
    logger.info({ reason }, 'Flux helm-controller discovery off');
    return { source: fluxDiscoveryOff(reason, pinned), stop: async () => undefined };
  };
  if (config.flux.helmControllerVersion !== null)
    return off(`flux.helmControllerVersion is set to ${config.flux.helmControllerVersion}`);
  if (!config.discovery.enabled) return off('discovery.enabled is false');
  if (!config.discovery.clusterWide && config.flux.namespaces.length === 0)
    return off('flux.namespaces is empty and discovery.clusterWide is false: nowhere to look');
  const connection = kubeConnection(env);
  if (!connection) return off('no kubeconfig and no in-cluster service account: not running in a cluster');
  const discovery = new HelmControllerDiscovery(
    connection.kubeConfig,
    { ...config.discovery, labelSelector: config.flux.labelSelector, namespaces: config.flux.namespaces },
    logger.child({ component: 'flux-discovery' }),
  );
  logger.info(
    {
      labelSelector: config.flux.labelSelector,
      namespaces: config.discovery.clusterWide ? 'all (discovery.clusterWide)' : config.flux.namespaces,
    },
    'Flux helm-controller discovery on',
  );
  discovery.start();
  return { source: discovery, stop: () => discovery.stop() };
}
