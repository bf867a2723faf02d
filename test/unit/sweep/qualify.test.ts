import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import {
  formatAge,
  qualifyHook,
  withoutFinalizer,
  type Qualification,
  type SweptKind,
} from '../../../src/sweep/qualify.js';
import { HOOK_FINALIZER } from '../../support/objects.js';

const NOW = new Date('2026-11-22T12:00:00Z');
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
      'a complete Job being deleted',
      'Job',
      { deletedSecondsAgo: 30, status: complete },
      { qualifies: true, reasons: ['Argo CD PreSync hook', 'Job Complete', 'deleting for 30s'], ageSeconds: 30 },
    ],
    [
      'a failed Job being deleted',
      'Job',
      { deletedSecondsAgo: 5, status: failed },
      { qualifies: true, reasons: ['Argo CD PreSync hook', 'Job Failed', 'deleting for 5s'], ageSeconds: 5 },
    ],
    [
      'a succeeded Pod',
      'Pod',
      { deletedSecondsAgo: 61, status: { phase: 'Succeeded' } },
      { qualifies: true, reasons: ['Argo CD PreSync hook', 'Pod Succeeded', 'deleting for 1m1s'], ageSeconds: 61 },
    ],
    [
      'a failed Pod, Helm hook',
      'Pod',
      { deletedSecondsAgo: 1, annotations: { 'helm.sh/hook': 'post-upgrade' }, status: { phase: 'Failed' } },
      { qualifies: true, reasons: ['Helm post-upgrade hook', 'Pod Failed', 'deleting for 1s'], ageSeconds: 1 },
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
      { qualifies: true, reasons: ['Argo CD PreSync hook', 'Job Complete', 'deleting for 0s'], ageSeconds: 0 },
    ],
  ])('%s', (_name, kind, shape, expected) => {
    expect(qualifyHook(kind, object(kind, shape), NOW, 600)).toEqual(expected);
  });

  it('reads a deletion timestamp that is not a date as "not being deleted"', () => {
    const broken = object('Job', { status: complete });
    broken.metadata!.deletionTimestamp = 'yesterday';
    expect(qualifyHook('Job', broken, NOW, 600)).toEqual({ qualifies: false, reason: 'not being deleted' });
  });

  it('takes minAgeSeconds 0 to mean every hook being deleted', () => {
    expect(qualifyHook('Job', object('Job', { deletedSecondsAgo: 0 }), NOW, 0)).toMatchObject({ qualifies: true });
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
