import { describe, expect, it } from 'vitest';
import { foreignFinalizer } from '../../../src/rules/foreign-finalizer.js';
import type { Stage } from '../../../src/core/rule.js';
import { ARGOCD_CONTROLLER, contextFor, HOOK_FINALIZER, hookJob, hookPod } from '../../support/objects.js';

const WARNING = 'argo-cd#26180: the next sync fails while the deleted hook waits on example.com/cleanup';

function warningsFor(
  annotations: Record<string, string>,
  finalizers: string[] | undefined,
  stage: Stage,
  kind: 'Job' | 'Pod' = 'Job',
): string[] {
  const object = kind === 'Job' ? hookJob(annotations) : hookPod(annotations);
  if (finalizers) object.metadata!.finalizers = [...finalizers];
  const before = structuredClone(object);
  const report = foreignFinalizer.mutate(
    object,
    contextFor(object, { username: ARGOCD_CONTROLLER, argocdVersion: '3.1.0', stage }),
  );
  expect(object).toEqual(before);
  expect(report.mutations).toEqual([]);
  return report.warnings;
}

const PRE_SYNC = { 'argocd.argoproj.io/hook': 'PreSync' };

describe('foreign-finalizer', () => {
  it.each<[string, Record<string, string>, string[] | undefined, Stage, 'Job' | 'Pod', string[]]>([
    // At admission the hook finalizer on the CREATE says the applying Argo CD adds it (and will add it again).
    [
      'a sync hook with both finalizers',
      PRE_SYNC,
      [HOOK_FINALIZER, 'example.com/cleanup'],
      'admission',
      'Job',
      [WARNING],
    ],
    ['a sync hook Pod', PRE_SYNC, ['example.com/cleanup', HOOK_FINALIZER], 'admission', 'Pod', [WARNING]],
    ['only the hook finalizer', PRE_SYNC, [HOOK_FINALIZER], 'admission', 'Job', []],
    ['no finalizers at all', PRE_SYNC, undefined, 'admission', 'Job', []],
    // A PostDelete hook is created without the hook finalizer, and never re-applied by a sync.
    [
      'a foreign finalizer without the hook finalizer',
      { 'argocd.argoproj.io/hook': 'PostDelete' },
      ['example.com/cleanup'],
      'admission',
      'Job',
      [],
    ],
    // At render time Argo CD has not added its finalizer yet: any sync hook will get it.
    ['a sync hook at render time', PRE_SYNC, ['example.com/cleanup'], 'render', 'Job', [WARNING]],
    [
      'a Helm upgrade hook at render time',
      { 'helm.sh/hook': 'pre-upgrade' },
      ['example.com/cleanup'],
      'render',
      'Job',
      [WARNING],
    ],
    [
      'a PostDelete hook at render time',
      { 'argocd.argoproj.io/hook': 'PostDelete' },
      ['example.com/cleanup'],
      'render',
      'Job',
      [],
    ],
    [
      'a Helm post-delete hook at render time',
      { 'helm.sh/hook': 'post-delete' },
      ['example.com/cleanup'],
      'render',
      'Job',
      [],
    ],
    ['a Helm test hook at render time', { 'helm.sh/hook': 'test' }, ['example.com/cleanup'], 'render', 'Job', []],
  ])('%s: warns %j', (_name, annotations, finalizers, stage, kind, warnings) => {
    expect(warningsFor(annotations, finalizers, stage, kind)).toEqual(warnings);
  });

  it('names every foreign finalizer', () => {
    expect(warningsFor(PRE_SYNC, ['a.example/x', HOOK_FINALIZER, 'b.example/y'], 'admission')).toEqual([
      'argo-cd#26180: the next sync fails while the deleted hook waits on a.example/x, b.example/y',
    ]);
  });

  it('runs for hooks Argo CD applies, on versions an advisory names it for or unknown ones', () => {
    expect(foreignFinalizer.gate).toBe('argocd');
    expect(foreignFinalizer.stages).toEqual(['admission', 'render']);
  });
});
