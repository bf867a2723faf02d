// The argo-workflows profile's judgement, pure: one case each way for every condition (src/sweep/workflow-pod.ts).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import { checkWorkflowPod, qualifyWorkflowPod, workflowOwner } from '../../../src/sweep/workflow-pod.js';
import {
  argoWorkflow,
  argoWorkflowPod,
  NODE_ID,
  WORKFLOW_FINALIZER,
  WORKFLOW_UID,
  type Mutable,
} from '../../support/argo-workflows.js';

const NOW = new Date('2026-11-22T12:00:00Z');
const GRACE = 600;
const secondsAgo = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();

/** A finished workflow pod deleting for 15 minutes, with `change` applied. */
function pod(change: (pod: Mutable) => void = () => {}): KubeObject {
  const object = argoWorkflowPod({ deletionTimestamp: secondsAgo(900) });
  change(object);
  return object;
}

function workflow(change: (workflow: Mutable) => void = () => {}): KubeObject {
  const object = argoWorkflow();
  change(object);
  return object;
}

const POD_FACTS = [
  'Argo Workflows pod of Workflow hello-world-x7k2p',
  'Pod Succeeded',
  'deleting for 15m0s, at least 10m0s',
];
const STILL_RUNNING = 'Workflow hello-world-x7k2p is not completed and';

describe('qualifyWorkflowPod: what the pod itself says', () => {
  it.each<[string, KubeObject, string]>([
    ['not being deleted', pod((p) => delete p.metadata.deletionTimestamp), 'not being deleted'],
    ['without the finalizer', pod((p) => (p.metadata.finalizers = ['example.com/keep'])), `no ${WORKFLOW_FINALIZER}`],
    [
      'owned by a Job, not a Workflow',
      pod(
        (p) =>
          (p.metadata.ownerReferences = [
            { apiVersion: 'batch/v1', kind: 'Job', name: 'x', uid: 'u', controller: true },
          ]),
      ),
      'not a workflow pod: no controller ownerReference of kind Workflow',
    ],
    [
      'a Workflow owner that is not its controller',
      pod((p) => (p.metadata.ownerReferences[0].controller = false)),
      'not a workflow pod: no controller ownerReference of kind Workflow',
    ],
    [
      'still Running',
      pod((p) => (p.status.phase = 'Running')),
      'Pod Running, not finished: Argo Workflows still needs its result',
    ],
    [
      'with no phase',
      pod((p) => delete p.status.phase),
      'Pod with no phase, not finished: Argo Workflows still needs its result',
    ],
    [
      'deleting for less than the grace period',
      pod((p) => (p.metadata.deletionTimestamp = secondsAgo(GRACE - 1))),
      "deleting for 9m59s, under 10m0s: Argo Workflows removes it itself 2 minutes after the pod's last change",
    ],
  ])('%s: left alone', (_name, object, reason) => {
    // Whatever its Workflow says: here, gone, the strongest case for removal.
    expect(qualifyWorkflowPod(object, null, NOW, GRACE)).toMatchObject({ qualifies: false, reason });
    expect(checkWorkflowPod(object, NOW, GRACE).needsWorkflow).toBe(false);
  });

  it('asks for the Workflow only of a finished pod deleting for the grace period, Failed as well as Succeeded', () => {
    const failedAtGrace = pod((p) => {
      p.status.phase = 'Failed';
      p.metadata.deletionTimestamp = secondsAgo(GRACE);
    });
    expect(checkWorkflowPod(failedAtGrace, NOW, GRACE)).toEqual({
      needsWorkflow: true,
      owner: { name: 'hello-world-x7k2p', uid: WORKFLOW_UID },
      reasons: ['Argo Workflows pod of Workflow hello-world-x7k2p', 'Pod Failed', 'deleting for 10m0s, at least 10m0s'],
      ageSeconds: GRACE,
    });
  });
});

describe('qualifyWorkflowPod: what its Workflow says', () => {
  it.each<[string, KubeObject | null, string]>([
    ['gone', null, 'Workflow hello-world-x7k2p is gone'],
    [
      'replaced by another of the same name',
      workflow((w) => (w.metadata.uid = 'another-uid')),
      `Workflow hello-world-x7k2p has another UID (another-uid, the pod's is ${WORKFLOW_UID}): the pod's own Workflow is gone`,
    ],
    [
      'being deleted',
      workflow((w) => (w.metadata.deletionTimestamp = secondsAgo(60))),
      'Workflow hello-world-x7k2p is being deleted',
    ],
    [
      'labelled completed',
      workflow((w) => (w.metadata.labels['workflows.argoproj.io/completed'] = 'true')),
      'Workflow hello-world-x7k2p is completed (workflows.argoproj.io/completed=true)',
    ],
    ...['Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'].map<[string, KubeObject, string]>((phase) => [
      `holding the pod's node ${phase}`,
      workflow((w) => (w.status.nodes[NODE_ID].phase = phase)),
      `node ${NODE_ID} of Workflow hello-world-x7k2p is ${phase}`,
    ]),
    [
      "holding the pod's node Succeeded with its result synced (v3.7.1+)",
      workflow((w) => Object.assign(w.status.nodes[NODE_ID], { phase: 'Succeeded', taskResultSynced: true })),
      `node ${NODE_ID} of Workflow hello-world-x7k2p is Succeeded`,
    ],
  ])('%s: qualifies', (_name, found, why) => {
    expect(qualifyWorkflowPod(pod(), found, NOW, GRACE)).toEqual({
      qualifies: true,
      reasons: [...POD_FACTS, why],
      ageSeconds: 900,
    });
  });

  it.each<[string, KubeObject, KubeObject, string]>([
    [
      "running the pod's node",
      pod(),
      workflow(),
      `${STILL_RUNNING} node ${NODE_ID} is Running: its result is not recorded yet`,
    ],
    [
      'with the same UID as the pod says, still running it',
      pod(),
      workflow((w) => (w.metadata.uid = WORKFLOW_UID)),
      `${STILL_RUNNING} node ${NODE_ID} is Running: its result is not recorded yet`,
    ],
    [
      'labelled completed=false',
      pod(),
      workflow((w) => (w.metadata.labels['workflows.argoproj.io/completed'] = 'false')),
      `${STILL_RUNNING} node ${NODE_ID} is Running: its result is not recorded yet`,
    ],
    [
      "holding the pod's node Pending",
      pod(),
      workflow((w) => (w.status.nodes[NODE_ID].phase = 'Pending')),
      `${STILL_RUNNING} node ${NODE_ID} is Pending: its result is not recorded yet`,
    ],
    [
      "holding the pod's node Succeeded, its result not synced yet (v3.7.1+)",
      pod(),
      workflow((w) => Object.assign(w.status.nodes[NODE_ID], { phase: 'Succeeded', taskResultSynced: false })),
      `${STILL_RUNNING} node ${NODE_ID} is Succeeded but its result is not synced yet (taskResultSynced: false)`,
    ],
    [
      "without the pod's node",
      pod(),
      workflow((w) => delete w.status.nodes[NODE_ID]),
      `${STILL_RUNNING} node ${NODE_ID} is not in its status`,
    ],
    [
      'with its node status offloaded to a database',
      pod(),
      workflow((w) => {
        delete w.status.nodes;
        w.status.offloadNodeStatusVersion = 'fnv:784912';
      }),
      `${STILL_RUNNING} its node status is offloaded to a database: node ${NODE_ID} cannot be read`,
    ],
    [
      'of a pod without a node-id annotation',
      pod((p) => delete p.metadata.annotations['workflows.argoproj.io/node-id']),
      workflow((w) => (w.status.nodes[NODE_ID].phase = 'Succeeded')),
      `${STILL_RUNNING} the pod has no workflows.argoproj.io/node-id: its result may not be recorded`,
    ],
  ])('%s: left alone', (_name, object, found, reason) => {
    expect(qualifyWorkflowPod(object, found, NOW, GRACE)).toEqual({ qualifies: false, reason, ageSeconds: 900 });
  });

  it('reads no UID mismatch into a pod whose ownerReference has no uid', () => {
    const withoutUid = pod((p) => delete p.metadata.ownerReferences[0].uid);
    expect(workflowOwner(withoutUid)).toEqual({ name: 'hello-world-x7k2p', uid: undefined });
    expect(
      qualifyWorkflowPod(
        withoutUid,
        workflow((w) => (w.metadata.uid = 'another-uid')),
        NOW,
        GRACE,
      ),
    ).toMatchObject({
      qualifies: false,
    });
  });
});
