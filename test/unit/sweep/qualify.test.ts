import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import {
  applicationsOf,
  formatAge,
  judgeByApplications,
  qualifyHook,
  type ApplicationRead,
  withoutFinalizer,
  type Qualification,
  type SweptKind,
} from '../../../src/sweep/qualify.js';
import { HOOK_FINALIZER } from '../../support/objects.js';

const NOW = new Date('2026-11-22T12:00:00Z');
const TIMING = { minAgeSeconds: 600, finishedGraceSeconds: 300 };
const secondsAgo = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();

interface Shape {
  deletedSecondsAgo?: number;
  finalizers?: string[];
  annotations?: Record<string, string>;
  status?: Record<string, unknown>;
}

function object(kind: SweptKind, shape: Shape): KubeObject {
  return {
    metadata: {
      name: 'migrate',
      namespace: 'apps',
      finalizers: shape.finalizers ?? [HOOK_FINALIZER],
      annotations: shape.annotations ?? { 'argocd.argoproj.io/hook': 'PreSync' },
      ...(shape.deletedSecondsAgo !== undefined ? { deletionTimestamp: secondsAgo(shape.deletedSecondsAgo) } : {}),
    },
    status: shape.status ?? {},
  };
}

const complete = { conditions: [{ type: 'Complete', status: 'True' }] };
const failed = {
  conditions: [
    { type: 'FailureTarget', status: 'True' },
    { type: 'Failed', status: 'True' },
  ],
};

describe('qualifyHook (the argocd-hook profile)', () => {
  it.each<[string, SweptKind, Shape, Qualification]>([
    [
      'a complete Job deleting for the grace period',
      'Job',
      { deletedSecondsAgo: 300, status: complete },
      {
        qualifies: true,
        reasons: ['Argo CD PreSync hook', 'Job Complete', 'deleting for 5m0s, at least 5m0s'],
        ageSeconds: 300,
      },
    ],
    [
      'a complete Job deleting for just under the grace period (Argo CD may not have seen it finish)',
      'Job',
      { deletedSecondsAgo: 299, status: complete },
      {
        qualifies: false,
        reason: 'Job Complete and deleting for 4m59s, under 5m0s: Argo CD may not have recorded its result yet',
        ageSeconds: 299,
      },
    ],
    [
      'a complete Job whose deletion just began (its TTL)',
      'Job',
      { deletedSecondsAgo: 1, status: complete },
      {
        qualifies: false,
        reason: 'Job Complete and deleting for 1s, under 5m0s: Argo CD may not have recorded its result yet',
        ageSeconds: 1,
      },
    ],
    [
      'a failed Job being deleted',
      'Job',
      { deletedSecondsAgo: 305, status: failed },
      {
        qualifies: true,
        reasons: ['Argo CD PreSync hook', 'Job Failed', 'deleting for 5m5s, at least 5m0s'],
        ageSeconds: 305,
      },
    ],
    [
      'a succeeded Pod',
      'Pod',
      { deletedSecondsAgo: 361, status: { phase: 'Succeeded' } },
      {
        qualifies: true,
        reasons: ['Argo CD PreSync hook', 'Pod Succeeded', 'deleting for 6m1s, at least 5m0s'],
        ageSeconds: 361,
      },
    ],
    [
      'a failed Pod, Helm hook',
      'Pod',
      { deletedSecondsAgo: 3601, annotations: { 'helm.sh/hook': 'post-upgrade' }, status: { phase: 'Failed' } },
      {
        qualifies: true,
        reasons: ['Helm post-upgrade hook', 'Pod Failed', 'deleting for 1h0m1s, at least 5m0s'],
        ageSeconds: 3601,
      },
    ],
    [
      'a succeeded Pod deleting for 1s',
      'Pod',
      { deletedSecondsAgo: 1, status: { phase: 'Succeeded' } },
      {
        qualifies: false,
        reason: 'Pod Succeeded and deleting for 1s, under 5m0s: Argo CD may not have recorded its result yet',
        ageSeconds: 1,
      },
    ],
    [
      'a running Job deleted longer than the minimum age',
      'Job',
      { deletedSecondsAgo: 600 },
      {
        qualifies: true,
        reasons: ['Argo CD PreSync hook', 'not finished', 'deleting for 10m0s, at least 10m0s'],
        ageSeconds: 600,
      },
    ],
    [
      'a running Pod deleted hours ago',
      'Pod',
      { deletedSecondsAgo: 7322, status: { phase: 'Running' } },
      {
        qualifies: true,
        reasons: ['Argo CD PreSync hook', 'not finished', 'deleting for 2h2m2s, at least 10m0s'],
        ageSeconds: 7322,
      },
    ],
    [
      'a running Job deleted just under the minimum age',
      'Job',
      { deletedSecondsAgo: 599 },
      {
        qualifies: false,
        reason: 'still running and deleting for 9m59s, under 10m0s: Argo CD may still remove it',
        ageSeconds: 599,
      },
    ],
    [
      'a Job whose Complete condition is False',
      'Job',
      { deletedSecondsAgo: 30, status: { conditions: [{ type: 'Complete', status: 'False' }] } },
      {
        qualifies: false,
        reason: 'still running and deleting for 30s, under 10m0s: Argo CD may still remove it',
        ageSeconds: 30,
      },
    ],
    [
      'a Pod phase is no Job condition',
      'Job',
      { deletedSecondsAgo: 30, status: { phase: 'Succeeded' } },
      {
        qualifies: false,
        reason: 'still running and deleting for 30s, under 10m0s: Argo CD may still remove it',
        ageSeconds: 30,
      },
    ],
    [
      'a complete Job not being deleted',
      'Job',
      { status: complete },
      { qualifies: false, reason: 'not being deleted' },
    ],
    [
      'without the hook finalizer',
      'Job',
      { deletedSecondsAgo: 3000, finalizers: ['example.com/keep'], status: complete },
      { qualifies: false, reason: 'no argocd.argoproj.io/hook-finalizer', ageSeconds: 3000 },
    ],
    [
      'not a hook',
      'Job',
      { deletedSecondsAgo: 3000, annotations: {}, status: complete },
      { qualifies: false, reason: 'not a hook: no Argo CD or Helm hook annotation', ageSeconds: 3000 },
    ],
    [
      'a deletion timestamp in the future (clock skew) counts as 0s',
      'Job',
      { deletedSecondsAgo: -20, status: complete },
      {
        qualifies: false,
        reason: 'Job Complete and deleting for 0s, under 5m0s: Argo CD may not have recorded its result yet',
        ageSeconds: 0,
      },
    ],
  ])('%s', (_name, kind, shape, expected) => {
    expect(qualifyHook(kind, object(kind, shape), NOW, TIMING)).toEqual(expected);
  });

  it('reads a deletion timestamp that is not a date as "not being deleted"', () => {
    const broken = object('Job', { status: complete });
    broken.metadata!.deletionTimestamp = 'yesterday';
    expect(qualifyHook('Job', broken, NOW, TIMING)).toEqual({ qualifies: false, reason: 'not being deleted' });
  });

  it('takes minAgeSeconds and finishedGraceSeconds 0 to mean every hook being deleted', () => {
    const none = { minAgeSeconds: 0, finishedGraceSeconds: 0 };
    expect(qualifyHook('Job', object('Job', { deletedSecondsAgo: 0 }), NOW, none)).toMatchObject({ qualifies: true });
    expect(qualifyHook('Job', object('Job', { deletedSecondsAgo: 0, status: complete }), NOW, none)).toMatchObject({
      qualifies: true,
    });
  });
});

const LOOKUP = {
  instanceLabels: ['app.kubernetes.io/instance'],
  controlPlaneNamespaces: ['argocd', 'openshift-gitops'],
};

describe("applicationsOf (a hook's Applications, by tracking id and instance label)", () => {
  const tracked = (annotations: Record<string, string>, labels: Record<string, string> = {}) => ({
    metadata: { name: 'migrate', namespace: 'apps', annotations, labels },
  });
  it.each<[string, KubeObject, Array<{ namespace: string; name: string }>]>([
    [
      "a tracking id of an Application in Argo CD's namespace: looked for in each control-plane namespace",
      tracked({ 'argocd.argoproj.io/tracking-id': 'shop:batch/Job:apps/migrate' }),
      [
        { namespace: 'argocd', name: 'shop' },
        { namespace: 'openshift-gitops', name: 'shop' },
      ],
    ],
    [
      'a tracking id of an Application in another namespace (<namespace>_<name>)',
      tracked({ 'argocd.argoproj.io/tracking-id': 'team-a_shop:batch/Job:apps/migrate' }),
      [{ namespace: 'team-a', name: 'shop' }],
    ],
    [
      'the instance label (label tracking)',
      tracked({}, { 'app.kubernetes.io/instance': 'team-a_shop' }),
      [{ namespace: 'team-a', name: 'shop' }],
    ],
    [
      'both, naming the same Application: read once',
      tracked(
        { 'argocd.argoproj.io/tracking-id': 'team-a_shop:batch/Job:apps/migrate' },
        { 'app.kubernetes.io/instance': 'team-a_shop' },
      ),
      [{ namespace: 'team-a', name: 'shop' }],
    ],
    [
      'both, naming different ones (Helm set the label to its release): each is read',
      tracked(
        { 'argocd.argoproj.io/tracking-id': 'team-a_shop:batch/Job:apps/migrate' },
        { 'app.kubernetes.io/instance': 'shop-release' },
      ),
      [
        { namespace: 'team-a', name: 'shop' },
        { namespace: 'argocd', name: 'shop-release' },
        { namespace: 'openshift-gitops', name: 'shop-release' },
      ],
    ],
    ['neither: a Helm hook Argo CD did not apply', tracked({}), []],
    ['a tracking id without a colon names nothing', tracked({ 'argocd.argoproj.io/tracking-id': 'shop' }), []],
  ])('%s', (_name, hook, refs) => {
    expect(applicationsOf(hook, LOOKUP)).toEqual(refs);
  });
});

describe("judgeByApplications (never while the Application's operation lists the hook as running)", () => {
  const hook = object('Job', { deletedSecondsAgo: 400, status: complete });
  const alone = qualifyHook('Job', hook, NOW, TIMING);
  const ref = { namespace: 'argocd', name: 'shop' };
  const application = (phase: string | undefined, resources: Array<Record<string, unknown>>) => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'shop', namespace: 'argocd' },
    status: phase === undefined ? {} : { operationState: { phase, syncResult: { resources } } },
  });
  const result = (hookPhase: string | undefined, extra: Record<string, unknown> = {}) => ({
    group: 'batch',
    version: 'v1',
    kind: 'Job',
    namespace: 'apps',
    name: 'migrate',
    hookType: 'PreSync',
    ...(hookPhase !== undefined ? { hookPhase } : {}),
    ...extra,
  });
  const stays = (reason: string): Qualification => ({ qualifies: false, reason, ageSeconds: 400 });
  const goes = (...reasons: string[]): Qualification => ({
    qualifies: true,
    reasons: ['Argo CD PreSync hook', 'Job Complete', 'deleting for 6m40s, at least 5m0s', ...reasons],
    ageSeconds: 400,
  });

  it.each<[string, ApplicationRead['application'][], Qualification]>([
    [
      'a Running operation listing the hook as Running',
      [application('Running', [result('Running')])],
      stays(
        'Application argocd/shop: its Running operation lists the hook as Running; Argo CD has not recorded its result',
      ),
    ],
    [
      'a Terminating operation listing the hook as Terminating',
      [application('Terminating', [result('Terminating')])],
      stays(
        'Application argocd/shop: its Terminating operation lists the hook as Terminating; Argo CD has not recorded its result',
      ),
    ],
    [
      'a Running operation listing the hook without a hookPhase',
      [application('Running', [result(undefined)])],
      stays(
        'Application argocd/shop: its Running operation lists the hook as not started; Argo CD has not recorded its result',
      ),
    ],
    [
      'one of two Applications waits: that one wins',
      [null, application('Running', [result('Running')])],
      stays(
        'Application argocd/shop: its Running operation lists the hook as Running; Argo CD has not recorded its result',
      ),
    ],
    [
      'a Running operation that recorded the hook as Succeeded',
      [application('Running', [result('Succeeded')])],
      goes('Application argocd/shop does not wait for it'),
    ],
    [
      'a finished operation still listing the hook as Running (its controller gave up)',
      [application('Failed', [result('Running')])],
      goes('Application argocd/shop does not wait for it'),
    ],
    [
      'a Running operation listing another Job of that name in another namespace',
      [application('Running', [result('Running', { namespace: 'other' })])],
      goes('Application argocd/shop does not wait for it'),
    ],
    [
      'a Running operation listing a Pod of that name',
      [application('Running', [result('Running', { group: '', kind: 'Pod' })])],
      goes('Application argocd/shop does not wait for it'),
    ],
    ['no operation at all', [application(undefined, [])], goes('Application argocd/shop does not wait for it')],
    ['no Application there (404)', [null], goes('no Application found (argocd/shop)')],
    ['RBAC refuses it (403)', ['forbidden'], goes('Application argocd/shop unreadable (403)')],
  ])('%s', (_name, applications, expected) => {
    const reads = applications.map((read) => ({ ref, application: read }));
    expect(judgeByApplications('Job', hook, alone, reads)).toEqual(expected);
  });

  it('leaves a verdict that does not qualify, or a hook without Applications, as it is', () => {
    const young = qualifyHook('Job', object('Job', { deletedSecondsAgo: 3, status: complete }), NOW, TIMING);
    expect(judgeByApplications('Job', hook, young, [{ ref, application: null }])).toBe(young);
    expect(judgeByApplications('Job', hook, alone, [])).toBe(alone);
  });
});

describe('withoutFinalizer', () => {
  it.each([
    [[HOOK_FINALIZER], []],
    [
      ['a/first', HOOK_FINALIZER, 'b/last'],
      ['a/first', 'b/last'],
    ],
    [['a/only'], ['a/only']],
    [[HOOK_FINALIZER, 'a/x', HOOK_FINALIZER], ['a/x']],
  ])('%j -> %j', (before, after) => {
    expect(withoutFinalizer(before, HOOK_FINALIZER)).toEqual(after);
  });
});

describe('formatAge', () => {
  it.each([
    [0, '0s'],
    [59.9, '59s'],
    [60, '1m0s'],
    [3600, '1h0m0s'],
    [-3, '0s'],
  ])('%d -> %s', (seconds, text) => {
    expect(formatAge(seconds)).toBe(text);
  });
});
