// The ValidatingAdmissionPolicy that leaves the sweep's token nothing but removing finalizers
// (charts/hookguard/templates/sweep-rbac.yaml), as helm template renders it in the release namespace hookguard, evaluated the way the API server
// evaluates it: the match conditions first (a policy whose condition is false does not apply), then every
// validation, each a CEL expression over object, oldObject and request, run here by @bufbuild/cel; with
// failurePolicy Fail an expression that cannot be evaluated denies too. The allowed changes are made with the
// sweep's own removalPatch, so the test fails if the sweep starts sending something the policy refuses.
import { beforeAll, describe, expect, it } from 'vitest';
import { applyPatch } from '../../src/core/json-patch.js';
import { removalPatch } from '../../src/sweep/sweep.js';
import { evaluateCel, find, renderChart, type Manifest } from '../support/manifests.js';

const SWEEP = 'system:serviceaccount:hookguard:hookguard-sweep';
const ARGOCD_HOOK = 'argocd.argoproj.io/hook-finalizer';
const WORKFLOW_STATUS = 'workflows.argoproj.io/status';
const KEEP = 'example.com/keep';

let policy: Manifest;
let binding: Manifest;
beforeAll(async () => {
  const objects = await renderChart({ namespace: 'hookguard' });
  policy = find(objects, 'ValidatingAdmissionPolicy', 'hookguard-sweep-finalizers-only');
  binding = find(objects, 'ValidatingAdmissionPolicyBinding', 'hookguard-sweep-finalizers-only');
}, 60_000);

type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

/** The policy's verdict: undefined when it allows, else the message of the first validation that fails. */
function verdict(operation: Operation, username: string, oldObject: unknown, object: unknown): string | undefined {
  const variables = { object, oldObject, request: { operation, userInfo: { username } } };
  const holds = (expression: string) => {
    try {
      return evaluateCel(expression, variables) === true;
    } catch {
      return false; // failurePolicy: Fail
    }
  };
  const conditions = policy.spec.matchConditions as Array<{ expression: string }>;
  if (!conditions.every((condition) => holds(condition.expression))) return undefined;
  const validations = policy.spec.validations as Array<{ expression: string; message: string }>;
  return validations.find((validation) => !holds(validation.expression))?.message;
}

const DELETING = '2026-11-24T00:00:00Z';

function job(finalizers: string[], deleting = true): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'migrate',
      namespace: 'apps',
      uid: 'u-1',
      resourceVersion: '41',
      labels: { app: 'db' },
      annotations: { 'argocd.argoproj.io/hook': 'PreSync' },
      finalizers,
      ...(deleting ? { deletionTimestamp: DELETING } : {}),
    },
    spec: {
      backoffLimit: 3,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'migrate', image: 'db:1.2' }] } },
    },
  };
}

function workflowPod(finalizers: string[]): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'hello-x7k2p-main',
      namespace: 'wf',
      uid: 'u-2',
      resourceVersion: '77',
      labels: { 'workflows.argoproj.io/workflow': 'hello-x7k2p', 'workflows.argoproj.io/completed': 'true' },
      ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow', name: 'hello-x7k2p', uid: 'w-1' }],
      finalizers,
      deletionTimestamp: DELETING,
    },
    spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'argoproj/argosay:v2' }] },
  };
}

/** What the sweep sends: its own patch, applied as the API server merges a PATCH before admission (an UPDATE). */
function swept(object: Manifest, finalizer: string): Manifest {
  return applyPatch(structuredClone(object), removalPatch(object.metadata.finalizers, finalizer), true, false)
    .newDocument;
}

function changed(object: Manifest, edit: (copy: Manifest) => void): Manifest {
  const copy = structuredClone(object);
  edit(copy);
  return copy;
}

describe('the sweep admission policy (CEL run by @bufbuild/cel)', () => {
  it('is bound with Deny and covers Jobs and Pods for every write', () => {
    expect(binding.spec).toEqual({ policyName: 'hookguard-sweep-finalizers-only', validationActions: ['Deny'] });
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['pods'] },
      { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['jobs'] },
    ]);
  });

  const hookJob = job([KEEP, ARGOCD_HOOK]);
  const pod = workflowPod([WORKFLOW_STATUS]);
  const podWithBoth = workflowPod([ARGOCD_HOOK, WORKFLOW_STATUS]);

  it.each<[string, Operation, string, Manifest | null, Manifest | null, string | undefined]>([
    [
      'argocd-hook: the sweep removes the hook finalizer',
      'UPDATE',
      SWEEP,
      hookJob,
      swept(hookJob, ARGOCD_HOOK),
      undefined,
    ],
    [
      'argo-workflows: the sweep removes the pod finalizer',
      'UPDATE',
      SWEEP,
      pod,
      swept(pod, WORKFLOW_STATUS),
      undefined,
    ],
    [
      'both profiles, one after the other',
      'UPDATE',
      SWEEP,
      swept(podWithBoth, ARGOCD_HOOK),
      swept(swept(podWithBoth, ARGOCD_HOOK), WORKFLOW_STATUS),
      undefined,
    ],
    [
      'a removal while the API server rewrites resourceVersion and managedFields',
      'UPDATE',
      SWEEP,
      hookJob,
      changed(swept(hookJob, ARGOCD_HOOK), (copy) => {
        copy.metadata.resourceVersion = '42';
        copy.metadata.managedFields = [{ manager: 'hookguard', operation: 'Update' }];
      }),
      undefined,
    ],
    [
      'an image swap',
      'UPDATE',
      SWEEP,
      pod,
      changed(swept(pod, WORKFLOW_STATUS), (copy) => (copy.spec.containers[0].image = 'evil:latest')),
      'hookguard sweep may not change spec',
    ],
    [
      'a new label',
      'UPDATE',
      SWEEP,
      hookJob,
      changed(swept(hookJob, ARGOCD_HOOK), (copy) => (copy.metadata.labels.owned = 'yes')),
      'hookguard sweep may not change labels',
    ],
    [
      'a changed annotation',
      'UPDATE',
      SWEEP,
      hookJob,
      changed(hookJob, (copy) => (copy.metadata.annotations['argocd.argoproj.io/hook'] = 'PostSync')),
      'hookguard sweep may not change annotations',
    ],
    [
      'a changed owner',
      'UPDATE',
      SWEEP,
      pod,
      changed(swept(pod, WORKFLOW_STATUS), (copy) => (copy.metadata.ownerReferences = [])),
      'hookguard sweep may not change ownerReferences',
    ],
    [
      'an added finalizer',
      'UPDATE',
      SWEEP,
      hookJob,
      changed(hookJob, (copy) => copy.metadata.finalizers.push('example.com/new')),
      'hookguard sweep may only remove finalizers',
    ],
    ['an update that removes nothing', 'UPDATE', SWEEP, hookJob, hookJob, 'hookguard sweep may only remove finalizers'],
    [
      'the removal of a finalizer no profile handles',
      'UPDATE',
      SWEEP,
      hookJob,
      swept(hookJob, KEEP),
      'hookguard sweep may only remove the finalizers its profiles handle',
    ],
    [
      'a removal from an object that is not being deleted',
      'UPDATE',
      SWEEP,
      job([ARGOCD_HOOK], false),
      swept(job([ARGOCD_HOOK], false), ARGOCD_HOOK),
      'hookguard sweep may only change objects that are being deleted',
    ],
    ['a delete', 'DELETE', SWEEP, hookJob, null, 'hookguard sweep may only update Jobs and Pods'],
    ['a create', 'CREATE', SWEEP, null, hookJob, 'hookguard sweep may only update Jobs and Pods'],
    [
      'anyone else: an image swap by another account is not this policy’s business',
      'UPDATE',
      'system:serviceaccount:argocd:argocd-application-controller',
      pod,
      changed(pod, (copy) => (copy.spec.containers[0].image = 'other:1')),
      undefined,
    ],
  ])('%s', (_name, operation, username, oldObject, object, refusal) => {
    expect(verdict(operation, username, oldObject, object)).toBe(refusal);
  });
});

describe('the policy in another release namespace', () => {
  it("names the sweep's identity in that namespace, and no other namespace's", async () => {
    const moved = find(
      await renderChart({ namespace: 'platform-tools' }),
      'ValidatingAdmissionPolicy',
      'hookguard-sweep-finalizers-only',
    );
    const [condition] = moved.spec.matchConditions as Array<{ expression: string }>;
    const matches = (username: string) =>
      evaluateCel(condition!.expression, { request: { operation: 'UPDATE', userInfo: { username } } });
    expect(matches('system:serviceaccount:platform-tools:hookguard-sweep')).toBe(true);
    expect(matches(SWEEP)).toBe(false);
    expect(moved.spec.validations).toEqual(policy.spec.validations);
  });
});
