// Pure: the `argo-workflows` profile's judgement. May Argo Workflows' pod finalizer `workflows.argoproj.io/status`
// go from a workflow pod? The finalizer keeps a finished pod until the controller has recorded its result; removed
// before that, the node turns into `Error: pod deleted` (argo-workflows#17024). So it goes only when the result no
// longer matters or is recorded, and the controller has had ample time to remove it itself:
// - the pod is terminal (Succeeded or Failed) and has been deleting for at least the grace period, longer than the
//   2 minutes after which the controller removes it from a deleting pod itself (v3.6.5+:
//   workflow/controller/pod/controller.go commonPodEvent, `minimumDelay = 2 * time.Minute`);
// - and its Workflow (the pod's controller ownerReference of kind Workflow, as the controller's podOrphaned reads it)
//   is gone, being deleted, or has another UID (a new Workflow of the same name): the pod is orphaned; or it is
//   labelled `workflows.argoproj.io/completed=true` (set once the workflow finished: operator.go markWorkflowPhase);
//   or the pod's node (`workflows.argoproj.io/node-id`) is in a final phase (Succeeded, Failed, Error, Skipped,
//   Omitted) with `taskResultSynced` not false (v3.7.1+ NodeStatus.Fulfilled: the node's outputs are in).
// Sources: argoproj/argo-workflows v4.1.2 (and v3.6.5, v3.7.0, v3.7.1 for when each behaviour began):
// workflow/common/common.go, workflow/controller/workflowpod.go, workflow/controller/pod/controller.go,
// pkg/apis/workflow/v1alpha1/workflow_types.go.
import {
  ARGO_WORKFLOWS_COMPLETED,
  ARGO_WORKFLOWS_NODE_ID,
  ARGO_WORKFLOWS_STATUS_FINALIZER,
} from '../core/annotations.js';
import { annotation, finalizersOf, isRecord, metadataOf } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import { deletingForSeconds, finishedAs, formatAge, type Qualification } from './qualify.js';

/** The Workflow a pod belongs to, by its controller ownerReference. */
export interface WorkflowOwner {
  name: string;
  uid: string | undefined;
}

/** What the pod alone says: left alone, or worth reading its Workflow for. */
export type WorkflowPodCheck =
  | { needsWorkflow: false; verdict: Qualification }
  | { needsWorkflow: true; owner: WorkflowOwner; reasons: string[]; ageSeconds: number };

/** NodePhase.Fulfilled: Completed (Succeeded, Failed, Error), Skipped or Omitted. */
const FINAL_NODE_PHASES = ['Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'];

export function workflowOwner(pod: KubeObject): WorkflowOwner | undefined {
  const references = metadataOf(pod)?.ownerReferences;
  const owner = (Array.isArray(references) ? references.filter(isRecord) : []).find(
    (reference) =>
      reference.controller === true &&
      reference.kind === 'Workflow' &&
      typeof reference.apiVersion === 'string' &&
      reference.apiVersion.startsWith('argoproj.io/') &&
      typeof reference.name === 'string',
  );
  if (owner === undefined) return undefined;
  return { name: owner.name as string, uid: typeof owner.uid === 'string' ? owner.uid : undefined };
}

/** Everything that can be told from the pod itself; the Workflow is read only for a pod that passes. */
export function checkWorkflowPod(pod: KubeObject, now: Date, graceSeconds: number): WorkflowPodCheck {
  const leave = (reason: string, ageSeconds?: number): WorkflowPodCheck => ({
    needsWorkflow: false,
    verdict: { qualifies: false, reason, ...(ageSeconds !== undefined ? { ageSeconds } : {}) },
  });
  const ageSeconds = deletingForSeconds(pod, now);
  if (ageSeconds === undefined) return leave('not being deleted');
  if (!finalizersOf(pod).includes(ARGO_WORKFLOWS_STATUS_FINALIZER))
    return leave(`no ${ARGO_WORKFLOWS_STATUS_FINALIZER}`, ageSeconds);
  const owner = workflowOwner(pod);
  if (owner === undefined)
    return leave('not a workflow pod: no controller ownerReference of kind Workflow', ageSeconds);
  const finished = finishedAs('Pod', pod);
  if (finished === undefined) {
    const phase = isRecord(pod.status) && typeof pod.status.phase === 'string' ? pod.status.phase : 'with no phase';
    return leave(`Pod ${phase}, not finished: Argo Workflows still needs its result`, ageSeconds);
  }
  const deleting = `deleting for ${formatAge(ageSeconds)}`;
  if (ageSeconds < graceSeconds)
    return leave(
      `${deleting}, under ${formatAge(graceSeconds)}: Argo Workflows removes it itself 2 minutes after the pod's last change`,
      ageSeconds,
    );
  return {
    needsWorkflow: true,
    owner,
    reasons: [
      `Argo Workflows pod of Workflow ${owner.name}`,
      finished,
      `${deleting}, at least ${formatAge(graceSeconds)}`,
    ],
    ageSeconds,
  };
}

/** Why the pod's result no longer matters or is recorded, or (leave) why it may still be needed. */
function workflowVerdict(
  pod: KubeObject,
  owner: WorkflowOwner,
  workflow: KubeObject | null,
): { done: string } | { leave: string } {
  const name = `Workflow ${owner.name}`;
  if (workflow === null) return { done: `${name} is gone` };
  const metadata = metadataOf(workflow);
  const uid = typeof metadata?.uid === 'string' ? metadata.uid : undefined;
  if (owner.uid !== undefined && uid !== undefined && uid !== owner.uid)
    return { done: `${name} has another UID (${uid}, the pod's is ${owner.uid}): the pod's own Workflow is gone` };
  if (metadata?.deletionTimestamp !== undefined) return { done: `${name} is being deleted` };
  if (isRecord(metadata?.labels) && metadata.labels[ARGO_WORKFLOWS_COMPLETED] === 'true')
    return { done: `${name} is completed (${ARGO_WORKFLOWS_COMPLETED}=true)` };

  const nodeId = annotation(pod, ARGO_WORKFLOWS_NODE_ID);
  const running = `${name} is not completed and`;
  if (nodeId === undefined)
    return { leave: `${running} the pod has no ${ARGO_WORKFLOWS_NODE_ID}: its result may not be recorded` };
  const status = isRecord(workflow.status) ? workflow.status : {};
  const nodes = isRecord(status.nodes) ? status.nodes : undefined;
  if (nodes === undefined && typeof status.offloadNodeStatusVersion === 'string')
    return { leave: `${running} its node status is offloaded to a database: node ${nodeId} cannot be read` };
  const node = nodes?.[nodeId];
  if (!isRecord(node)) return { leave: `${running} node ${nodeId} is not in its status` };
  const phase = typeof node.phase === 'string' ? node.phase : 'without a phase';
  if (!FINAL_NODE_PHASES.includes(phase))
    return { leave: `${running} node ${nodeId} is ${phase}: its result is not recorded yet` };
  // NodeStatus.Fulfilled (v3.7.1+): no phase counts while taskResultSynced is false.
  if (node.taskResultSynced === false)
    return {
      leave: `${running} node ${nodeId} is ${phase} but its result is not synced yet (taskResultSynced: false)`,
    };
  return { done: `node ${nodeId} of ${name} is ${phase}` };
}

/**
 * The `argo-workflows` profile: a workflow pod whose `workflows.argoproj.io/status` may go. `workflow` is the pod's
 * Workflow as read after checkWorkflowPod asked for it, null when it is gone (404).
 */
export function qualifyWorkflowPod(
  pod: KubeObject,
  workflow: KubeObject | null,
  now: Date,
  graceSeconds: number,
): Qualification {
  const check = checkWorkflowPod(pod, now, graceSeconds);
  if (!check.needsWorkflow) return check.verdict;
  const verdict = workflowVerdict(pod, check.owner, workflow);
  return 'done' in verdict
    ? { qualifies: true, reasons: [...check.reasons, verdict.done], ageSeconds: check.ageSeconds }
    : { qualifies: false, reason: verdict.leave, ageSeconds: check.ageSeconds };
}
