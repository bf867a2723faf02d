import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/keys.js';
import { ConfigError } from '../errors.js';
import { actingIdentity, kubeConnection } from '../kube/kubeconfig.js';
import { kubeLeaseLock, LeaderElector } from '../kube/leader-election.js';
import { kubeSelfTestClient } from './client.js';
import type { SelfTestOutcome } from './probe.js';
import { SelfTest, type OutcomeObserver, type SelfTestSources } from './self-test.js';

export type SelfTestStatus =
  | { enabled: false; reason: string }
  | {
      enabled: true;
      /** This replica, as it writes itself into the Lease. */
      identity: string;
      leading: boolean;
      /** The Lease's holder as last seen ('' when free). */
      leader: string;
      /** This replica's last self-test, when it led. */
      last?: { time: string; outcome: SelfTestOutcome; message: string };
    };

export interface RunningSelfTest {
  status(): SelfTestStatus;
  /** The username the probe's admission requests come from (hookguard's own), when the self-test runs. */
  probeUsername: string | undefined;
  stop(): Promise<void>;
}

/**
 * Starts leader election and, on the leader, the self-test, unless selfTest.enabled is false or there is no
 * cluster; then it says why, once, and the server runs without it.
 */
export function startSelfTest(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
  sources: SelfTestSources,
  observe: OutcomeObserver,
): RunningSelfTest {
  const off = (reason: string): RunningSelfTest => {
    logger.info({ reason }, 'self-test off');
    const status: SelfTestStatus = { enabled: false, reason };
    return { status: () => status, probeUsername: undefined, stop: async () => undefined };
  };
  const { selfTest, leaderElection } = config;
  if (!selfTest.enabled) return off('selfTest.enabled is false');
  if (config.excludedNamespaces.includes(selfTest.namespace))
    throw new ConfigError(
      'selfTest.namespace',
      `${selfTest.namespace} is in excludedNamespaces: hookguard would pass the probe unjudged`,
    );
  const connection = kubeConnection(env);
  if (!connection) return off('no kubeconfig and no in-cluster service account: not running in a cluster');
  const identity = `${hostname()}_${randomUUID()}`;
  const selfTestLogger = logger.child({ component: 'self-test' });
  const test = new SelfTest(
    kubeSelfTestClient(connection.kubeConfig),
    {
      mode: config.mode,
      namespace: selfTest.namespace,
      intervalSeconds: selfTest.intervalSeconds,
      requestTimeoutMs: selfTest.requestTimeoutMs,
      certificateWarningDays: selfTest.certificateWarningDays,
      pinnedArgocdVersion: config.argocd.version,
      // The Argo CD advisories: the status lists those affecting a discovered Argo CD (Helm's are for render time).
      advisories: config.advisories.filter((advisory) => advisory.tool !== 'helm'),
    },
    sources,
    observe,
    selfTestLogger,
    identity,
  );
  let running: Promise<void> | undefined;
  const elector = new LeaderElector(
    kubeLeaseLock(connection.kubeConfig, leaderElection.leaseNamespace, leaderElection.leaseName),
    identity,
    leaderElection,
    selfTestLogger,
    {
      started: (signal) => {
        running = test.run(signal);
      },
      stopped: () => undefined,
    },
  );
  const probeUsername = actingIdentity(connection.kubeConfig);
  logger.info(
    {
      from: connection.source,
      identity,
      lease: `${leaderElection.leaseNamespace}/${leaderElection.leaseName}`,
      namespace: selfTest.namespace,
      intervalSeconds: selfTest.intervalSeconds,
      probeUsername,
    },
    'self-test on: the replica holding the Lease dry-runs a probe hook Job and writes the HookGuard status',
  );
  elector.start();
  return {
    probeUsername,
    status: () => ({
      enabled: true,
      identity,
      leading: elector.isLeader,
      leader: elector.leader,
      ...(test.last ? { last: { time: test.last.at, outcome: test.last.outcome, message: test.last.message } } : {}),
    }),
    stop: async () => {
      await elector.stop();
      await running;
    },
  };
}
