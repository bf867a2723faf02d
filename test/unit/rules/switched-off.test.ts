// Every rule can be switched off for the whole installation, `rules.<rule>.enabled: false`, as Kyverno policies and
// Gatekeeper constraints are: the rule leaves the rule set, so it neither changes, warns nor denies anything.
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import type { RuleSet } from '../../../src/core/rule.js';
import type { AdmissionRequest, KubeObject } from '../../../src/core/types.js';
import { builtInRules, catalogOf, ruleConfigKey } from '../../../src/rules/index.js';
import { ARGOCD_CONTROLLER, hookJob, hookPod } from '../../support/objects.js';

const IDS = [...new Set(catalogOf(builtInRules).map((rule) => rule.id))];

function idsOf(rules: RuleSet): string[] {
  return [...rules.mutations, ...rules.updateJudges, ...rules.createValidators].map((rule) => rule.id);
}

function contextWith(overrides: Record<string, string>, argocdVersion?: string) {
  return decisionContext(loadConfig({ overrides }), argocdVersion, 'render');
}

function create(object: KubeObject, username = 'kubernetes-admin'): AdmissionRequest {
  return { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username }, object };
}

describe('rules.<rule>.enabled', () => {
  it('is a key of every rule, true by default', () => {
    const { rules } = loadConfig();
    expect(
      IDS.map((id) => [id, (rules as unknown as Record<string, { enabled: boolean }>)[ruleConfigKey(id)]?.enabled]),
    ).toEqual(IDS.map((id) => [id, true]));
  });

  it.each(IDS)('false takes %s, and only it, out of the rule set', (id) => {
    const { ruleSet } = contextWith({ [`rules.${ruleConfigKey(id)}.enabled`]: 'false' });
    expect(idsOf(ruleSet)).toEqual(idsOf(builtInRules).filter((other) => other !== id));
    // A chart may still name it in hookguard.io/skip: that is no unknown id.
    expect(ruleSet.skippableIds).toEqual(builtInRules.skippableIds);
  });

  it('a mutation switched off changes nothing: hook-deadline, with a deadline asked for', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': 'hook-succeeded' });
    const enforced = { 'rules.hookDeadline.activeDeadlineSeconds': '3600' };
    const on = decide(create(job), 'mutate', contextWith(enforced));
    const off = decide(create(job), 'mutate', contextWith({ ...enforced, 'rules.hookDeadline.enabled': 'false' }));
    expect(on.patch).toContainEqual({ op: 'add', path: '/spec/activeDeadlineSeconds', value: 3600 });
    expect(off.patch).not.toContainEqual(expect.objectContaining({ path: '/spec/activeDeadlineSeconds' }));
    expect(off.findings.map((finding) => finding.rule)).not.toContain('hook-deadline');
  });

  it('a validator switched off denies nothing: version-race, and hook-pod-restart-policy at render time', () => {
    const optedOut = hookJob({ 'argocd.argoproj.io/hook': 'PreSync', 'hookguard.io/skip': 'min-runtime' });
    const race = (overrides: Record<string, string>) =>
      decide(create(optedOut, ARGOCD_CONTROLLER), 'validate', contextWith(overrides, '3.1.0')).allowed;
    expect([race({}), race({ 'rules.versionRace.enabled': 'false' })]).toEqual([false, true]);

    const always = hookPod({ 'helm.sh/hook': 'post-install' });
    (always.spec as { restartPolicy: string }).restartPolicy = 'Always';
    const restart = (overrides: Record<string, string>) =>
      decide(create(always), 'validate', contextWith(overrides)).allowed;
    expect([restart({}), restart({ 'rules.hookPodRestartPolicy.enabled': 'false' })]).toEqual([false, true]);
  });
});

describe('rules.deletePolicy refuses what Helm and Argo CD would not accept, naming the key', () => {
  it.each([
    [
      'rules.deletePolicy.helm',
      'before-hook-creation,hook-succeded',
      '"hook-succeded" is not a delete policy Helm knows (before-hook-creation, hook-succeeded, hook-failed)',
    ],
    ['rules.deletePolicy.helmTest', '', 'must list delete policies, comma-separated, none empty: got ""'],
    [
      'rules.deletePolicy.helm',
      'hook-succeeded,',
      'must list delete policies, comma-separated, none empty: got "hook-succeeded,"',
    ],
    [
      'rules.deletePolicy.argocd',
      'BeforeHookCreation,hook-succeeded',
      '"hook-succeeded" is not a delete policy Argo CD knows (BeforeHookCreation, HookSucceeded, HookFailed)',
    ],
  ])('%s: %j', (key, value, problem) => {
    expect(() => loadConfig({ overrides: { [key]: value } })).toThrow(`invalid config: ${key}: ${problem}`);
  });

  it('takes every policy each tool knows, with blanks around the commas', () => {
    expect(
      loadConfig({
        overrides: {
          'rules.deletePolicy.helm': 'before-hook-creation, hook-succeeded, hook-failed',
          'rules.deletePolicy.argocd': 'BeforeHookCreation,HookSucceeded,HookFailed',
        },
      }).rules.deletePolicy,
    ).toMatchObject({ helm: 'before-hook-creation, hook-succeeded, hook-failed' });
  });
});
