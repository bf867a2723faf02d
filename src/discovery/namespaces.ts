// Keeps what rules read of the cluster's namespaces (the mesh injection labels and annotations of mesh-sidecar) for
// `serve`: one list+watch of /api/v1/namespaces with the same Reflector discovery uses, published as a snapshot that
// requests read synchronously. Admission never waits for it; until its first list is in, there is no snapshot, and
// mesh-sidecar says nothing rather than guess.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config } from '../config/keys.js';
import type { NamespaceFacts, NamespaceSnapshot } from '../core/namespaces.js';
import { isRecord } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import { kubeConnection } from '../kube/kubeconfig.js';
import { plainObject } from '../kube/plain.js';
import { Reflector, reflectorSettingsOf, type ReflectorSettings } from '../kube/reflector.js';
import { MESH_NAMESPACE_KEYS } from '../rules/mesh-sidecar.js';

export type NamespaceWatchStatus =
  | { enabled: false; reason: string }
  | {
      enabled: true;
      synced: boolean;
      watching: boolean;
      lastError?: string;
      /** Namespaces carrying a key some rule reads (e.g. istio-injection). */
      namespacesWithRuleKeys: number;
    };

/** Where the HTTP app reads namespace facts from: both calls are cheap and never wait on the network. */
export interface NamespaceSource {
  /** The latest snapshot; undefined until the first list is in. */
  namespaces(): NamespaceSnapshot | undefined;
  status(): NamespaceWatchStatus;
}

export interface RunningNamespaceWatch {
  source: NamespaceSource;
  stop(): Promise<void>;
}

/** The keys the watch keeps of each namespace. */
export interface NamespaceKeys {
  labels: readonly string[];
  annotations: readonly string[];
}

function pick(map: unknown, keys: readonly string[]): Record<string, string> | undefined {
  if (!isRecord(map)) return undefined;
  let picked: Record<string, string> | undefined;
  for (const key of keys) {
    const value = map[key];
    if (typeof value === 'string') (picked ??= {})[key] = value;
  }
  return picked;
}

/** The snapshot of a namespace list: only the namespaces that carry one of `keys`, and only those keys. */
export function namespacesFrom(objects: readonly KubeObject[], keys: NamespaceKeys): NamespaceSnapshot {
  const snapshot = new Map<string, NamespaceFacts>();
  for (const object of objects) {
    const name = object.metadata?.name;
    const labels = pick(object.metadata?.labels, keys.labels);
    const annotations = pick(object.metadata?.annotations, keys.annotations);
    if (typeof name === 'string' && (labels || annotations))
      snapshot.set(name, { name, labels: labels ?? {}, annotations: annotations ?? {} });
  }
  return snapshot;
}

export class NamespaceWatch implements NamespaceSource {
  private readonly reflector: Reflector;
  private snapshot: NamespaceSnapshot | undefined;

  constructor(kubeConfig: KubeConfig, settings: ReflectorSettings, logger: Logger, keys: NamespaceKeys) {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    this.reflector = new Reflector(
      kubeConfig,
      {
        description: 'namespaces',
        path: '/api/v1/namespaces',
        labelSelector: '',
        list: async () => {
          const list = await core.listNamespace();
          return { items: list.items.map(plainObject), resourceVersion: list.metadata?.resourceVersion ?? '' };
        },
        whileLost: 'using the last known namespace labels',
      },
      settings,
      logger,
      (objects) => (this.snapshot = namespacesFrom(objects, keys)),
    );
  }

  start(): void {
    this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  namespaces(): NamespaceSnapshot | undefined {
    return this.snapshot;
  }

  status(): NamespaceWatchStatus {
    const { synced, connected, lastError } = this.reflector;
    return {
      enabled: true,
      synced,
      watching: connected,
      ...(lastError !== undefined ? { lastError } : {}),
      namespacesWithRuleKeys: this.snapshot?.size ?? 0,
    };
  }
}

/**
 * What the rules read of a namespace: mesh-sidecar's injection keys. (OpenShift is known per cluster, by API discovery,
 * never by a namespace's openshift.io/sa.scc.uid-range: see src/discovery/api-groups.ts.)
 */
export const RULE_NAMESPACE_KEYS: NamespaceKeys = MESH_NAMESPACE_KEYS;

/**
 * Starts the namespace watch unless no rule needs it (mesh-sidecar off) or there is no cluster to ask; in those
 * cases it says why, once. It retries with discovery's backoff and renews its watch as discovery does.
 */
export function startNamespaceWatch(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): RunningNamespaceWatch {
  const off = (reason: string): RunningNamespaceWatch => {
    logger.info({ reason }, 'namespace watch off');
    const status: NamespaceWatchStatus = { enabled: false, reason };
    return { source: { namespaces: () => undefined, status: () => status }, stop: async () => undefined };
  };
  if (config.rules.meshSidecar.action === 'off') return off('rules.meshSidecar.action is off');
  const connection = kubeConnection(env);
  if (!connection) return off('no kubeconfig and no in-cluster service account: not running in a cluster');
  const watch = new NamespaceWatch(
    connection.kubeConfig,
    reflectorSettingsOf(config.discovery),
    logger.child({ component: 'namespaces' }),
    RULE_NAMESPACE_KEYS,
  );
  logger.info({ from: connection.source }, 'namespace watch on');
  watch.start();
  return { source: watch, stop: () => watch.stop() };
}
