import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { ruleContextFor } from '../../../src/core/context.js';
import { decide } from '../../../src/core/decide.js';
import { readHook } from '../../../src/core/hook.js';
import type { KubeObject } from '../../../src/core/types.js';
import { hookTtl } from '../../../src/rules/hook-ttl.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob, hookPod } from '../../support/objects.js';

const HELM = 'helm.sh/hook-delete-policy';
const ARGO = 'argocd.argoproj.io/hook-delete-policy';

function advice(key: string, value: string, file = ''): string {
  return (
    'set spec.ttlSecondsAfterFinished to 86400: no delete policy removes this Job once it succeeds. ' +
    `Fix in its chart: add ${key}: ${value} to the template's metadata.annotations${file}`
  );
}

describe('hook-ttl', () => {
  it.each([
    [
      'a post-delete Job with no policy (left behind by helm uninstall)',
      { 'helm.sh/hook': 'post-delete' },
      undefined,
      advice(HELM, 'before-hook-creation,hook-succeeded'),
    ],
    [
      'a Helm policy without hook-succeeded keeps its items',
      { 'helm.sh/hook': 'pre-install', [HELM]: 'hook-failed' },
      undefined,
      advice(HELM, 'hook-failed,hook-succeeded'),
    ],
    [
      'an empty Helm policy (Helm then deletes nothing)',
      { 'helm.sh/hook': 'pre-install', [HELM]: '' },
      undefined,
      advice(HELM, 'before-hook-creation,hook-succeeded'),
    ],
    [
      "Argo CD's spelling in a Helm hook is not read by Helm",
      { 'helm.sh/hook': 'pre-install', [ARGO]: 'HookSucceeded' },
      undefined,
      advice(HELM, 'before-hook-creation,hook-succeeded'),
    ],
    [
      'an Argo CD hook with no policy',
      { 'argocd.argoproj.io/hook': 'PostDelete' },
      ARGOCD_CONTROLLER,
      advice(ARGO, 'BeforeHookCreation,HookSucceeded'),
    ],
    [
      'an Argo CD policy without HookSucceeded',
      { 'argocd.argoproj.io/hook': 'PreSync', [ARGO]: 'BeforeHookCreation' },
      ARGOCD_CONTROLLER,
      advice(ARGO, 'BeforeHookCreation,HookSucceeded'),
    ],
    [
      "Argo CD matches its values exactly: 'hooksucceeded' is none",
      { 'argocd.argoproj.io/hook': 'PreSync', [ARGO]: 'hooksucceeded' },
      ARGOCD_CONTROLLER,
      advice(ARGO, 'BeforeHookCreation,HookSucceeded'),
    ],
  ])('gives a TTL to %s', (_name, annotations, username, message) => {
    const job = hookJob(annotations);
    const report = hookTtl.mutate(job, contextFor(job, { username }));
    expect(job.spec?.ttlSecondsAfterFinished).toBe(86400);
    expect(job.metadata?.annotations).toEqual(annotations);
    expect(report).toEqual({ mutations: [message], warnings: [] });
  });

  it.each([
    [
      'Helm hook-succeeded, any case',
      { 'helm.sh/hook': 'post-delete', [HELM]: 'before-hook-creation, Hook-Succeeded' },
      undefined,
    ],
    ['Argo CD HookSucceeded', { 'argocd.argoproj.io/hook': 'PostSync', [ARGO]: 'HookSucceeded' }, ARGOCD_CONTROLLER],
    [
      "a Helm hook Argo CD applies, with Helm's hook-succeeded",
      { 'helm.sh/hook': 'post-install', [HELM]: 'hook-succeeded' },
      ARGOCD_CONTROLLER,
    ],
    [
      'an Argo CD hook with only the Helm policy (Argo CD reads both)',
      { 'argocd.argoproj.io/hook': 'Sync', [HELM]: 'hook-succeeded' },
      ARGOCD_CONTROLLER,
    ],
    ['a Helm test hook (its result is what helm test is for)', { 'helm.sh/hook': 'test' }, undefined],
  ])('leaves alone %s', (_name, annotations, username) => {
    const job = hookJob(annotations);
    const before = structuredClone(job);
    expect(hookTtl.mutate(job, contextFor(job, { username }))).toEqual({ mutations: [], warnings: [] });
    expect(job).toEqual(before);
  });

  it.each([0, 30, 7200])('never touches a TTL the chart set (%i; ttl-floor raises short ones)', (ttl) => {
    const job = hookJob({ 'helm.sh/hook': 'post-delete' }, { ttlSecondsAfterFinished: ttl });
    hookTtl.mutate(job, contextFor(job));
    expect(job.spec?.ttlSecondsAfterFinished).toBe(ttl);
  });

  it('treats a TTL rendered as null as unset', () => {
    const job = hookJob({ 'helm.sh/hook': 'post-delete' }, { ttlSecondsAfterFinished: null });
    hookTtl.mutate(job, contextFor(job));
    expect(job.spec?.ttlSecondsAfterFinished).toBe(86400);
  });

  it.each([
    [7200, 60, 7200],
    [30, 60, 60],
    [30, 120, 120],
  ])('uses the configured TTL %i, never below the floor %i: %i', (configured, floor, expected) => {
    const context = decisionContext(
      loadConfig({
        overrides: {
          'rules.hookTtl.ttlSecondsAfterFinished': String(configured),
          'rules.ttlFloor.minTtlSecondsAfterFinished': String(floor),
        },
      }),
    );
    const job: KubeObject = hookJob({ 'helm.sh/hook': 'post-delete' });
    const hook = readHook(job, 'kubernetes-admin', context.config.hookDetection)!;
    hookTtl.mutate(job, ruleContextFor(hook, context, undefined, 'apps'));
    expect(job.spec?.ttlSecondsAfterFinished).toBe(expected);
  });

  it('names the template file when Helm 4 passes it to its post-renderer', () => {
    const job = hookJob({
      'helm.sh/hook': 'post-delete',
      'postrenderer.helm.sh/postrender-filename': 'kyverno/templates/hooks/post-delete.yaml',
    });
    expect(hookTtl.mutate(job, contextFor(job)).mutations).toEqual([
      advice(HELM, 'before-hook-creation,hook-succeeded', ' (kyverno/templates/hooks/post-delete.yaml)'),
    ]);
  });

  // At render time, where the Helm may be one helm-hook-delete-wait affects, delete-policy leaves hook-succeeded out:
  // the fix is the TTL in the template. The template has no hook-succeeded (often no policy at all): nothing to take
  // out, only why a policy is no fix. The finding names the advisory in its field, as the Argo CD ones do.
  it.each([
    ['no policy, Helm unknown', {}, {}, 'a hook-succeeded delete policy may leave Helm waiting its whole --timeout'],
    [
      'no policy, Helm 4.2.1',
      {},
      { 'helm.version': '4.2.1' },
      'a hook-succeeded delete policy would leave Helm 4.2.1 waiting its whole --timeout',
    ],
    [
      'a policy without hook-succeeded, Helm unknown',
      { [HELM]: 'hook-failed' },
      {},
      'a hook-succeeded delete policy may leave Helm waiting its whole --timeout',
    ],
  ])('at render time with %s, advises the TTL and names the advisory', (_name, policy, config, why) => {
    const context = decisionContext(loadConfig({ overrides: config }), undefined, 'render');
    const object = hookJob({
      'helm.sh/hook': 'post-delete',
      'postrenderer.helm.sh/postrender-filename': 'app/templates/cleanup.yaml',
      ...policy,
    });
    const request = { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username: 'kubernetes-admin' } };
    const decision = decide({ ...request, object }, 'mutate', context);
    expect(decision.findings.find((finding) => finding.rule === 'hook-ttl')).toEqual({
      rule: 'hook-ttl',
      action: 'mutate',
      message:
        'set spec.ttlSecondsAfterFinished to 86400: no delete policy removes this Job once it succeeds. Fix in its ' +
        `chart: set spec.ttlSecondsAfterFinished in the template (app/templates/cleanup.yaml); ${why}`,
      advisory: 'helm-hook-delete-wait',
    });
  });

  it('acts on Jobs only, at admission and at render time, for every hook', () => {
    expect(hookTtl.kinds).toEqual(['Job']);
    expect(hookTtl.stages).toEqual(['admission', 'render']);
    expect(hookTtl.gate).toBe('always');
    const pod = hookPod({ 'helm.sh/hook': 'post-delete' });
    expect(hookTtl.mutate(pod, contextFor(pod))).toEqual({ mutations: [], warnings: [] });
  });

  it('is idempotent', () => {
    const job = hookJob({ 'helm.sh/hook': 'post-delete' });
    hookTtl.mutate(job, contextFor(job));
    const once = structuredClone(job);
    expect(hookTtl.mutate(job, contextFor(job)).mutations).toEqual([]);
    expect(job).toEqual(once);
  });
});
