// Starts serve's leader-elected controllers: one Lease (leaderElection.*), and on its holder each enabled controller's
// task. Each controller that cannot run says why, once; the server serves on without it.
import type { Logger } from 'pino';
import type { Config } from '../config/keys.js';
import { actingIdentity, kubeConnection } from '../kube/kubeconfig.js';
import { leaderIdentity, startLeaderLoop, type LeaderTask } from './leader-loop.js';
import { selfTestController, selfTestDisabled, selfTestOff, type SelfTestView } from './selftest/start.js';
import type { OutcomeObserver, SelfTestSources } from './selftest/self-test.js';
import { kubeHookWatchClient } from './hooks/client.js';
import { CallBudget, type CallLimits } from '../kube/call-budget.js';
import { HookWatcher, type HookWatchObserver, type HookWatchSettings } from './hooks/watcher.js';
import { hostname } from 'node:os';
import { applicationLookupOf } from '../sweep/application-lookup.js';
import { reflectorSettingsOf } from '../kube/reflector.js';
import type { ArgoVersionSource } from '../discovery/discovery.js';
import { kubePolicyParamsClient, policyParamsTask } from './policy-params.js';

export interface ControllerInputs {
  selfTest: { sources: SelfTestSources; observe: OutcomeObserver };
  hooks: HookWatchObserver;
  /** Argo CD discovery, read when the policy parameters are looked at (it starts after the controllers). */
  argocd: () => ArgoVersionSource;
}

export interface RunningControllers {
  selfTest: SelfTestView;
  /** Whether the hook watcher runs on the Lease holder, or why not. */
  hookWatch: { enabled: true } | { enabled: false; reason: string };
  /** Gives the Lease up at once (another replica takes over) and waits for the controllers to end. */
  stop(): Promise<void>;
}

/** The hook watcher's settings from the configuration (also what `npm run bench:watch` runs it with). */
export function hookWatchSettings(config: Readonly<Config>): HookWatchSettings {
  return {
    stuckAfterSeconds: config.why.stuckAfterSeconds,
    recheckSeconds: config.hookWatch.recheckSeconds,
    eventLogs: config.hookWatch.eventLogs,
    helmReleaseEvents: config.hookWatch.helmReleaseEvents,
    // In a cluster, the pod's name: which replica wrote an Event.
    reportingInstance: hostname(),
    applicationLookup: applicationLookupOf(config),
    reflector: reflectorSettingsOf(config.discovery),
  };
}

/** What the hook watcher may ask of the API server (also what `npm run bench:watch` runs it with). */
export function hookWatchCallLimits(config: Readonly<Config>): CallLimits {
  const { maxConcurrentCalls, callsPerSecond, callBurst } = config.hookWatch;
  return { maxConcurrent: maxConcurrentCalls, perSecond: callsPerSecond, burst: callBurst };
}

const NO_CLUSTER = 'no kubeconfig and no in-cluster service account: not running in a cluster';

export function startControllers(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
  inputs: ControllerInputs,
): RunningControllers {
  // Checked first: a config the self-test refuses stops serve before anything starts.
  const selfTestReason = selfTestOff(config);
  const connection = kubeConnection(env);
  const hookWatchOff = config.hookWatch.enabled ? undefined : 'hookWatch.enabled is false';
  if (!connection) {
    const hookWatch = { enabled: false as const, reason: hookWatchOff ?? NO_CLUSTER };
    logger.info({ reason: hookWatch.reason }, 'hook watcher off');
    if (config.policyParams.enabled)
      logger.warn({ reason: NO_CLUSTER }, 'policy parameters off: nothing writes hookguard-policy-params');
    return {
      selfTest: selfTestDisabled(selfTestReason ?? NO_CLUSTER, logger),
      hookWatch,
      stop: async () => undefined,
    };
  }
  const identity = leaderIdentity();
  const tasks: LeaderTask[] = [];
  let selfTest: SelfTestView;
  if (selfTestReason === undefined) {
    const controller = selfTestController(
      config,
      connection.kubeConfig,
      actingIdentity(connection.kubeConfig),
      logger.child({ component: 'self-test' }),
      inputs.selfTest.sources,
      inputs.selfTest.observe,
      // Read by the status only, once the loop below has started.
      () => loop,
      identity,
    );
    tasks.push(controller.task);
    selfTest = controller.view;
  } else {
    selfTest = selfTestDisabled(selfTestReason, logger);
  }
  let hookWatch: RunningControllers['hookWatch'] = { enabled: true };
  if (hookWatchOff === undefined) {
    const watcher = new HookWatcher(
      connection.kubeConfig,
      kubeHookWatchClient(connection.kubeConfig, new CallBudget(hookWatchCallLimits(config))),
      hookWatchSettings(config),
      logger.child({ component: 'hook-watcher' }),
      inputs.hooks,
    );
    tasks.push({ name: 'hook-watcher', run: (signal) => watcher.run(signal) });
    logger.info(
      { stuckAfterSeconds: config.why.stuckAfterSeconds, eventLogs: config.hookWatch.eventLogs },
      'hook watcher on: the replica holding the Lease posts a HookFailed or HookStuck Event on a failing hook and its Argo CD Application',
    );
  } else {
    hookWatch = { enabled: false, reason: hookWatchOff };
    logger.info({ reason: hookWatchOff }, 'hook watcher off');
  }
  if (config.policyParams.enabled) {
    tasks.push(
      policyParamsTask(
        config,
        kubePolicyParamsClient(connection.kubeConfig),
        inputs.argocd,
        logger.child({ component: 'policy-params' }),
      ),
    );
    logger.info(
      { namespace: config.policyParams.namespace },
      'policy parameters on: the replica holding the Lease keeps the ConfigMap hookguard-policy-params current from discovery',
    );
  }
  if (tasks.length === 0) return { selfTest, hookWatch, stop: async () => undefined };
  const { leaderElection } = config;
  logger.info(
    {
      from: connection.source,
      identity,
      lease: `${leaderElection.leaseNamespace}/${leaderElection.leaseName}`,
      controllers: tasks.map((task) => task.name),
    },
    'leader election on: the replica holding the Lease runs the controllers',
  );
  const loop = startLeaderLoop(
    connection.kubeConfig,
    leaderElection,
    tasks,
    logger.child({ component: 'leader' }),
    identity,
  );
  return { selfTest, hookWatch, stop: () => loop.stop() };
}
