import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config } from '../../config/keys.js';
import { advisoriesOfTool } from '../../core/argocd-version.js';
import { ConfigError } from '../../errors.js';
import type { LeaderLoop, LeaderTask } from '../leader-loop.js';
import { HOOKGUARD_RESOURCE, kubeSelfTestClient } from './client.js';
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

/** The self-test as the HTTP app sees it. */
export interface SelfTestView {
  status(): SelfTestStatus;
  /** The username the probe's admission requests come from (hookguard's own), when the self-test runs. */
  probeUsername: string | undefined;
}

/** Why the self-test cannot run with this config, or undefined; a namespace hookguard excludes is refused. */
export function selfTestOff(config: Readonly<Config>): string | undefined {
  if (!config.selfTest.enabled) return 'selfTest.enabled is false';
  if (config.excludedNamespaces.includes(config.selfTest.namespace))
    throw new ConfigError(
      'selfTest.namespace',
      `${config.selfTest.namespace} is in excludedNamespaces: hookguard would pass the probe unjudged`,
    );
  return undefined;
}

export function selfTestDisabled(reason: string, logger: Logger): SelfTestView {
  logger.info({ reason }, 'self-test off');
  const status: SelfTestStatus = { enabled: false, reason };
  return { status: () => status, probeUsername: undefined };
}

/**
 * The self-test as a task of the leader loop: the replica holding the Lease dry-runs a probe hook Job and writes the
 * HookGuard status. `loop()` is read for the status only.
 */
export function selfTestController(
  config: Readonly<Config>,
  kubeConfig: KubeConfig,
  probeUsername: string,
  logger: Logger,
  sources: SelfTestSources,
  observe: OutcomeObserver,
  loop: () => LeaderLoop | undefined,
  identity: string,
): { task: LeaderTask; view: SelfTestView } {
  const { selfTest } = config;
  const test = new SelfTest(
    kubeSelfTestClient(kubeConfig, { ...HOOKGUARD_RESOURCE, name: selfTest.statusObject }),
    {
      mode: config.mode,
      namespace: selfTest.namespace,
      intervalSeconds: selfTest.intervalSeconds,
      requestTimeoutMs: selfTest.requestTimeoutMs,
      certificateWarningDays: selfTest.certificateWarningDays,
      pinnedArgocdVersion: config.argocd.version,
      // The Argo CD advisories: the status lists those affecting a discovered Argo CD (Helm's are for render time).
      advisories: advisoriesOfTool(config.advisories, 'argocd'),
      statusObject: selfTest.statusObject,
    },
    sources,
    observe,
    logger,
    identity,
  );
  logger.info(
    { namespace: selfTest.namespace, intervalSeconds: selfTest.intervalSeconds, probeUsername },
    'self-test on: the replica holding the Lease dry-runs a probe hook Job and writes the HookGuard status',
  );
  return {
    task: { name: 'self-test', run: (signal) => test.run(signal) },
    view: {
      probeUsername,
      status: () => ({
        enabled: true,
        identity,
        leading: loop()?.isLeader ?? false,
        leader: loop()?.leader ?? '',
        ...(test.last ? { last: { time: test.last.at, outcome: test.last.outcome, message: test.last.message } } : {}),
      }),
    },
  };
}
