import { describe, expect, it } from 'vitest';
import { removalPatch } from '../../../src/sweep/sweep.js';

const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';

describe('removalPatch', () => {
  it('builds the guarded patch from the exact list it judged', () => {
    expect(removalPatch(['a/x', HOOK_FINALIZER, 'b/y'], HOOK_FINALIZER)).toEqual([
      { op: 'test', path: '/metadata/finalizers', value: ['a/x', HOOK_FINALIZER, 'b/y'] },
      { op: 'replace', path: '/metadata/finalizers', value: ['a/x', 'b/y'] },
    ]);
  });
});
