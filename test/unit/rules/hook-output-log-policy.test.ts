import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import type { KubeObject } from '../../../src/core/types.js';
import { hookOutputLogPolicy } from '../../../src/rules/hook-output-log-policy.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob, hookPod } from '../../support/objects.js';

const POLICY = 'helm.sh/hook-output-log-policy';
const SET = `set ${POLICY}: hook-failed: Helm prints the hook's logs if it fails`;

const BEFORE_HOOK_CREATION = { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': 'before-hook-creation' };

/** A CREATE of `object` by a Helm user, as decide() reads it. */
function helmCreate(object: KubeObject) {
  return { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username: 'kubernetes-admin' }, object };
}

describe('hook-output-log-policy', () => {
  it.each([
    ['a Helm hook Job, Helm unknown', hookJob({ 'helm.sh/hook': 'pre-install' }), {}],
    ['a Helm hook Job under Helm 4.1.4', hookJob({ 'helm.sh/hook': 'pre-upgrade' }), { 'helm.version': '4.1.4' }],
    [
      'a Helm hook Job under Helm 3.18.0, the first to read it',
      hookJob({ 'helm.sh/hook': 'post-install' }),
      { 'helm.version': '3.18.0' },
    ],
    ['a bare Helm hook Pod', hookPod({ 'helm.sh/hook': 'post-delete' }), { 'helm.version': '4.2.4' }],
  ])('gives hook-failed to %s', (_name, object, config) => {
    const before = structuredClone(object.metadata?.annotations);
    const report = hookOutputLogPolicy.mutate(object, contextFor(object, { stage: 'render', config }));
    expect(object.metadata?.annotations).toEqual({ ...before, [POLICY]: 'hook-failed' });
    expect(report).toEqual({ mutations: [SET], warnings: [] });
  });

  it.each([
    ['a policy the chart set', hookJob({ 'helm.sh/hook': 'pre-install', [POLICY]: 'hook-succeeded' }), undefined, {}],
    ['an empty policy the chart set', hookJob({ 'helm.sh/hook': 'pre-install', [POLICY]: '' }), undefined, {}],
    [
      'Helm 3.17.0, which never reads it',
      hookJob({ 'helm.sh/hook': 'pre-install' }),
      undefined,
      { 'helm.version': '3.17.0' },
    ],
    [
      'an Argo CD hook (Argo CD never reads it)',
      hookJob({ 'argocd.argoproj.io/hook': 'PreSync' }),
      ARGOCD_CONTROLLER,
      {},
    ],
    ['a Helm hook Argo CD applies', hookJob({ 'helm.sh/hook': 'pre-install' }), ARGOCD_CONTROLLER, {}],
    ['a Helm test hook (helm test --logs prints it)', hookPod({ 'helm.sh/hook': 'test' }), undefined, {}],
  ])('leaves alone %s', (_name, object, username, config) => {
    const before = structuredClone(object);
    const report = hookOutputLogPolicy.mutate(object, contextFor(object, { stage: 'render', username, config }));
    expect(report).toEqual({ mutations: [], warnings: [] });
    expect(object).toEqual(before);
  });

  it('is idempotent', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-install' });
    hookOutputLogPolicy.mutate(job, contextFor(job, { stage: 'render' }));
    const once = structuredClone(job);
    expect(hookOutputLogPolicy.mutate(job, contextFor(job, { stage: 'render' })).mutations).toEqual([]);
    expect(job).toEqual(once);
  });

  it.each([
    ['on', {}, [{ op: 'add', path: '/metadata/annotations/helm.sh~1hook-output-log-policy', value: 'hook-failed' }]],
    ['off', { 'rules.hookOutputLogPolicy.enabled': 'false' }, []],
  ] as const)('is switched %s by rules.hookOutputLogPolicy.enabled', (_name, overrides, expected) => {
    const request = helmCreate(hookJob(BEFORE_HOOK_CREATION));
    const context = decisionContext(loadConfig({ overrides }), undefined, 'render');
    const patch = decide(request, 'mutate', context).patch;
    expect(patch.filter((op) => op.path.includes('output-log'))).toEqual(expected);
  });

  // Helm reads it from the rendered manifest, never from the live object: nothing is written at admission.
  it.each([
    ['admission', []],
    ['render', [{ op: 'add', path: '/metadata/annotations/helm.sh~1hook-output-log-policy', value: 'hook-failed' }]],
  ] as const)('takes effect at render time only: at %s', (stage, expected) => {
    const request = helmCreate(hookPod(BEFORE_HOOK_CREATION));
    const patch = decide(request, 'mutate', decisionContext(loadConfig(), undefined, stage)).patch;
    expect(patch.filter((op) => op.path.includes('output-log'))).toEqual(expected);
  });
});
