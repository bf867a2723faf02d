import { describe, expect, it } from 'vitest';
import { nativeSidecar } from '../../../src/rules/native-sidecar.js';
import type { Stage } from '../../../src/core/rule.js';
import type { Container } from '../../../src/core/types.js';
import { ARGOCD_CONTROLLER, contextFor, HOOK_FINALIZER, hookJob } from '../../support/objects.js';

const WARNING = "argo-cd#27407: Argo CD's finalizer removal fails here; hookguard sweep frees it";
const SIDECAR: Container = { name: 'proxy', image: 'envoy:1.31', restartPolicy: 'Always' };
const PLAIN_INIT: Container = { name: 'wait', image: 'busybox:1.37.0', command: ['true'] };

function warningsFor(
  annotations: Record<string, string>,
  initContainers: unknown,
  finalizers: string[] | undefined,
  stage: Stage,
): string[] {
  const job = hookJob(annotations);
  (job.spec as { template: { spec: Record<string, unknown> } }).template.spec.initContainers = initContainers;
  if (finalizers) job.metadata!.finalizers = finalizers;
  const before = structuredClone(job);
  const report = nativeSidecar.mutate(
    job,
    contextFor(job, { username: ARGOCD_CONTROLLER, argocdVersion: '3.1.0', stage }),
  );
  expect(job).toEqual(before);
  expect(report.mutations).toEqual([]);
  return report.warnings;
}

const PRE_SYNC = { 'argocd.argoproj.io/hook': 'PreSync' };

describe('native-sidecar', () => {
  it.each<[string, Record<string, string>, unknown, string[] | undefined, Stage, string[]]>([
    [
      'a sync hook with a native sidecar and the hook finalizer',
      PRE_SYNC,
      [PLAIN_INIT, SIDECAR],
      [HOOK_FINALIZER],
      'admission',
      [WARNING],
    ],
    ['a plain init container only', PRE_SYNC, [PLAIN_INIT], [HOOK_FINALIZER], 'admission', []],
    [
      'an init container with restartPolicy OnFailure',
      PRE_SYNC,
      [{ ...SIDECAR, restartPolicy: 'OnFailure' }],
      [HOOK_FINALIZER],
      'admission',
      [],
    ],
    ['initContainers that is not a list', PRE_SYNC, { proxy: SIDECAR }, [HOOK_FINALIZER], 'admission', []],
    // Without the finalizer on the CREATE (a PostDelete hook, or one hookguard already freed on 2.14.3) Argo CD has
    // nothing to remove by Update.
    ['a native sidecar without the hook finalizer', PRE_SYNC, [SIDECAR], undefined, 'admission', []],
    ['a sync hook at render time', PRE_SYNC, [SIDECAR], undefined, 'render', [WARNING]],
    [
      'a Helm install hook at render time',
      { 'helm.sh/hook': 'post-install' },
      [SIDECAR],
      undefined,
      'render',
      [WARNING],
    ],
    ['a PreDelete hook at render time', { 'argocd.argoproj.io/hook': 'PreDelete' }, [SIDECAR], undefined, 'render', []],
  ])('%s: warns %j', (_name, annotations, initContainers, finalizers, stage, warnings) => {
    expect(warningsFor(annotations, initContainers, finalizers, stage)).toEqual(warnings);
  });

  it('looks at Jobs only, for hooks Argo CD applies on versions an advisory names it for or unknown ones', () => {
    expect(nativeSidecar.kinds).toEqual(['Job']);
    expect(nativeSidecar.gate).toBe('argocd');
  });
});
