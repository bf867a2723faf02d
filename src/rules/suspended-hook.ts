import { isRecord, jobSpecOf } from '../core/objects.js';
import { report, type MutationRule, type RuleContext } from '../core/rule.js';
import type { KubeObject } from '../core/types.js';

/** The label Kueue queues a Job by: its webhook creates such a Job suspended until the queue admits it. */
export const KUEUE_QUEUE_NAME = 'kueue.x-k8s.io/queue-name';

/** What holds this hook Job suspended, as the author would look for it: the field, or Kueue's label. */
function suspendedBy(object: KubeObject): string | undefined {
  const metadata = isRecord(object.metadata) ? object.metadata : undefined;
  const labels = isRecord(metadata?.labels) ? metadata.labels : undefined;
  const queue = labels?.[KUEUE_QUEUE_NAME];
  if (typeof queue === 'string') return `label ${KUEUE_QUEUE_NAME}=${queue} (Kueue suspends the Job until admitted)`;
  return jobSpecOf(object)?.suspend === true ? 'spec.suspend: true' : undefined;
}

/** The first words say what and who; the admission warning is cut at 120 characters. */
function consequence({ hook }: Pick<RuleContext, 'hook'>): string {
  if (hook.appliedByArgo && !hook.argoNeverApplies) {
    return hook.argoSyncPhase
      ? 'Argo CD counts this sync hook done once it is resumed, before it runs, and the sync goes on (gitops-engine health_job.go); run hooks unsuspended'
      : 'Argo CD counts this delete hook done while it is suspended, and the deletion goes on without it (argo-cd controller/hook.go); run hooks unsuspended';
  }
  return 'Helm waits for this hook until --timeout while it stays suspended, queued time included (helm waitForJob); run hooks unsuspended';
}

/**
 * A hook Job created suspended (spec.suspend: true, or Kueue's queue-name label, whose webhook suspends it until the
 * queue admits it) does not run as a hook:
 * - Argo CD (gitops-engine `pkg/health/health_job.go` `getBatchv1JobHealth`, argo-cd v2.6.0 through v3.5.1, since
 *   gitops-engine#484, 917f5a0f) takes a Job with any `Suspended` condition as complete: Suspended health while the
 *   condition is True, Healthy once the Job is resumed, because the Job controller then keeps the condition with
 *   status False ("JobResumed", batch/v1 JobStatus.conditions). A sync hook counts Suspended as running
 *   (`pkg/sync/sync_context.go` `getOperationPhase`) and Healthy as succeeded: it is done the moment it is resumed,
 *   before it has run, the sync goes on, and a HookSucceeded delete policy deletes the Job it thinks finished. A
 *   PreDelete/PostDelete hook waits only while Progressing (argo-cd v3.5.1 `controller/hook.go` `executeHooks`), so
 *   a suspended one is done at once and the deletion goes on without it.
 * - Helm waits for Complete or Failed only (helm v4.2.4 `internal/statusreaders/job_status_reader.go`
 *   `jobConditions`; v3.21.4 `pkg/kube/client.go` `waitForJob`), so while nothing resumes it the release waits until
 *   `--timeout`, and the time in Kueue's queue counts against it.
 * Warns, naming the field or label; changes nothing (resuming is someone else's decision).
 */
export const suspendedHook: MutationRule = {
  id: 'suspended-hook',
  doc: 'Warns about a hook Job created suspended (spec.suspend: true, or a Kueue kueue.x-k8s.io/queue-name label): Argo CD counts it done once resumed, before it runs; Helm waits until --timeout. Changes nothing.',
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'always',
  mutate(object, context) {
    const by = suspendedBy(object);
    if (by === undefined) return report();
    return report({ warnings: [`${by}: ${consequence(context)}`] });
  },
};
