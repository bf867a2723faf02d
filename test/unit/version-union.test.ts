// Judging a hook under several Argo CD versions at once: when more than one Argo CD may have applied it and nothing
// says which, the union of their advisories, each rule's gate deciding what that may do. The advisories are written
// here (shaped like the built-in ones) so the table states the semantics, not the data of the day.
import { describe, expect, it } from 'vitest';
import type { ArgoInstance } from '../../src/core/argocd-instances.js';
import { ruleContextFor, type DecisionContext } from '../../src/core/context.js';
import { decide } from '../../src/core/decide.js';
import { readHook } from '../../src/core/hook.js';
import { gateOpen, type RuleGate } from '../../src/core/rule.js';
import type { AdmissionRequest, Advisory, KubeObject } from '../../src/core/types.js';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { DEFAULT_GUARD_CONTAINER, HOOK_FINALIZER, hookJob } from '../support/objects.js';

const advisory = (id: string, affected: string, mitigatedBy: string[]): Advisory => ({
  id,
  summary: id,
  affected,
  references: [],
  mitigatedBy,
  warnedBy: [],
  mitigatedBySweep: false,
  notes: [],
});
const PARTIAL = advisory('partial', '2.14.3', ['hook-finalizer']);
const FAST = advisory('fast', '2.14.3 || >=3.0.0 <3.4.0', ['min-runtime', 'ttl-floor']);
const TTL = advisory('ttl', '<2.14.3 || >2.14.3 <3.0.0', ['ttl-floor']);
const ADVISORIES = [PARTIAL, FAST, TTL];

/** The gates of the built-in rules these advisories name. */
const GATES: Record<string, RuleGate> = {
  'min-runtime': 'argocd',
  'ttl-floor': 'argocd',
  'hook-finalizer': 'argocd-known',
};

// The rules that do the same for every version (the watcher's label, the log fallback) are off: these tests are about
// what the versions decide.
const base = decisionContext(
  loadConfig({ overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false' } }),
);
const context: DecisionContext = { ...base, advisories: ADVISORIES };
const argoHook = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' }, { ttlSecondsAfterFinished: 0 });
const helmHook = hookJob({ 'helm.sh/hook': 'pre-upgrade' });

interface Judged {
  argocdVersion: string | undefined;
  argocdVersions: readonly string[];
  /** Each rule: whether its gate opens, and the advisories it is told of. */
  rules: Record<string, { runs: boolean; advisories: string[] }>;
}

function judged(object: KubeObject, versions: string | readonly string[] | undefined): Judged {
  const hook = readHook(object, 'kubernetes-admin', context.config.hookDetection)!;
  const rule = ruleContextFor(hook, context, versions, 'apps');
  return {
    argocdVersion: rule.argocdVersion,
    argocdVersions: rule.argocdVersions,
    rules: Object.fromEntries(
      Object.entries(GATES).map(([id, gate]) => [
        id,
        { runs: gateOpen({ id, gate }, rule), advisories: rule.advisoriesFor(id).map((each) => each.id) },
      ]),
    ),
  };
}

const runs = (advisories: string[] = []) => ({ runs: true, advisories });
const idle = (advisories: string[] = []) => ({ runs: false, advisories });

describe('a hook judged under a union of versions', () => {
  it.each<[string, KubeObject, string | readonly string[] | undefined, Judged]>([
    [
      'one known version: every rule its advisories affect',
      argoHook,
      '2.14.3',
      {
        argocdVersion: '2.14.3',
        argocdVersions: ['2.14.3'],
        rules: { 'min-runtime': runs(['fast']), 'ttl-floor': runs(['fast']), 'hook-finalizer': runs(['partial']) },
      },
    ],
    [
      '2.14.3 or 3.1.0: the guard and the TTL floor (both affected); the finalizer stays (3.1.0 needs it)',
      argoHook,
      ['2.14.3', '3.1.0'],
      {
        argocdVersion: undefined,
        argocdVersions: ['2.14.3', '3.1.0'],
        rules: { 'min-runtime': runs(['fast']), 'ttl-floor': runs(['fast']), 'hook-finalizer': idle(['partial']) },
      },
    ],
    [
      '2.13.3 or 3.4.0: the TTL floor for 2.13.3; no guard, as neither races with a fast Job',
      argoHook,
      ['2.13.3', '3.4.0'],
      {
        argocdVersion: undefined,
        argocdVersions: ['2.13.3', '3.4.0'],
        rules: { 'min-runtime': idle(), 'ttl-floor': runs(['ttl']), 'hook-finalizer': idle() },
      },
    ],
    [
      '2.13.3 or 3.1.0: the TTL floor for both reasons, in advisory order',
      argoHook,
      ['3.1.0', '2.13.3'],
      {
        argocdVersion: undefined,
        argocdVersions: ['3.1.0', '2.13.3'],
        rules: { 'min-runtime': runs(['fast']), 'ttl-floor': runs(['fast', 'ttl']), 'hook-finalizer': idle() },
      },
    ],
    [
      'two Argo CDs of 2.14.3 only: the finalizer goes, as for one (every candidate is affected)',
      argoHook,
      ['2.14.3', 'v2.14.3'],
      {
        argocdVersion: '2.14.3',
        argocdVersions: ['2.14.3'],
        rules: { 'min-runtime': runs(['fast']), 'ttl-floor': runs(['fast']), 'hook-finalizer': runs(['partial']) },
      },
    ],
    [
      'fixed versions only: nothing',
      argoHook,
      ['3.4.0', '3.5.1'],
      {
        argocdVersion: undefined,
        argocdVersions: ['3.4.0', '3.5.1'],
        rules: { 'min-runtime': idle(), 'ttl-floor': idle(), 'hook-finalizer': idle() },
      },
    ],
    [
      'unknown: the protective rules run, the finalizer stays',
      argoHook,
      undefined,
      {
        argocdVersion: undefined,
        argocdVersions: [],
        rules: { 'min-runtime': runs(), 'ttl-floor': runs(), 'hook-finalizer': idle() },
      },
    ],
    [
      'a version that is none makes the whole union unknown',
      argoHook,
      ['2.14.3', 'latest'],
      {
        argocdVersion: undefined,
        argocdVersions: [],
        rules: { 'min-runtime': runs(), 'ttl-floor': runs(), 'hook-finalizer': idle() },
      },
    ],
    [
      'a hook Argo CD did not apply: no version counts',
      helmHook,
      ['2.14.3', '3.1.0'],
      {
        argocdVersion: undefined,
        argocdVersions: [],
        rules: { 'min-runtime': idle(), 'ttl-floor': idle(), 'hook-finalizer': idle() },
      },
    ],
  ])('%s', (_name, object, versions, expected) => {
    expect(judged(object, versions)).toEqual(expected);
  });
});

const instance = (namespace: string, version: string): [string, ArgoInstance] => [
  namespace,
  { namespace, version, source: 'test', controllerUsernames: [] },
];

/** An Argo CD PreSync hook as an Argo CD with the finalizer applies it, with a TTL of 0 and its delete policy. */
function syncHook(annotations: Record<string, string> = {}): KubeObject {
  const job = hookJob(
    {
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
      ...annotations,
    },
    { ttlSecondsAfterFinished: 0 },
  );
  job.metadata!.finalizers = [HOOK_FINALIZER];
  return job;
}

function request(object: KubeObject, username = 'kubernetes-admin'): AdmissionRequest {
  return { uid: 'u-1', operation: 'CREATE', namespace: 'apps', userInfo: { username }, object };
}

const GUARD = { op: 'add', path: '/spec/template/spec/initContainers', value: [DEFAULT_GUARD_CONTAINER] };
const TTL_RAISED = { op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 };
const FINALIZER_REMOVED = { op: 'remove', path: '/metadata/finalizers' };

describe('decide with the built-in rules, two Argo CDs and nothing saying which applied the hook', () => {
  const twoInstances = (...versions: [string, string]): DecisionContext => ({
    ...context,
    argocdInstances: new Map([instance('argocd', versions[0]), instance('team-b', versions[1])]),
  });

  it('adds the guard and the TTL floor, keeps the finalizer, and says it judged a union', () => {
    const decision = decide(request(syncHook()), 'mutate', twoInstances('2.14.3', '3.1.0'));
    expect(decision.patch).toEqual([TTL_RAISED, GUARD]);
    expect(decision.argocdVersion).toBeUndefined();
    expect(decision.argocdVersionFrom).toEqual({
      by: 'union',
      candidates: [
        { instance: 'argocd', version: '2.14.3' },
        { instance: 'team-b', version: '3.1.0' },
      ],
    });
  });

  it('denies nothing on a union, where one known version would be denied', () => {
    const optedOut = syncHook({ 'hookguard.io/skip': 'min-runtime' });
    expect(decide(request(optedOut), 'validate', twoInstances('2.14.3', '3.1.0'))).toMatchObject({
      allowed: true,
      findings: [],
    });
    const fromArgocd = decide(
      request(optedOut, 'system:serviceaccount:argocd:argocd-application-controller'),
      'validate',
      twoInstances('2.14.3', '3.1.0'),
    );
    expect(fromArgocd).toMatchObject({ allowed: false, argocdVersion: '2.14.3' });
  });

  it('narrows the union to the Argo CD that adds the finalizer the CREATE carries, at admission', () => {
    const decision = decide(request(syncHook()), 'mutate', twoInstances('2.14.8', '3.1.0'));
    expect(decision).toMatchObject({
      argocdVersion: '3.1.0',
      argocdVersionFrom: { by: 'hook-finalizer', instance: 'team-b' },
      patch: [TTL_RAISED, GUARD],
    });
    // The same manifest at render time carries a finalizer its author wrote, not Argo CD: the union stays.
    const rendered = decide(request(syncHook()), 'mutate', { ...twoInstances('2.14.8', '3.1.0'), stage: 'render' });
    expect(rendered.argocdVersionFrom).toMatchObject({ by: 'union' });
  });

  it('judges a configured remote identity by its version, not the local instance', () => {
    const remote: DecisionContext = {
      ...context,
      argocdInstances: new Map([instance('argocd', '2.14.3')]),
      remoteArgo: [{ username: 'system:serviceaccount:kube-system:argocd-manager', version: '3.4.0' }],
    };
    const decision = decide(request(syncHook(), 'system:serviceaccount:kube-system:argocd-manager'), 'mutate', remote);
    expect(decision).toMatchObject({
      argocdVersion: '3.4.0',
      argocdVersionFrom: { by: 'remote', remote: 'system:serviceaccount:kube-system:argocd-manager' },
      // Nothing for 3.4.0's races.
      patch: [],
    });
    expect(decision.patch).not.toContainEqual(FINALIZER_REMOVED);
  });
});
