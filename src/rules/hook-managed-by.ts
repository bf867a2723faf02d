import { jobSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/** The value that leaves a Job to Kubernetes' own Job controller (batch/v1 JobSpec.managedBy; unset means the same). */
export const BUILT_IN_JOB_CONTROLLER = 'kubernetes.io/job-controller';

/**
 * `spec.managedBy` (JobManagedBy: alpha in 1.30, beta and on by default in 1.32, GA in 1.35) hands a Job to another
 * controller: the built-in Job controller skips it entirely, so no Pod is created here unless that controller does
 * it (MultiKueue, `kueue.x-k8s.io/multikueue`, runs it in a worker cluster and copies its status back). Helm and Argo
 * CD wait for the status that controller writes: without one running, the hook never finishes. Warns; changes nothing.
 * Where the gate is off (before 1.32) the API server drops the field and the Job runs as usual.
 */
export const hookManagedBy: MutationRule = {
  id: 'hook-managed-by',
  doc: 'Warns about a hook Job whose spec.managedBy is not kubernetes.io/job-controller: the built-in Job controller ignores it, and the hook runs only if that controller runs it. Changes nothing.',
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'always',
  mutate(object) {
    const managedBy = jobSpecOf(object)?.managedBy;
    if (managedBy === undefined || managedBy === null || managedBy === BUILT_IN_JOB_CONTROLLER) return report();
    return report({
      warnings: [
        `spec.managedBy ${JSON.stringify(managedBy)}: Kubernetes' Job controller ignores this hook Job; it runs, and Helm or Argo CD see it finish, only if that controller runs it`,
      ],
    });
  },
};
