// The leader-elected loop every controller of serve shares: one Lease, one holder, and on the holder each controller's
// task runs until leadership ends (lost, or stopping). The Lease protocol itself is src/kube/leader-election.ts.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { kubeLeaseLock, LeaderElector, type Leadership, type LeaderElectionSettings } from '../kube/leader-election.js';

/** One controller's work while this replica leads: it runs until `signal` aborts. */
export interface LeaderTask {
  name: string;
  run(signal: AbortSignal): Promise<void>;
}

export interface LeaderLoop {
  /** This replica, as it writes itself into the Lease. */
  readonly identity: string;
  readonly isLeader: boolean;
  /** The Lease's holder as last seen ('' when free). */
  readonly leader: string;
  /** Gives the Lease up at once (so another replica takes over) and waits for the tasks to end. */
  stop(): Promise<void>;
}

/** client-go's leader-election identity: the host name and a fresh UUID, so two processes on one host differ. */
export function leaderIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

/**
 * Starts electing on the Lease `settings` names and, each time this replica starts leading, runs every task; a task
 * that throws is logged and does not end the others.
 */
export function startLeaderLoop(
  kubeConfig: KubeConfig,
  settings: LeaderElectionSettings,
  tasks: readonly LeaderTask[],
  logger: Logger,
  identity: string = leaderIdentity(),
): LeaderLoop {
  const terms = leaderTerms(tasks, logger);
  const elector = new LeaderElector(
    kubeLeaseLock(kubeConfig, settings.leaseNamespace, settings.leaseName),
    identity,
    settings,
    logger,
    terms,
  );
  elector.start();
  return {
    identity,
    get isLeader() {
      return elector.isLeader;
    },
    get leader() {
      return elector.leader;
    },
    stop: async () => {
      await elector.stop();
      await terms.ended();
    },
  };
}

/**
 * The tasks' terms, one after the other: a term starts only once every task of the previous one has ended, so two
 * terms never overlap (a Lease lost and won back at once would otherwise run the watcher, the self-test and their
 * writes twice side by side). A term whose leadership ended while it waited does not start.
 */
export function leaderTerms(tasks: readonly LeaderTask[], logger: Logger): Leadership & { ended(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  return {
    started: (signal) => {
      running = running.then(async () => {
        if (signal.aborted) return;
        await Promise.all(
          tasks.map((task) =>
            task
              .run(signal)
              .catch((error: unknown) => logger.error({ err: error, task: task.name }, 'leader task failed')),
          ),
        );
      });
    },
    stopped: () => undefined,
    ended: () => running,
  };
}
