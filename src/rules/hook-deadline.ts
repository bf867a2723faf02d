import { jobSpecOf, podSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';
import { guardWaitSeconds } from './min-runtime.js';

/**
 * A hook Job whose Pod never starts (ImagePullBackOff, unschedulable, a missing Secret) never fails by itself:
 * backoffLimit counts failed Pods only (kubernetes#66756), so `helm install` waits until its --timeout and an Argo CD
 * sync forever (argo-cd#6880, #4979). activeDeadlineSeconds counts from the Job's status.startTime, which the Job
 * controller sets at its first sync, before any Pod exists, and then fails the Job with reason DeadlineExceeded
 * (kubernetes/api v0.36.3 batch/v1/types.go: JobSpec.ActiveDeadlineSeconds, JobStatus.StartTime,
 * JobReasonDeadlineExceeded; the Job controller's syncJob and pastActiveDeadline). A value the chart set, however
 * short or long, is the chart's; the min-runtime guard's wait is added, so the hook itself always has the full time.
 */
export const hookDeadline: MutationRule = {
  id: 'hook-deadline',
  doc: "Gives hook Jobs without spec.activeDeadlineSeconds one (default 3600, plus the min-runtime guard's wait), so a hook whose Pod never starts fails with DeadlineExceeded instead of hanging.",
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'always',
  mutate(object, { settings }) {
    const spec = jobSpecOf(object);
    const seconds = settings.hookDeadline.activeDeadlineSeconds;
    // null is what Helm renders for an empty value: the API server drops it, so the Job would have no deadline.
    if (!spec || seconds === 0 || (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds !== null))
      return report();
    const guard = guardWaitSeconds(podSpecOf(object));
    spec.activeDeadlineSeconds = seconds + guard;
    return report({
      mutations: [
        guard > 0
          ? `set spec.activeDeadlineSeconds: ${seconds + guard} (${seconds} after the ${guard}s min-runtime guard)`
          : `set spec.activeDeadlineSeconds: ${seconds}`,
      ],
    });
  },
};
