import { jobSpecOf, podSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';
import type { JobSpec, KubeObject, PodSpec } from '../core/types.js';
import { guardWaitSeconds } from './min-runtime.js';

const DEADLINE_REASON = 'a hook whose Pod never starts fails then instead of waiting forever';

export const MISSING_DEADLINE_WARNING =
  'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';

/**
 * The spec that holds the deadline: a Job's, or a bare Pod's own. A Pod's counts from its status.startTime, which the
 * kubelet sets once the Pod is bound to it: an unschedulable bare Pod is not ended by it, an image pull is.
 */
function deadlineHolder(object: KubeObject): JobSpec | PodSpec | undefined {
  return object.kind === 'Job' ? jobSpecOf(object) : podSpecOf(object);
}

/** A Job that runs more than one Pod: completions or parallelism above 1 (both default to 1). */
function runsSeveralPods(object: KubeObject): boolean {
  if (object.kind !== 'Job') return false;
  const spec = jobSpecOf(object);
  return [spec?.completions, spec?.parallelism].some((count) => typeof count === 'number' && count > 1);
}

/**
 * A hook whose Pod never starts (ImagePullBackOff, unschedulable, a missing Secret) never fails by itself:
 * backoffLimit counts failed Pods only (kubernetes#66756), so `helm install` waits until its --timeout and an Argo CD
 * sync forever (argo-cd#6880, #4979). A deadline ends it, but also ends a hook that is merely slow: once
 * activeDeadlineSeconds has passed since the Job's status.startTime, the Job controller marks the Job Failed with
 * reason DeadlineExceeded and deletes its running Pods (kubernetes/kubernetes pkg/controller/job/job_controller.go
 * syncJob and pastActiveDeadline, read at commit 6ae037f1db84), so a migration longer than the value dies mid-run.
 * Argo CD's only sync timeout is controller-wide and off by default (argo-cd#23523) and Helm users raise --timeout:
 * long hooks used to finish. So by default the rule sets nothing and names the missing deadline (a warning, a `warn`
 * finding, hookguard_rule_actions_total{rule="hook-deadline",action="warn"}); setting one is an opt-in with its
 * value (rules.hookDeadline.activeDeadlineSeconds), never on a Job running several Pods unless asked
 * (rules.hookDeadline.parallelJobs): their Pods share the one deadline. A value the chart set, however short or long,
 * is the chart's; the min-runtime guard's wait is added to ours, so the hook itself always has the full time.
 */
export const hookDeadline: MutationRule = {
  id: 'hook-deadline',
  doc: 'Names a hook Job or bare hook Pod without spec.activeDeadlineSeconds in a warning; sets one only when rules.hookDeadline.activeDeadlineSeconds is configured (plus the min-runtime guard’s wait), on Jobs running several Pods only with rules.hookDeadline.parallelJobs.',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object, { settings }) {
    const spec = deadlineHolder(object);
    // null is what Helm renders for an empty value: the API server drops it, so the hook would have no deadline.
    if (!spec || (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds !== null)) return report();
    const { activeDeadlineSeconds: seconds, parallelJobs, warn } = settings.hookDeadline;
    if (seconds === 0 || (runsSeveralPods(object) && !parallelJobs)) {
      return report({ warnings: warn ? [MISSING_DEADLINE_WARNING] : [] });
    }
    const guard = guardWaitSeconds(podSpecOf(object));
    spec.activeDeadlineSeconds = seconds + guard;
    const value = guard > 0 ? `${seconds + guard} (${seconds} after the ${guard}s min-runtime guard)` : `${seconds}`;
    return report({
      mutations: [`set spec.activeDeadlineSeconds: ${value}: ${DEADLINE_REASON}`],
    });
  },
};
