// The decision engine alone, with small rules written here: gating, skips, audit mode, patches by diff, judges
// and validators. What the shipped rules do is in test/unit/rules and the golden tests.
import { describe, expect, it } from 'vitest';
import { withNamespaces, type DecisionContext } from '../../src/core/context.js';
import { decide } from '../../src/core/decide.js';
import {
  report,
  ruleSet,
  type CreateValidator,
  type MutationRule,
  type RuleSet,
  type Stage,
  type UpdateJudge,
} from '../../src/core/rule.js';
import type { AdmissionRequest, Advisory, KubeObject } from '../../src/core/types.js';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { ARGOCD_CONTROLLER, hookJob, hookPod } from '../support/objects.js';

const BOTH: readonly Stage[] = ['admission', 'render'];

/** Labels the object `test/<id>: done`; says so, or nothing when the label is there already. */
function labelRule(
  id: string,
  gate: MutationRule['gate'],
  kinds: MutationRule['kinds'] = ['Job', 'Pod'],
  stages: MutationRule['stages'] = BOTH,
): MutationRule {
  return {
    id,
    doc: `labels the object test/${id}`,
    stages,
    kinds,
    gate,
    mutate(object) {
      const metadata = (object.metadata ??= {});
      const labels = (metadata.labels ??= {});
      if (labels[`test/${id}`] === 'done') return report();
      labels[`test/${id}`] = 'done';
      return report({ mutations: [`labelled test/${id}`] });
    },
  };
}

const always = labelRule('always', 'always');
const renderOnly = labelRule('render-only', 'always', ['Job', 'Pod'], ['render']);
const argocd = labelRule('argocd', 'argocd');
const argocdKnown = labelRule('argocd-known', 'argocd-known');
const jobsOnly = labelRule('jobs-only', 'always', ['Job']);
const warner: MutationRule = {
  id: 'warner',
  doc: 'warns and reports an unmet mitigation',
  stages: BOTH,
  kinds: ['Job'],
  gate: 'always',
  mutate: () => report({ warnings: ['just so you know'], unmet: 'cannot do it here' }),
};

/** Denies a CREATE whose `always` label is missing: with mutations applied first, it never denies. */
const requiresAlways: CreateValidator = {
  id: 'requires-always',
  doc: 'denies a CREATE without the always label',
  stages: BOTH,
  validate: (object) =>
    object.metadata?.labels?.['test/always'] === 'done'
      ? []
      : [{ rule: 'requires-always', action: 'deny', message: 'no always label' }],
};

const noRename: UpdateJudge = {
  id: 'no-rename',
  doc: 'denies an UPDATE that changes the app label',
  stages: ['admission'],
  judge: (oldObject, newObject) =>
    oldObject.metadata?.labels?.app === newObject.metadata?.labels?.app
      ? undefined
      : { rule: 'no-rename', action: 'deny', message: 'app label changed', advisory: 'test-advisory' },
};

const rules: RuleSet = ruleSet({
  mutations: [always, argocd, argocdKnown, jobsOnly, warner],
  updateJudges: [noRename],
  createValidators: [requiresAlways],
});

const ADVISORY: Advisory = {
  id: 'test-advisory',
  summary: 'a race in 2.x',
  affected: '>=2.0.0 <3.0.0',
  references: [],
  mitigatedBy: ['argocd', 'argocd-known', 'helm-and-argocd'],
  warnedBy: [],
  mitigatedBySweep: false,
  notes: [],
};

function contextWith(
  options: { mode?: 'enforce' | 'audit'; argocdVersion?: string; ruleSet?: RuleSet } = {},
): DecisionContext {
  const base = decisionContext(loadConfig({ overrides: { mode: options.mode ?? 'enforce' } }), options.argocdVersion);
  return { ...base, ruleSet: options.ruleSet ?? rules, advisories: [ADVISORY] };
}

function request(object: unknown, overrides: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: 'u-1',
    operation: 'CREATE',
    namespace: 'apps',
    userInfo: { username: 'kubernetes-admin' },
    object,
    ...overrides,
  };
}

const asArgo = { userInfo: { username: ARGOCD_CONTROLLER } };
const LABELS_ADDED = {
  op: 'add',
  path: '/metadata/labels',
  value: { 'test/always': 'done', 'test/jobs-only': 'done' },
};

describe('decide, with rules of its own', () => {
  it.each([
    [
      'a ConfigMap',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { annotations: { 'helm.sh/hook': 'pre-install' } } },
    ],
    ['a Job without hook annotations', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'x' }, spec: {} }],
    [
      'a Deployment with a hook annotation',
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { annotations: { 'helm.sh/hook': 'x' } } },
    ],
    [
      'a hook annotation that is not a string',
      { apiVersion: 'batch/v1', kind: 'Job', metadata: { annotations: { 'helm.sh/hook': 5 } } },
    ],
    ['no object at all', undefined],
    ['a string object', 'job'],
  ])('passes %s untouched, running no rule', (_name, object) => {
    expect(decide(request(object), 'mutate', contextWith())).toEqual({
      allowed: true,
      mode: 'enforce',
      patch: [],
      withheldPatch: [],
      warnings: [],
      findings: [],
      reason: 'not a hook object',
      rules: [],
    });
  });

  it.each([
    ['DELETE', { operation: 'DELETE' }, 'operation DELETE'],
    ['CONNECT', { operation: 'CONNECT' }, 'operation CONNECT'],
    ['a status subresource update', { operation: 'UPDATE', subResource: 'status' }, 'subresource status'],
    ['an excluded namespace', { namespace: 'kube-system' }, 'namespace excluded'],
  ])('passes %s untouched', (_name, overrides, reason) => {
    expect(decide(request(hookJob(), overrides), 'mutate', contextWith())).toEqual({
      allowed: true,
      mode: 'enforce',
      patch: [],
      withheldPatch: [],
      warnings: [],
      findings: [],
      reason,
      rules: [],
    });
  });

  it('runs the rules in order and patches exactly the diff, with a finding for each change and warning', () => {
    const decision = decide(request(hookJob()), 'mutate', contextWith());
    expect(decision).toEqual({
      allowed: true,
      mode: 'enforce',
      patch: [LABELS_ADDED],
      withheldPatch: [],
      warnings: ['hookguard [warner]: just so you know', 'hookguard [warner]: cannot do it here'],
      findings: [
        { rule: 'always', action: 'mutate', message: 'labelled test/always' },
        { rule: 'jobs-only', action: 'mutate', message: 'labelled test/jobs-only' },
        { rule: 'warner', action: 'warn', message: 'just so you know' },
        { rule: 'warner', action: 'warn', message: 'cannot do it here' },
      ],
      reason: 'mutated',
      rules: ['always', 'jobs-only', 'warner'],
      hook: { system: 'helm', phases: ['pre-upgrade'], appliedByArgo: false },
    });
  });

  it('runs a rule only on the kinds it names', () => {
    const decision = decide(request(hookPod({ 'helm.sh/hook': 'test' })), 'mutate', contextWith());
    expect(decision.rules).toEqual(['always']);
    expect(decision.patch).toEqual([{ op: 'add', path: '/metadata/labels', value: { 'test/always': 'done' } }]);
  });

  it('sends no patch when the rules change nothing', () => {
    const done = hookJob();
    done.metadata!.labels = { 'test/always': 'done', 'test/jobs-only': 'done' };
    expect(decide(request(done), 'mutate', contextWith())).toMatchObject({ patch: [], reason: 'compliant' });
  });

  it.each([
    ['plain Helm, any version', {}, undefined, ['always', 'jobs-only', 'warner']],
    ['Argo CD, version unknown', asArgo, undefined, ['always', 'argocd', 'jobs-only', 'warner']],
    ['Argo CD, an affected version', asArgo, '2.14.3', ['always', 'argocd', 'argocd-known', 'jobs-only', 'warner']],
    ['Argo CD, a version no advisory affects', asArgo, '3.1.0', ['always', 'jobs-only', 'warner']],
    ['Argo CD, an unparseable version (unknown)', asArgo, 'latest', ['always', 'argocd', 'jobs-only', 'warner']],
  ])('opens the gates for %s', (_name, overrides, argocdVersion, expected) => {
    const context = contextWith(argocdVersion ? { argocdVersion } : {});
    expect(decide(request(hookJob(), overrides), 'mutate', context).rules).toEqual(expected);
  });

  it.each([
    ['plain Helm, any version', {}, undefined, ['helm-and-argocd']],
    ['Argo CD, version unknown', asArgo, undefined, ['helm-and-argocd']],
    ['Argo CD, an affected version', asArgo, '2.14.3', ['helm-and-argocd']],
    ['Argo CD, a version no advisory affects', asArgo, '3.1.0', []],
  ])('opens a helm-and-argocd gate for %s', (_name, overrides, argocdVersion, expected) => {
    const ruleSetOfOne = ruleSet({
      mutations: [labelRule('helm-and-argocd', 'helm-and-argocd')],
      updateJudges: [],
      createValidators: [],
    });
    const context = contextWith({ ruleSet: ruleSetOfOne, ...(argocdVersion ? { argocdVersion } : {}) });
    expect(decide(request(hookJob(), overrides), 'mutate', context).rules).toEqual(expected);
  });

  it('names the advisory a gated rule mitigates on its findings', () => {
    const decision = decide(request(hookJob(), asArgo), 'mutate', contextWith({ argocdVersion: '2.14.3' }));
    expect(decision.findings.filter((finding) => finding.rule.startsWith('argocd'))).toEqual([
      { rule: 'argocd', action: 'mutate', message: 'labelled test/argocd', advisory: 'test-advisory' },
      { rule: 'argocd-known', action: 'mutate', message: 'labelled test/argocd-known', advisory: 'test-advisory' },
    ]);
    expect(decision).toMatchObject({ argocdVersion: '2.14.3', argocdVersionFrom: { by: 'config' } });
  });

  it('withholds the patch in audit mode and says what it would have done', () => {
    const decision = decide(request(hookJob()), 'mutate', contextWith({ mode: 'audit' }));
    expect(decision).toMatchObject({ allowed: true, mode: 'audit', patch: [], withheldPatch: [LABELS_ADDED] });
    expect(decision.warnings).toEqual([
      'hookguard audit would change [always]: labelled test/always',
      'hookguard audit would change [jobs-only]: labelled test/jobs-only',
      'hookguard audit note [warner]: just so you know',
      'hookguard audit note [warner]: cannot do it here',
    ]);
    expect(decision.reason).toBe('would mutate (audit)');
  });

  it('lets one object ask for audit mode', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/mode': 'audit' });
    expect(decide(request(job), 'mutate', contextWith())).toMatchObject({
      mode: 'audit',
      patch: [],
      withheldPatch: [LABELS_ADDED],
    });
  });

  it('honours hookguard.io/skip and warns once, at /mutate, about ids that are not skippable rules', () => {
    const job = hookJob({
      'helm.sh/hook': 'pre-upgrade',
      'hookguard.io/skip': 'always, warner, requires-always, nope',
    });
    const decision = decide(request(job), 'mutate', contextWith());
    expect(decision.rules).toEqual(['jobs-only']);
    expect(decision.patch).toEqual([{ op: 'add', path: '/metadata/labels', value: { 'test/jobs-only': 'done' } }]);
    expect(decision.findings[0]).toEqual({
      rule: 'skip',
      action: 'warn',
      message: 'hookguard.io/skip names unknown rules: requires-always, nope',
    });
    expect(decide(request(job), 'validate', contextWith()).warnings).toEqual([]);
  });

  it('validates a CREATE as stored: enforce mode judges the object itself and denies', () => {
    const decision = decide(request(hookJob()), 'validate', contextWith());
    expect(decision).toMatchObject({
      allowed: false,
      denial: 'hookguard denied: no always label',
      reason: 'denied',
      rules: ['requires-always'],
    });
  });

  it('validates in audit mode what enforce mode would have stored, so a mitigated object passes', () => {
    const decision = decide(request(hookJob()), 'validate', contextWith({ mode: 'audit' }));
    expect(decision).toMatchObject({ allowed: true, findings: [], warnings: [], reason: 'compliant' });
  });

  it('only warns in audit mode about what it would deny', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'always' });
    const decision = decide(request(job), 'validate', contextWith({ mode: 'audit' }));
    expect(decision).toMatchObject({ allowed: true, reason: 'would deny (audit)' });
    expect(decision.warnings).toEqual(['hookguard audit would deny [requires-always]: no always label']);
  });

  it('judges an UPDATE at /mutate only, never patching it', () => {
    const oldObject = hookJob();
    oldObject.metadata!.labels = { app: 'a' };
    const object = structuredClone<KubeObject>(oldObject);
    object.metadata!.labels = { app: 'b' };
    const update = request(object, { operation: 'UPDATE', oldObject });
    expect(decide(update, 'mutate', contextWith())).toMatchObject({
      allowed: false,
      patch: [],
      reason: 'denied',
      rules: ['no-rename'],
      findings: [{ rule: 'no-rename', action: 'deny', message: 'app label changed', advisory: 'test-advisory' }],
    });
    expect(decide(update, 'validate', contextWith())).toMatchObject({ allowed: true, rules: [] });
    expect(decide(update, 'mutate', contextWith({ mode: 'audit' }))).toMatchObject({
      allowed: true,
      reason: 'would deny (audit)',
    });
    const unchanged = request(structuredClone(oldObject), { operation: 'UPDATE', oldObject });
    expect(decide(unchanged, 'mutate', contextWith())).toMatchObject({ allowed: true, patch: [], reason: 'compliant' });
  });

  it('runs each rule only at the stages it names: a render-only rule at render time, an admission-only judge at admission', () => {
    const staged = ruleSet({ mutations: [always, renderOnly], updateJudges: [noRename], createValidators: [] });
    const atAdmission = decide(request(hookJob()), 'mutate', contextWith({ ruleSet: staged }));
    expect(atAdmission.rules).toEqual(['always']);
    const atRender = decide(request(hookJob()), 'mutate', { ...contextWith({ ruleSet: staged }), stage: 'render' });
    expect(atRender.rules).toEqual(['always', 'render-only']);
    expect(atRender.patch).toEqual([
      { op: 'add', path: '/metadata/labels', value: { 'test/always': 'done', 'test/render-only': 'done' } },
    ]);
    const oldObject = hookJob();
    oldObject.metadata!.labels = { app: 'a' };
    const renamed = structuredClone<KubeObject>(oldObject);
    renamed.metadata!.labels = { app: 'b' };
    const update = request(renamed, { operation: 'UPDATE', oldObject });
    expect(decide(update, 'mutate', { ...contextWith({ ruleSet: staged }), stage: 'render' })).toMatchObject({
      allowed: true,
      rules: [],
    });
  });

  it('opts a validator out with the mutation of the same id (one rule, two parts); a validator of its own stays', () => {
    const deniesAlways: CreateValidator = {
      id: 'always',
      doc: 'the validating part of always',
      stages: BOTH,
      validate: () => [{ rule: 'always', action: 'deny', message: 'always says no' }],
    };
    const paired = ruleSet({ mutations: [always], updateJudges: [], createValidators: [deniesAlways, requiresAlways] });
    const skipped = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'always' });
    expect(decide(request(skipped), 'validate', contextWith({ ruleSet: paired }))).toMatchObject({
      allowed: false,
      denial: 'hookguard denied: no always label',
      rules: ['requires-always'],
    });
    expect(decide(request(hookJob()), 'validate', contextWith({ ruleSet: paired }))).toMatchObject({
      allowed: false,
      denial: 'hookguard denied: always says no | no always label',
      rules: ['always', 'requires-always'],
    });
  });

  it("hands the rules the namespace watch's facts of the request's namespace, and nothing before it has synced", () => {
    const seen: unknown[] = [];
    const recorder: MutationRule = {
      id: 'recorder',
      doc: 'records the namespace it is shown',
      stages: BOTH,
      kinds: ['Job'],
      gate: 'always',
      mutate: (_object, context) => {
        seen.push(context.namespace);
        return report();
      },
    };
    const base = contextWith({ ruleSet: ruleSet({ mutations: [recorder], updateJudges: [], createValidators: [] }) });
    const apps = { name: 'apps', labels: { 'istio-injection': 'enabled' }, annotations: {} };
    decide(request(hookJob()), 'mutate', base);
    decide(request(hookJob()), 'mutate', withNamespaces(base, new Map([['apps', apps]])));
    decide(request(hookJob()), 'mutate', withNamespaces(base, new Map()));
    expect(seen).toEqual([undefined, apps, { name: 'apps', labels: {}, annotations: {} }]);
  });

  it('applies no rule it was not handed', () => {
    const none = ruleSet({ mutations: [], updateJudges: [], createValidators: [] });
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'always' });
    const decision = decide(request(job), 'mutate', contextWith({ ruleSet: none }));
    expect(decision).toMatchObject({ patch: [], rules: [], reason: 'compliant' });
    expect(decision.findings).toEqual([
      { rule: 'skip', action: 'warn', message: 'hookguard.io/skip names unknown rules: always' },
    ]);
  });
});

describe('decide, with advisories that only warn and advisories with notes', () => {
  const argoWarner: MutationRule = {
    id: 'argo-warner',
    doc: 'warns about a race nothing on the object fixes',
    stages: BOTH,
    kinds: ['Job'],
    gate: 'argocd',
    mutate: () => report({ warnings: ['mind the race'] }),
  };
  const WARNED: Advisory = {
    id: 'warned-advisory',
    summary: 'a race in 3.x nothing on the object fixes',
    affected: '>=3.0.0',
    references: [],
    mitigatedBy: [],
    warnedBy: ['argo-warner'],
    mitigatedBySweep: true,
    notes: [],
  };
  const NOTED: Advisory = {
    ...ADVISORY,
    notes: [
      { affected: '>=2.14.3 <2.15.0', hookName: 'fixed', text: 'said of hooks with a fixed name' },
      { affected: '>=2.14.3 <2.15.0', hookName: 'generated', text: 'said of generateName hooks' },
    ],
  };
  const withWarner = ruleSet({ mutations: [argocd, argoWarner], updateJudges: [], createValidators: [] });
  const contextAt = (argocdVersion: string): DecisionContext => ({
    ...contextWith({ argocdVersion, ruleSet: withWarner }),
    advisories: [NOTED, WARNED],
  });
  const named = () => hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
  const generated = () => {
    const job = named();
    job.metadata!.generateName = 'migrate-';
    return job;
  };

  it.each([
    ['a version the warning advisory affects', '3.1.0', ['argo-warner'], ['hookguard [argo-warner]: mind the race']],
    ['a version it does not affect', '2.13.0', ['argocd'], []],
    // Unknown: the gate is open, and the warning names the advisory that may apply.
    ['an unknown version', 'latest', ['argocd', 'argo-warner'], ['hookguard [argo-warner]: mind the race']],
  ])('runs a warning rule on %s, its warnings naming the advisory', (_name, version, rules, warnings) => {
    const decision = decide(request(named(), asArgo), 'mutate', contextAt(version));
    expect(decision.rules).toEqual(rules);
    expect(decision.warnings).toEqual(warnings);
    expect(decision.findings.filter((finding) => finding.action === 'warn')).toEqual(
      warnings.length > 0
        ? [{ rule: 'argo-warner', action: 'warn', message: 'mind the race', advisory: 'warned-advisory' }]
        : [],
    );
  });

  it.each([
    ['a hook with a fixed name', named, '2.14.8', { note: 'said of hooks with a fixed name' }],
    ['a generateName hook', generated, '2.14.8', { note: 'said of generateName hooks' }],
    ['a version outside the note', named, '2.13.0', {}],
  ])('gives a finding naming the advisory its note for %s', (_name, object, version, note) => {
    const decision = decide(request(object(), asArgo), 'mutate', contextAt(version));
    expect(decision.findings).toEqual([
      { rule: 'argocd', action: 'mutate', message: 'labelled test/argocd', advisory: 'test-advisory', ...note },
    ]);
    // Notes are for check's report and the audit log; the admission warnings stay one short line each.
    expect(
      decide(request(object(), asArgo), 'mutate', {
        ...contextAt(version),
        config: { ...contextAt(version).config, mode: 'audit' },
      }).warnings,
    ).toEqual(['hookguard audit would change [argocd]: labelled test/argocd']);
  });
});

describe('ruleSet', () => {
  it('derives the skippable ids (mutations) and the mitigating ids (mutations and UPDATE judges)', () => {
    expect([...rules.skippableIds]).toEqual(['always', 'argocd', 'argocd-known', 'jobs-only', 'warner']);
    expect([...rules.mitigatingIds]).toEqual(['always', 'argocd', 'argocd-known', 'jobs-only', 'warner', 'no-rename']);
  });
});
