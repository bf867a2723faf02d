import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import { deletePolicy } from '../../../src/rules/delete-policy.js';
import { hookJob, hookPod, contextFor, ARGOCD_CONTROLLER } from '../../support/objects.js';

// Each change says why in one clause (issue 42 item 9).
const DELETED_AT_ONCE = 'a succeeded hook is deleted at once instead of staying until its next run';

describe('delete-policy', () => {
  it.each([
    [
      'Helm hook without a policy',
      { 'helm.sh/hook': 'pre-install' },
      { 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' },
      `set helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded: ${DELETED_AT_ONCE}`,
    ],
    [
      'Helm cleanup hook',
      { 'helm.sh/hook': 'post-delete' },
      { 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' },
      `set helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded: ${DELETED_AT_ONCE}`,
    ],
    [
      'Helm test hook keeps its Pod for --logs',
      { 'helm.sh/hook': 'test' },
      { 'helm.sh/hook-delete-policy': 'before-hook-creation' },
      'set helm.sh/hook-delete-policy: before-hook-creation: no hook-succeeded, so helm test --logs can still read the Pod',
    ],
    [
      'Argo CD hook',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      { 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation,HookSucceeded' },
      `set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: ${DELETED_AT_ONCE}`,
    ],
    [
      'both: Argo CD ignores the Helm annotations, so its own policy is added',
      { 'argocd.argoproj.io/hook': 'Sync', 'helm.sh/hook': 'pre-install' },
      { 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation,HookSucceeded' },
      `set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: ${DELETED_AT_ONCE}`,
    ],
  ])('%s (Helm 4.2.4)', (_name, annotations, added, message) => {
    const job = hookJob(annotations);
    const report = deletePolicy.mutate(job, contextFor(job, { config: { 'helm.version': '4.2.4' } }));
    expect(job.metadata?.annotations).toEqual({ ...annotations, ...added });
    expect(report.mutations).toEqual([message]);
  });

  it('says a configured policy without hook-succeeded is the tool default written out', () => {
    const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    const config = { 'rules.deletePolicy.argocd': 'BeforeHookCreation' };
    expect(deletePolicy.mutate(job, contextFor(job, { config })).mutations).toEqual([
      "set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation: the tool's default written out: a finished hook stays until its next run",
    ]);
  });

  // helm v4.2.1 pkg/action/hooks.go deleteHookByPolicy waits for every deletion by policy, and pkg/kube/statuswait.go
  // never ends that wait once the hook is gone: a hook-succeeded hook holds the release for the whole --timeout.
  const WITHOUT_HOOK_SUCCEEDED = (helm: string) =>
    `set helm.sh/hook-delete-policy: before-hook-creation, without hook-succeeded: ${helm} may wait its whole ` +
    '--timeout after that deletion; a TTL removes the finished hook instead';
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
    expect(report).toEqual({ mutations: [message], warnings: [], advisory: 'helm-hook-delete-wait' });
  });

  it('tells a hook Pod what stays of it: a Pod has no TTL', () => {
    const pod = hookPod({ 'helm.sh/hook': 'pre-install' });
    const report = deletePolicy.mutate(pod, contextFor(pod, { config: {} }));
    expect(report.mutations).toEqual([
      'set helm.sh/hook-delete-policy: before-hook-creation, without hook-succeeded: the Helm version is unknown and ' +
        'may wait its whole --timeout after that deletion; a Pod has no TTL: the finished Pod ' +
        'stays until before-hook-creation deletes it at the next run',
    ]);
  });

  // Under an unknown Helm, helm-hook-delete-wait may apply, but only the change it made names it.
  it.each([
    [
      'a test hook (no hook-succeeded to leave out)',
      { 'helm.sh/hook': 'test' },
      'set helm.sh/hook-delete-policy: before-hook-creation: no hook-succeeded, so helm test --logs can still read the Pod',
    ],
    [
      "a chart's policy without before-hook-creation",
      { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': 'hook-failed' },
      'set helm.sh/hook-delete-policy: before-hook-creation,hook-failed: without before-hook-creation the next run fails with "already exists" while this hook is still there',
    ],
  ])('names no advisory for %s', (_name, annotations, message) => {
    const job = hookJob(annotations);
    expect(deletePolicy.mutate(job, contextFor(job, { config: {} }))).toEqual({ mutations: [message], warnings: [] });
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

  const HELM = 'helm.sh/hook-delete-policy';
  const ARGO = 'argocd.argoproj.io/hook-delete-policy';
  it.each([
    [
      'a Helm policy with before-hook-creation',
      { 'helm.sh/hook': 'pre-install', [HELM]: 'hook-failed,before-hook-creation' },
      undefined,
    ],
    ["Helm's items in any case", { 'helm.sh/hook': 'pre-install', [HELM]: ' Before-Hook-Creation ' }, undefined],
    [
      'an Argo CD policy with BeforeHookCreation',
      { 'argocd.argoproj.io/hook': 'PostSync', [ARGO]: 'HookFailed,BeforeHookCreation' },
      ARGOCD_CONTROLLER,
    ],
    [
      "a Helm policy on an Argo CD hook (Argo CD merges both tools' annotations)",
      { 'argocd.argoproj.io/hook': 'PreSync', [HELM]: 'before-hook-creation,hook-succeeded' },
      ARGOCD_CONTROLLER,
    ],
    [
      'an Argo CD policy on a hook Helm runs (Helm reads only its own annotation: its default before-hook-creation holds)',
      { 'helm.sh/hook': 'pre-install', [ARGO]: 'HookFailed' },
      undefined,
    ],
  ])('never overrides %s', (_name, annotations, username) => {
    const job = hookJob(annotations);
    const report = deletePolicy.mutate(job, contextFor(job, { username, stage: 'render' }));
    expect(job.metadata?.annotations).toEqual(annotations);
    expect(report.mutations).toEqual([]);
  });

  // lightdash/helm-charts#141, openebs#4085, argo-cd#21637: a hook left in place fails the next run's create.
  const kept = (key: string, value: string, item: string) =>
    `set ${key}: ${value}: without ${item} the next run fails with "already exists" while this hook is still there`;
  it.each([
    [
      'hook-failed alone (Helm)',
      { 'helm.sh/hook': 'pre-install', [HELM]: 'hook-failed' },
      undefined,
      HELM,
      'before-hook-creation,hook-failed',
    ],
    ['an empty Helm policy', { 'helm.sh/hook': 'pre-install', [HELM]: '' }, undefined, HELM, 'before-hook-creation'],
    [
      'hook-succeeded, hook-failed (Helm)',
      { 'helm.sh/hook': 'post-install', [HELM]: 'hook-succeeded, hook-failed' },
      undefined,
      HELM,
      'before-hook-creation,hook-succeeded,hook-failed',
    ],
    [
      'HookFailed alone (Argo CD)',
      { 'argocd.argoproj.io/hook': 'PostSync', [ARGO]: 'HookFailed' },
      ARGOCD_CONTROLLER,
      ARGO,
      'BeforeHookCreation,HookFailed',
    ],
    [
      "Helm's hook-failed on an Argo CD hook",
      { 'argocd.argoproj.io/hook': 'PreSync', [HELM]: 'hook-failed' },
      ARGOCD_CONTROLLER,
      HELM,
      'before-hook-creation,hook-failed',
    ],
    [
      "Argo CD's HookSucceeded on a Helm hook Argo CD applies",
      { 'helm.sh/hook': 'pre-install', [ARGO]: 'HookSucceeded' },
      ARGOCD_CONTROLLER,
      ARGO,
      'BeforeHookCreation,HookSucceeded',
    ],
  ])("keeps the chart's policy and adds before-hook-creation to %s", (_name, annotations, username, key, value) => {
    const job = hookJob(annotations);
    const report = deletePolicy.mutate(
      job,
      contextFor(job, { username, stage: 'render', config: { 'helm.version': '4.2.1' } }),
    );
    expect(job.metadata?.annotations).toEqual({ ...annotations, [key]: value });
    const item = key === ARGO ? 'BeforeHookCreation' : 'before-hook-creation';
    expect(report).toEqual({ mutations: [kept(key, value, item)], warnings: [] });
    // Idempotent: a second pass finds it.
    expect(deletePolicy.mutate(job, contextFor(job, { username, stage: 'render' })).mutations).toEqual([]);
  });

  // Hooks of every kind are run and deleted by policy by both tools; a ServiceAccount, Role or ConfigMap hook left
  // by the last run fails the next with "already exists" (lightdash/helm-charts#141, openebs#4085, argo-cd#21637).
  const hookOf = (kind: string, apiVersion: string, annotations: Record<string, string>) => ({
    apiVersion,
    kind,
    metadata: { name: 'x', namespace: 'apps', annotations },
  });
  const renderRequest = (object: unknown, username = 'kubernetes-admin') => ({
    uid: 'u',
    operation: 'CREATE' as const,
    namespace: 'apps',
    userInfo: { username },
    object,
  });
  it.each([
    [
      'ServiceAccount',
      'v1',
      { 'helm.sh/hook': 'pre-install', [HELM]: 'hook-succeeded' },
      HELM,
      'before-hook-creation,hook-succeeded',
    ],
    [
      'Role',
      'rbac.authorization.k8s.io/v1',
      { 'helm.sh/hook': 'pre-upgrade', [HELM]: 'hook-failed' },
      HELM,
      'before-hook-creation,hook-failed',
    ],
    [
      'RoleBinding',
      'rbac.authorization.k8s.io/v1',
      { 'argocd.argoproj.io/hook': 'PreSync', [ARGO]: 'HookSucceeded' },
      ARGO,
      'BeforeHookCreation,HookSucceeded',
    ],
    ['Secret', 'v1', { 'helm.sh/hook': 'post-install', [HELM]: '' }, HELM, 'before-hook-creation'],
  ])(
    'at render time keeps before-hook-creation in the policy of a %s hook',
    (kind, apiVersion, annotations, key, value) => {
      const render = decisionContext(loadConfig(), undefined, 'render');
      const decision = decide(renderRequest(hookOf(kind, apiVersion, annotations)), 'mutate', render);
      expect(decision.patch).toEqual([
        { op: 'replace', path: `/metadata/annotations/${key.replace('/', '~1')}`, value },
      ]);
      expect(decision.rules).toEqual(['delete-policy']);
      // At admission a hook of another kind passes as before.
      const admitted = decide(
        renderRequest(hookOf(kind, apiVersion, annotations)),
        'mutate',
        decisionContext(loadConfig()),
      );
      expect(admitted).toMatchObject({ patch: [], rules: [], reason: 'not a hook object' });
    },
  );

  it.each([
    ['no policy (the tools default to before-hook-creation)', { 'helm.sh/hook': 'pre-install' }],
    [
      'a policy with before-hook-creation',
      { 'helm.sh/hook': 'pre-install', [HELM]: 'before-hook-creation,hook-succeeded' },
    ],
  ])('leaves a ConfigMap hook with %s alone at render time', (_name, annotations) => {
    const render = decisionContext(loadConfig(), undefined, 'render');
    const decision = decide(renderRequest(hookOf('ConfigMap', 'v1', annotations)), 'mutate', render);
    expect(decision.patch).toEqual([]);
    expect(decision.findings).toEqual([]);
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
    // Only delete-policy's part of the patch: the admission-only rules switched off.
    const config = loadConfig({
      overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false' },
    });
    expect(decide(request, 'mutate', decisionContext(config, undefined, stage)).patch).toEqual(expected);
  });
});
