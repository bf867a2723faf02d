import { describe, expect, it } from 'vitest';
import type { JobSpec, KubeObject } from '../../../src/core/types.js';
import { hookDeadline, MISSING_DEADLINE_WARNING } from '../../../src/rules/hook-deadline.js';
import { minRuntime } from '../../../src/rules/min-runtime.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob, hookPod } from '../../support/objects.js';

const argo = { 'argocd.argoproj.io/hook': 'PreSync' };
const ENFORCE = { 'rules.hookDeadline.activeDeadlineSeconds': '3600' };
const WARNING = 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';

const deadlineOf = (object: KubeObject) => (object.spec as JobSpec).activeDeadlineSeconds;

describe('hook-deadline', () => {
  it('says the text a user reads, within the 120 characters an admission warning should keep to', () => {
    expect(MISSING_DEADLINE_WARNING).toBe(WARNING);
    expect(`hookguard audit note [hook-deadline]: ${WARNING}`.length).toBeLessThanOrEqual(120);
  });

  it.each([
    ['no deadline', {}],
    ['a null deadline (an empty Helm value)', { activeDeadlineSeconds: null }],
    ['completions 5', { completions: 5 }],
  ])('by default sets none on a Job with %s and names the missing one', (_name, spec) => {
    const job = hookJob(undefined, spec);
    const before = structuredClone(job);
    expect(hookDeadline.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [WARNING] });
    expect(job).toEqual(before);
  });

  it('by default names the missing deadline of a bare hook Pod too, and sets none', () => {
    const pod = hookPod({ 'helm.sh/hook': 'test' });
    expect(hookDeadline.mutate(pod, contextFor(pod))).toEqual({ mutations: [], warnings: [WARNING] });
    expect(deadlineOf(pod)).toBeUndefined();
  });

  it.each([
    ['a short deadline of its own', { activeDeadlineSeconds: 60 }, 60],
    ['a long deadline of its own', { activeDeadlineSeconds: 86400 }, 86400],
    ['a deadline of 0 (fails at once, but the chart chose it)', { activeDeadlineSeconds: 0 }, 0],
  ])('leaves a Job with %s alone, silently, enforced or not', (_name, spec, expected) => {
    for (const config of [{}, ENFORCE]) {
      const job = hookJob(undefined, spec);
      expect(hookDeadline.mutate(job, contextFor(job, { config }))).toEqual({ mutations: [], warnings: [] });
      expect(deadlineOf(job)).toBe(expected);
    }
  });

  it('rules.hookDeadline.warn: false silences the warning', () => {
    const job = hookJob();
    const context = contextFor(job, { config: { 'rules.hookDeadline.warn': 'false' } });
    expect(hookDeadline.mutate(job, context)).toEqual({ mutations: [], warnings: [] });
  });

  it.each([
    ['a Job', hookJob(), 600],
    ['a Job with a null deadline', hookJob(undefined, { activeDeadlineSeconds: null }), 600],
    ['a bare Pod', hookPod({ 'helm.sh/hook': 'pre-install' }), 600],
    ['a Job with completions 1 and parallelism 1', hookJob(undefined, { completions: 1, parallelism: 1 }), 600],
  ])('opted in with rules.hookDeadline.activeDeadlineSeconds, sets it on %s', (_name, object, expected) => {
    const context = contextFor(object, { config: { 'rules.hookDeadline.activeDeadlineSeconds': '600' } });
    expect(hookDeadline.mutate(object, context)).toEqual({
      mutations: [
        `set spec.activeDeadlineSeconds: ${expected}: a hook whose Pod never starts fails then instead of waiting forever`,
      ],
      warnings: [],
    });
    expect(deadlineOf(object)).toBe(expected);
  });

  it.each([
    ['completions 3', { completions: 3 }],
    ['parallelism 2', { parallelism: 2 }],
  ])('opted in, leaves a Job with %s without one unless rules.hookDeadline.parallelJobs', (_name, spec) => {
    const job = hookJob(undefined, spec);
    expect(hookDeadline.mutate(job, contextFor(job, { config: ENFORCE }))).toEqual({
      mutations: [],
      warnings: [WARNING],
    });
    expect(deadlineOf(job)).toBeUndefined();
    const asked = contextFor(job, { config: { ...ENFORCE, 'rules.hookDeadline.parallelJobs': 'true' } });
    expect(hookDeadline.mutate(job, asked).mutations).toEqual([
      'set spec.activeDeadlineSeconds: 3600: a hook whose Pod never starts fails then instead of waiting forever',
    ]);
    expect(deadlineOf(job)).toBe(3600);
  });

  it.each([
    ['the default 10 s guard', argo, 3610],
    ['a guard asked for 3600 s', { ...argo, 'hookguard.io/min-runtime-seconds': '3600' }, 7200],
  ])('opted in, counts the deadline from after %s, so it always outlasts it', (_name, annotations, expected) => {
    const job = hookJob(annotations);
    const context = contextFor(job, { username: ARGOCD_CONTROLLER, argocdVersion: '3.1.0', config: ENFORCE });
    minRuntime.mutate(job, context);
    const report = hookDeadline.mutate(job, context);
    expect(deadlineOf(job)).toBe(expected);
    expect(report.mutations[0]).toMatch(new RegExp(`^set spec.activeDeadlineSeconds: ${expected} \\(3600 after the`));
    // min-runtime, run again on the result (reinvocation), finds its guard and a deadline long enough.
    expect(minRuntime.mutate(job, context)).toEqual({ mutations: [], warnings: [] });
  });

  it('runs on every hook Job and bare hook Pod, Helm or Argo CD, at admission and at render time', () => {
    expect([hookDeadline.gate, hookDeadline.kinds, hookDeadline.stages]).toEqual([
      'always',
      ['Job', 'Pod'],
      ['admission', 'render'],
    ]);
  });
});
