import { describe, expect, it } from 'vitest';
import { immutableUpdate } from '../../../src/rules/immutable-update.js';
import type { JobSpec, KubeObject } from '../../../src/core/types.js';
import { ARGOCD_CONTROLLER, contextFor, HOOK_FINALIZER, hookJob } from '../../support/objects.js';

function withNewImage(job: KubeObject): KubeObject {
  const changed = structuredClone(job);
  (changed.spec as JobSpec).template!.spec!.containers![0]!.image = 'alpine:3.21';
  return changed;
}

function judge(oldJob: KubeObject, newJob: KubeObject, argocdVersion?: string) {
  return immutableUpdate.judge(oldJob, newJob, contextFor(newJob, { username: ARGOCD_CONTROLLER, argocdVersion }));
}

describe('immutable-update', () => {
  it.each([
    [
      'only finalizers change',
      (job: KubeObject) => ({ ...structuredClone(job), metadata: { ...job.metadata, finalizers: [] } }),
    ],
    [
      'only labels change',
      (job: KubeObject) => ({ ...structuredClone(job), metadata: { ...job.metadata, labels: { a: 'b' } } }),
    ],
    ['only status changes', (job: KubeObject) => ({ ...structuredClone(job), status: { succeeded: 1 } })],
    ['nothing changes', (job: KubeObject) => structuredClone(job)],
  ])('allows an UPDATE where %s (argo-cd#24187)', (_name, change) => {
    const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    job.metadata!.finalizers = [HOOK_FINALIZER];
    job.metadata!.deletionTimestamp = '2026-11-22T08:00:00Z';
    expect(judge(job, change(job), '2.14.3')).toBeUndefined();
  });

  it('explains a stuck hook finalizer with the exact patch that removes only it', () => {
    const oldJob = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    oldJob.metadata!.finalizers = ['example.com/keep', HOOK_FINALIZER];
    oldJob.metadata!.deletionTimestamp = '2026-11-22T08:00:00Z';
    const finding = judge(oldJob, withNewImage(oldJob), '2.14.3');
    expect(finding).toEqual({
      rule: 'immutable-update',
      action: 'deny',
      advisory: 'argocd-hook-finalizer-partial',
      message:
        'Job apps/migrate: spec.template is immutable and this update changes it, so the API server would reject it ("field is immutable"). ' +
        `The old Job is being deleted but still holds ${HOOK_FINALIZER}, which nothing will remove (Argo CD 2.14.3, advisory argocd-hook-finalizer-partial). ` +
        `Fix: kubectl patch job migrate -n apps --type json -p '[{"op":"test","path":"/metadata/finalizers/1","value":"${HOOK_FINALIZER}"},{"op":"remove","path":"/metadata/finalizers/1"}]' and sync again.`,
    });
  });

  it('explains a missing BeforeHookCreation', () => {
    const oldJob = hookJob({
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
    });
    const finding = judge(oldJob, withNewImage(oldJob), '3.1.0');
    expect(finding?.message).toContain(
      'Its delete policy lacks before-hook-creation, so the old Job is not deleted before the new one is applied (Argo CD 3.1.0). ' +
        'Fix: add before-hook-creation (Helm) or BeforeHookCreation (Argo CD) to the delete policy, and now: kubectl delete job migrate -n apps.',
    );
  });

  it.each([
    [
      'Helm spelling',
      { 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': 'hook-succeeded,before-hook-creation' },
    ],
    ['no policy (the default is before-hook-creation)', { 'helm.sh/hook': 'pre-upgrade' }],
  ])('recognises before-hook-creation in %s', (_name, annotations) => {
    const oldJob = hookJob(annotations);
    expect(judge(oldJob, withNewImage(oldJob))?.message).toContain(
      'The old Job was not deleted before this update. Fix: kubectl delete job migrate -n apps',
    );
  });

  // Read as the tools read it: Argo CD combines its own policy with Helm's; Helm gives no default to an empty one.
  it.each([
    [
      "Argo CD's HookSucceeded with Helm's before-hook-creation",
      {
        'argocd.argoproj.io/hook': 'PreSync',
        'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
        'helm.sh/hook-delete-policy': 'before-hook-creation',
      },
      ARGOCD_CONTROLLER,
      false,
    ],
    [
      'an empty Helm policy, under Helm',
      { 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': '' },
      'kubernetes-admin',
      true,
    ],
    [
      'an empty Helm policy, under Argo CD',
      { 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': '' },
      ARGOCD_CONTROLLER,
      false,
    ],
  ])('reads the delete policy as the tool does: %s', (_name, annotations, username, lacksBeforeHookCreation) => {
    const oldJob = hookJob(annotations);
    const newJob = withNewImage(oldJob);
    const finding = immutableUpdate.judge(oldJob, newJob, contextFor(newJob, { username }));
    expect(finding?.message.includes('Its delete policy lacks before-hook-creation')).toBe(lacksBeforeHookCreation);
  });

  it('leaves suspended Jobs to the API server (some template fields are mutable there)', () => {
    const oldJob = hookJob(undefined, { suspend: true });
    expect(judge(oldJob, withNewImage(oldJob))).toBeUndefined();
  });
});
