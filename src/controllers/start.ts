// Starts serve's leader-elected controllers: one Lease (leaderElection.*), and on its holder each enabled controller's
// task. Each controller that cannot run says why, once; the server serves on without it.
import type { Logger } from 'pino';
import type { Config } from '../config/keys.js';
import { actingIdentity, kubeConnection } from '../kube/kubeconfig.js';
import { leaderIdentity, startLeaderLoop, type LeaderTask } from './leader-loop.js';
import { selfTestController, selfTestDisabled, selfTestOff, type SelfTestView } from './selftest/start.js';
import type { OutcomeObserver, SelfTestSources } from './selftest/self-test.js';

export interface ControllerInputs {
  selfTest: { sources: SelfTestSources; observe: OutcomeObserver };
}

export interface RunningControllers {
  selfTest: SelfTestView;
  /** Gives the Lease up at once (another replica takes over) and waits for the controllers to end. */
  stop(): Promise<void>;
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
  if (!connection) {
    return { selfTest: selfTestDisabled(selfTestReason ?? NO_CLUSTER, logger), stop: async () => undefined };
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
  if (tasks.length === 0) return { selfTest, stop: async () => undefined };
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
  return { selfTest, stop: () => loop.stop() };
}
