// How Helm and Argo CD read a hook's delete policies from its annotations (src/core/delete-policies.ts), case by
// case from their source: helm v4.3.2 pkg/release/v1/util/manifest_sorter.go and pkg/action/hooks.go; gitops-engine
// pkg/sync/hook/delete_policy.go and pkg/sync/hook/helm/delete_policy.go (093aef0dad58, pinned by argo-cd v3.1.0).
import { describe, expect, it } from 'vitest';
import { hasDeletePolicy, toolOf, type DeletePolicy, type HookTool } from '../../src/core/delete-policies.js';
import type { KubeObject } from '../../src/core/types.js';
import { hookJob } from '../support/objects.js';

const HELM = 'helm.sh/hook-delete-policy';
const ARGO = 'argocd.argoproj.io/hook-delete-policy';

const POLICIES: readonly DeletePolicy[] = ['before-hook-creation', 'hook-succeeded', 'hook-failed'];
const policiesOf = (job: KubeObject, tool: HookTool) => POLICIES.filter((policy) => hasDeletePolicy(job, tool, policy));

describe('hasDeletePolicy', () => {
  it.each([
    ['no annotation: the default', {}, ['before-hook-creation']],
    [
      'its items, trimmed and lower-cased',
      { [HELM]: ' Hook-Succeeded , before-hook-creation' },
      ['before-hook-creation', 'hook-succeeded'],
    ],
    ['an empty annotation: no policy and no default', { [HELM]: '' }, []],
    ['unknown values only: no default either', { [HELM]: 'always' }, []],
    ["Argo CD's annotation is not Helm's", { [ARGO]: 'HookSucceeded' }, ['before-hook-creation']],
  ])('Helm: %s', (_name, annotations, expected) => {
    const job = hookJob({ 'helm.sh/hook': 'post-delete', ...annotations });
    expect(policiesOf(job, 'helm')).toEqual(expected);
  });

  it.each([
    ['no annotation: the default', {}, ['before-hook-creation']],
    ['its own, matched exactly', { [ARGO]: ' HookSucceeded,hookfailed' }, ['hook-succeeded']],
    ["Helm's too, exact lower case", { [HELM]: 'hook-succeeded,Hook-Failed' }, ['hook-succeeded']],
    ['both', { [ARGO]: 'HookFailed', [HELM]: 'hook-succeeded' }, ['hook-succeeded', 'hook-failed']],
    ['empty or unknown values: the default', { [ARGO]: '', [HELM]: 'never' }, ['before-hook-creation']],
    ['a name Object.prototype has is no policy', { [ARGO]: 'constructor' }, ['before-hook-creation']],
  ])('Argo CD: %s', (_name, annotations, expected) => {
    const job = hookJob({ 'argocd.argoproj.io/hook': 'PostSync', ...annotations });
    expect(policiesOf(job, 'argocd')).toEqual(expected);
  });

  it('the tool is Argo CD for every hook it applies, else Helm', () => {
    expect(toolOf({ appliedByArgo: true })).toBe('argocd');
    expect(toolOf({ appliedByArgo: false })).toBe('helm');
  });
});
