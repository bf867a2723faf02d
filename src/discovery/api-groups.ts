// What the API server's discovery says of the cluster as a whole, for `serve`: GET /apis (the APIGroupList) at start
// and every POLL_MS after, published as a snapshot requests read synchronously. Whether the cluster is OpenShift is
// whether it serves security.openshift.io: its SCC admission assigns user ids in every namespace, including one
// created a moment ago whose openshift.io/sa.scc.uid-range cluster-policy-controller has not written yet. A namespace
// annotation, which anyone can copy into another cluster, never decides it.
// Discovery needs no RBAC beyond the default ClusterRole system:discovery, bound to every authenticated user.
import type { Logger } from 'pino';
import type { Config } from '../config/keys.js';
import { clusterFactsFrom, type ClusterFacts } from '../core/cluster.js';
import { apiFailureText } from '../kube/api-failure.js';
import { getBody } from '../kube/api-request.js';
import { backoffDelayMs, type BackoffSettings } from '../kube/backoff.js';
import { kubeConnection } from '../kube/kubeconfig.js';
import type { KubeConfig } from '@kubernetes/client-node';

/** API groups change when an operator is installed, rarely: read again every five minutes. */
export const POLL_MS = 5 * 60_000;
const TIMEOUT_MS = 10_000;

export type ApiDiscoveryStatus =
  { enabled: false; reason: string } | { enabled: true; read: boolean; openshift?: boolean; lastError?: string };

/** Where the HTTP app reads the cluster's facts from: both calls are cheap and never wait on the network. */
export interface ClusterSource {
  /** The latest facts; undefined until the first answer is in (and when off). */
  cluster(): ClusterFacts | undefined;
  status(): ApiDiscoveryStatus;
}

export interface RunningApiDiscovery {
  source: ClusterSource;
  stop(): Promise<void>;
}

export class ApiDiscovery implements ClusterSource {
  private facts: ClusterFacts | undefined;
  private lastError: string | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly backoff: BackoffSettings,
    private readonly logger: Logger,
    private readonly pollMs = POLL_MS,
  ) {}

  start(): void {
    void this.read();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  cluster(): ClusterFacts | undefined {
    return this.facts;
  }

  status(): ApiDiscoveryStatus {
    return {
      enabled: true,
      read: this.facts !== undefined,
      ...(this.facts ? { openshift: this.facts.openshift } : {}),
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
    };
  }

  /** One read; a failure keeps the last facts and tries again with backoff, an answer waits for the next poll. */
  private async read(): Promise<void> {
    let delay = this.pollMs;
    try {
      const body = await getBody(this.kubeConfig, { path: '/apis', accept: 'application/json', timeoutMs: TIMEOUT_MS });
      const facts = clusterFactsFrom(JSON.parse(body.toString('utf8')));
      if (!facts) throw new Error('GET /apis did not answer an APIGroupList');
      if (facts.openshift !== this.facts?.openshift)
        this.logger.info({ openshift: facts.openshift }, 'API discovery: cluster facts');
      this.facts = facts;
      this.lastError = undefined;
      this.failures = 0;
    } catch (error) {
      this.lastError = apiFailureText(error);
      delay = backoffDelayMs(this.failures++, this.backoff);
      this.logger.warn({ error: this.lastError, retryInMs: delay }, 'API discovery failed; keeping the last facts');
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.read(), delay);
    this.timer.unref();
  }
}

/**
 * Starts API discovery unless `rules.minRuntime.openshift` says what the cluster is, or there is no cluster to ask;
 * then it says why, once.
 */
export function startApiDiscovery(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): RunningApiDiscovery {
  const off = (reason: string): RunningApiDiscovery => {
    logger.info({ reason }, 'API discovery off');
    const status: ApiDiscoveryStatus = { enabled: false, reason };
    return { source: { cluster: () => undefined, status: () => status }, stop: async () => undefined };
  };
  const setting = config.rules.minRuntime.openshift;
  if (setting !== 'auto') return off(`rules.minRuntime.openshift is ${setting}`);
  const connection = kubeConnection(env);
  if (!connection) return off('no kubeconfig and no in-cluster service account: not running in a cluster');
  const { backoffInitialMs, backoffMaxMs } = config.discovery;
  const discovery = new ApiDiscovery(
    connection.kubeConfig,
    { initialMs: backoffInitialMs, maxMs: backoffMaxMs },
    logger.child({ component: 'api-discovery' }),
  );
  logger.info({ from: connection.source }, 'API discovery on');
  discovery.start();
  return { source: discovery, stop: () => discovery.stop() };
}
