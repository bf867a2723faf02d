// Hook Jobs and Pods in the states sweep has to tell apart, for the stand-in API server.
import type { FakeApiServer } from './fake-apiserver.js';
import { HOOK_FINALIZER } from './objects.js';

export const KEEP = 'example.com/keep';
const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString();

interface Stuck {
  name: string;
  namespace?: string;
  deletedSecondsAgo?: number;
  finalizers?: string[];
  annotations?: Record<string, string>;
  status?: Record<string, unknown>;
}

const COMPLETE = {
  conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: '2026-11-22T10:00:00Z' }],
  succeeded: 1,
};

export function stuckJob(shape: Stuck): Record<string, unknown> {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: shape.name,
      namespace: shape.namespace ?? 'apps',
      finalizers: shape.finalizers ?? [HOOK_FINALIZER],
      annotations: shape.annotations ?? { 'argocd.argoproj.io/hook': 'PreSync' },
      ...(shape.deletedSecondsAgo !== undefined
        ? { deletionTimestamp: secondsAgo(shape.deletedSecondsAgo), deletionGracePeriodSeconds: 0 }
        : {}),
    },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'alpine:3.20' }] } } },
    status: shape.status ?? COMPLETE,
  };
}

export function stuckPod(shape: Stuck): Record<string, unknown> {
  return {
    ...stuckJob(shape),
    apiVersion: 'v1',
    kind: 'Pod',
    spec: { containers: [{ name: 'main', image: 'alpine:3.20' }] },
    status: shape.status ?? { phase: 'Succeeded' },
  };
}

/** The cluster of the mission: stuck hooks, and look-alikes that must not be touched. */
export function seed(server: FakeApiServer): void {
  server.put(stuckJob({ name: 'keeps-other', deletedSecondsAgo: 330, finalizers: [KEEP, HOOK_FINALIZER] }));
  server.put(
    stuckJob({
      name: 'failed-only-hook',
      deletedSecondsAgo: 345,
      status: { conditions: [{ type: 'Failed', status: 'True' }], failed: 1 },
    }),
  );
  server.put(stuckPod({ name: 'pod-done', namespace: 'team-b', deletedSecondsAgo: 390 }));
  server.put(stuckJob({ name: 'running-old', deletedSecondsAgo: 1200, status: { active: 1 } }));
  server.put(stuckJob({ name: 'running-new', deletedSecondsAgo: 30, status: { active: 1 } }));
  server.put(stuckJob({ name: 'not-deleting' }));
  server.put(stuckJob({ name: 'not-a-hook', deletedSecondsAgo: 3000, annotations: {} }));
  server.put(stuckJob({ name: 'other-finalizer-only', deletedSecondsAgo: 3000, finalizers: [KEEP] }));
}
