import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import { deletePolicy } from '../../../src/rules/delete-policy.js';
import { hookJob, hookPod, contextFor, ARGOCD_CONTROLLER } from '../../support/objects.js';

describe('delete-policy', () => {
  it.each([
    [
      'Helm hook without a policy',
      { 'helm.sh/hook': 'pre-install' },
      { 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' },
    ],
    [
      'Helm cleanup hook',
      { 'helm.sh/hook': 'post-delete' },
      { 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' },
    ],
    [
      'Helm test hook keeps its Pod for --logs',
      { 'helm.sh/hook': 'test' },
      { 'helm.sh/hook-delete-policy': 'before-hook-creation' },
    ],
    [
      'Argo CD hook',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      { 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation,HookSucceeded' },
    ],
    [
      'both: Argo CD ignores the Helm annotations, so its own policy is added',
      { 'argocd.argoproj.io/hook': 'Sync', 'helm.sh/hook': 'pre-install' },
      { 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation,HookSucceeded' },
    ],
  ])('%s (Helm 4.2.4)', (_name, annotations, added) => {
    const job = hookJob(annotations);
    const report = deletePolicy.mutate(job, contextFor(job, { config: { 'helm.version': '4.2.4' } }));
    expect(job.metadata?.annotations).toEqual({ ...annotations, ...added });
    expect(report.mutations).toHaveLength(1);
  });

  // helm v4.2.1 pkg/action/hooks.go deleteHookByPolicy waits for every deletion by policy, and pkg/kube/statuswait.go
  // never ends that wait once the hook is gone: a hook-succeeded hook holds the release for the whole --timeout.
  const WITHOUT_HOOK_SUCCEEDED = (helm: string) =>
    `set helm.sh/hook-delete-policy: before-hook-creation, without hook-succeeded: ${helm} may wait its whole ` +
    '--timeout after that deletion (helm-hook-delete-wait); a TTL removes the finished hook instead';
  it.each([
    ['Helm 4.2.1', { 'helm.version': '4.2.1' }, WITHOUT_HOOK_SUCCEEDED('Helm 4.2.1')],
    ['an unknown Helm', {}, WITHOUT_HOOK_SUCCEEDED('the Helm version is unknown and')],
    ['Helm v4.2.1 as helm version prints it', { 'helm.version': 'v4.2.1' }, WITHOUT_HOOK_SUCCEEDED('Helm 4.2.1')],
  ])('leaves hook-succeeded out where the Helm running the hooks may hang on it: %s', (_name, config, message) => {
    const job = hookJob({ 'helm.sh/hook': 'pre-install' });
    const report = deletePolicy.mutate(job, contextFor(job, { config }));
    expect(job.metadata?.annotations).toEqual({
      'helm.sh/hook': 'pre-install',
      'helm.sh/hook-delete-policy': 'before-hook-creation',
    });
    expect(report).toEqual({ mutations: [message], warnings: [] });
  });

  it.each(['4.2.0', '4.2.2', '3.21.1', '4.1.4'])('keeps hook-succeeded under Helm %s', (version) => {
    const job = hookJob({ 'helm.sh/hook': 'post-install' });
    deletePolicy.mutate(job, contextFor(job, { config: { 'helm.version': version } }));
    expect(job.metadata?.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
  });

  it('keeps the configured policy for hooks Argo CD applies, whatever the Helm version (Helm does not run them)', () => {
    const job = hookJob({ 'helm.sh/hook': 'post-install' });
    const context = contextFor(job, { username: ARGOCD_CONTROLLER, config: { 'helm.version': '4.2.1' } });
    deletePolicy.mutate(job, context);
    expect(job.metadata?.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
  });

  it('a configured policy loses only hook-succeeded under Helm 4.2.1', () => {
    const job = hookJob({ 'helm.sh/hook': 'post-install' });
    const config = { 'helm.version': '4.2.1', 'rules.deletePolicy.helm': 'hook-succeeded,hook-failed' };
    deletePolicy.mutate(job, contextFor(job, { config }));
    expect(job.metadata?.annotations?.['helm.sh/hook-delete-policy']).toBe('hook-failed');
  });

  it.each([
    ['a Helm policy the chart set', { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': 'hook-failed' }],
    [
      'an empty Helm policy (Helm then deletes the hook never; hook-ttl gives its Job a TTL)',
      { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': '' },
    ],
    [
      'an Argo CD policy',
      { 'argocd.argoproj.io/hook': 'PostSync', 'argocd.argoproj.io/hook-delete-policy': 'HookFailed' },
    ],
    [
      "a Helm policy on an Argo CD hook (Argo CD merges both tools' annotations)",
      { 'argocd.argoproj.io/hook': 'PreSync', 'helm.sh/hook-delete-policy': 'hook-failed' },
    ],
    [
      'an Argo CD policy on a Helm hook (the chart chose for the tool it was written for)',
      { 'helm.sh/hook': 'pre-install', 'argocd.argoproj.io/hook-delete-policy': 'HookFailed' },
    ],
  ])('never overrides %s', (_name, annotations) => {
    const job = hookJob(annotations);
    const report = deletePolicy.mutate(job, contextFor(job, { username: ARGOCD_CONTROLLER }));
    expect(job.metadata?.annotations).toEqual(annotations);
    expect(report.mutations).toEqual([]);
  });

  it('works on bare Pods too', () => {
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'Sync' });
    deletePolicy.mutate(pod, contextFor(pod));
    expect(pod.metadata?.annotations?.['argocd.argoproj.io/hook-delete-policy']).toBe(
      'BeforeHookCreation,HookSucceeded',
    );
  });

  // Helm and Argo CD read the policy from the rendered manifest, never from the object at admission.
  it.each([
    ['admission', []],
    [
      'render',
      [{ op: 'add', path: '/metadata/annotations/helm.sh~1hook-delete-policy', value: 'before-hook-creation' }],
    ],
  ] as const)('takes effect at render time only: at %s', (stage, expected) => {
    const request = {
      uid: 'u',
      operation: 'CREATE',
      namespace: 'apps',
      userInfo: { username: 'kubernetes-admin' },
      object: hookPod({ 'helm.sh/hook': 'test' }),
    };
    expect(decide(request, 'mutate', decisionContext(loadConfig(), undefined, stage)).patch).toEqual(expected);
  });
});
