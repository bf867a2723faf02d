import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { checkObject } from '../../../src/offline/check.js';
import { hookManagedBy } from '../../../src/rules/hook-managed-by.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob } from '../../support/objects.js';

const IGNORED = (value: string) =>
  `spec.managedBy ${JSON.stringify(value)}: Kubernetes' Job controller ignores this hook Job; it runs, and Helm or Argo CD see it finish, only if that controller runs it`;

describe('hook-managed-by', () => {
  it.each<[string, unknown, string[]]>([
    ['MultiKueue', 'kueue.x-k8s.io/multikueue', [IGNORED('kueue.x-k8s.io/multikueue')]],
    ['another controller', 'example.com/runner', [IGNORED('example.com/runner')]],
    ['the built-in Job controller, spelled out', 'kubernetes.io/job-controller', []],
    ['unset', undefined, []],
    ['null', null, []],
  ])('%s', (_name, managedBy, warnings) => {
    const job = hookJob({ 'helm.sh/hook': 'pre-install' }, managedBy === undefined ? {} : { managedBy });
    const before = structuredClone(job);
    expect(hookManagedBy.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings });
    expect(job).toEqual(before);
  });

  it.each(['admission', 'render'] as const)('warns at %s for Argo CD and Helm hooks alike', (stage) => {
    const context = decisionContext(loadConfig(), '3.5.1', stage);
    for (const [annotations, username] of [
      [{ 'argocd.argoproj.io/hook': 'PreSync' }, ARGOCD_CONTROLLER],
      [{ 'helm.sh/hook': 'post-delete' }, 'kubernetes-admin'],
    ] as const) {
      const job = hookJob({ ...annotations }, { managedBy: 'kueue.x-k8s.io/multikueue' });
      const result = checkObject(job, { file: '-', document: 1, line: 1, firstLine: '' }, 0, context, { username });
      expect(result.findings).toContainEqual({
        rule: 'hook-managed-by',
        action: 'warn',
        message: IGNORED('kueue.x-k8s.io/multikueue'),
      });
    }
  });
});
