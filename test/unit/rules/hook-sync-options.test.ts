import { describe, expect, it } from 'vitest';
import { hookSyncOptions } from '../../../src/rules/hook-sync-options.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob, hookPod } from '../../support/objects.js';

const SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';
const NEITHER = 'Hooks need neither: BeforeHookCreation re-creates them on each sync (argo-cd#24005, #13100)';
const BOTH = `sync-options Replace=true,Force=true: Argo CD deletes and re-creates this hook (replace --force), in argo-cd#24005 twice in one sync. ${NEITHER}`;
const REPLACE = `sync-options Replace=true: Argo CD replaces this hook (kubectl replace) instead of applying it; with the Application-level option hooks fail (#13100). ${NEITHER}`;
const FORCE = `sync-options Force=true: Argo CD deletes and re-creates this hook when an apply is refused (apply --force). ${NEITHER}`;

describe('hook-sync-options', () => {
  it.each([
    ['Force=true,Replace=true', [BOTH]],
    [' Replace=true , Force=true ', [BOTH]],
    ['Replace=true', [REPLACE]],
    ['Force=true', [FORCE]],
    ['Replace=true,Replace=true', [REPLACE]],
    ['ServerSideApply=true,Replace=true', [REPLACE]],
    ['Replace=false', []],
    ['replace=true', []],
    ['ServerSideApply=true', []],
    ['', []],
  ])('%j warns %j', (options, warnings) => {
    const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync', [SYNC_OPTIONS]: options });
    const before = structuredClone(job);
    expect(hookSyncOptions.mutate(job, contextFor(job, { username: ARGOCD_CONTROLLER }))).toEqual({
      mutations: [],
      warnings,
    });
    expect(job).toEqual(before);
  });

  it('reads hook Pods and Helm hooks Argo CD applies too', () => {
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'Sync', [SYNC_OPTIONS]: 'Replace=true' });
    expect(hookSyncOptions.mutate(pod, contextFor(pod)).warnings).toEqual([REPLACE]);
    const helmHook = hookJob({ 'helm.sh/hook': 'pre-upgrade', [SYNC_OPTIONS]: 'Force=true' });
    expect(hookSyncOptions.mutate(helmHook, contextFor(helmHook, { username: ARGOCD_CONTROLLER })).warnings).toEqual([
      FORCE,
    ]);
  });
});
