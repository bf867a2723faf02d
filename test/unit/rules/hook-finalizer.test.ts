import { describe, expect, it } from 'vitest';
import { hookFinalizer } from '../../../src/rules/hook-finalizer.js';
import { contextFor, HOOK_FINALIZER, hookJob } from '../../support/objects.js';

describe('hook-finalizer', () => {
  it.each([
    [[HOOK_FINALIZER], undefined],
    [['example.com/keep', HOOK_FINALIZER], ['example.com/keep']],
    [[HOOK_FINALIZER, 'example.com/keep', HOOK_FINALIZER], ['example.com/keep']],
    [['example.com/keep'], ['example.com/keep']],
  ])('finalizers %j become %j', (before, after) => {
    const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    job.metadata!.finalizers = [...before];
    const report = hookFinalizer.mutate(job, contextFor(job, { argocdVersion: '2.14.3' }));
    expect(job.metadata?.finalizers).toEqual(after);
    expect(report.mutations).toEqual(
      before.includes(HOOK_FINALIZER)
        ? [
            `removed finalizer ${HOOK_FINALIZER}: this Argo CD adds it by mistake, and a hook Job it keeps turns the next sync into "field is immutable"`,
          ]
        : [],
    );
  });

  it('runs only when a known Argo CD version is affected', () => {
    expect(hookFinalizer.gate).toBe('argocd-known');
  });
});
