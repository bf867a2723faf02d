// The parameters of the admission policies kept current (issue 38.2): serve's Lease holder writes the ConfigMap
// hookguard-policy-params that `hookguard policies` generates, judged for the Argo CD versions discovery knows, so an
// Argo CD upgrade reaches the policies without generating them again. Written by server-side apply, and only when
// what it says changes.
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { decisionContext } from '../config/decision-context.js';
import type { Config } from '../config/keys.js';
import type { ArgoInstances } from '../core/argocd-instances.js';
import { normalizeArgoVersion } from '../core/argocd-version.js';
import type { KubeObject } from '../core/types.js';
import type { ArgoVersionSource } from '../discovery/discovery.js';
import { policyParams } from '../policies/generate.js';
import type { LeaderTask } from './leader-loop.js';

/** The fields of the ConfigMap are serve's: a person's edit is overwritten at the next change. */
const FIELD_MANAGER = 'hookguard';

export interface PolicyParamsClient {
  /** Server-side apply of the ConfigMap (created when missing). */
  apply(configMap: KubeObject): Promise<void>;
}

export function kubePolicyParamsClient(kubeConfig: KubeConfig): PolicyParamsClient {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    async apply(configMap) {
      await core.patchNamespacedConfigMap(
        {
          name: String(configMap.metadata?.name),
          namespace: String(configMap.metadata?.namespace),
          body: configMap as V1ConfigMap,
          fieldManager: FIELD_MANAGER,
          force: true,
        },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      );
    },
  };
}

/**
 * The Argo CD versions that may apply hooks here, as the webhook knows them: the pinned one (argocd.version covers
 * every instance), else each discovered instance's (argocd.instanceVersions included) and each remote's; undefined
 * where unknown. None at all: the parameters are judged for an unknown version.
 */
export function argocdVersions(config: Readonly<Config>, instances: ArgoInstances): Array<string | undefined> {
  const pinned = normalizeArgoVersion(config.argocd.version ?? undefined);
  if (pinned !== undefined) return [pinned];
  return [
    ...[...instances.values()].map((instance) => instance.version),
    ...Object.values(config.argocd.remote).map((version) => normalizeArgoVersion(version ?? undefined)),
  ];
}

/** The ConfigMap as discovery's snapshot says it now. */
export function currentPolicyParams(config: Readonly<Config>, instances: ArgoInstances): KubeObject {
  return policyParams(
    decisionContext(config),
    { namespace: config.policyParams.namespace },
    argocdVersions(config, instances),
  );
}

/** The Lease holder's task: look every policyParams.recheckSeconds, write on a change (and once when it starts). */
export function policyParamsTask(
  config: Readonly<Config>,
  client: PolicyParamsClient,
  argocd: () => ArgoVersionSource,
  logger: Logger,
): LeaderTask {
  return {
    name: 'policy-params',
    async run(signal) {
      let written: string | undefined;
      while (!signal.aborted) {
        const source = argocd();
        const status = source.status();
        // Until discovery's first list, its snapshot is empty: writing then would say "unknown" for a moment.
        if (!status.enabled || status.synced) {
          const configMap = currentPolicyParams(config, source.instances());
          const data = JSON.stringify(configMap.data);
          if (data !== written) {
            try {
              await client.apply(configMap);
              written = data;
              logger.info(
                { namespace: config.policyParams.namespace, data: configMap.data },
                'admission policy parameters written',
              );
            } catch (error) {
              logger.warn({ err: error }, 'admission policy parameters not written; tried again at the next look');
            }
          }
        }
        await sleep(config.policyParams.recheckSeconds * 1000, undefined, { signal }).catch(() => undefined);
      }
    },
  };
}
