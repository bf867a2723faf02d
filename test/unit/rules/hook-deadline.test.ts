import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../../../src/core/types.js';
import { hookDeadline } from '../../../src/rules/hook-deadline.js';
import { minRuntime } from '../../../src/rules/min-runtime.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob } from '../../support/objects.js';

const argo = { 'argocd.argoproj.io/hook': 'PreSync' };

describe('hook-deadline', () => {
  it.each([
    ['no deadline', {}, 3600, ['set spec.activeDeadlineSeconds: 3600']],
    [
      'a null deadline (an empty Helm value)',
      { activeDeadlineSeconds: null },
      3600,
      ['set spec.activeDeadlineSeconds: 3600'],
    ],
    ['a short deadline of its own', { activeDeadlineSeconds: 60 }, 60, []],
    ['a long deadline of its own', { activeDeadlineSeconds: 86400 }, 86400, []],
    ['a deadline of 0 (fails at once, but the chart chose it)', { activeDeadlineSeconds: 0 }, 0, []],
  ])('a Job with %s ends with activeDeadlineSeconds %j', (_name, spec, expected, mutations) => {
    const job = hookJob(undefined, spec);
    const report = hookDeadline.mutate(job, contextFor(job));
    expect((job.spec as JobSpec).activeDeadlineSeconds).toBe(expected);
    expect(report).toEqual({ mutations, warnings: [] });
  });

  it.each([
    ['600', {}, 600],
    ['0 (off)', { 'rules.hookDeadline.activeDeadlineSeconds': '0' }, undefined],
  ])('follows rules.hookDeadline.activeDeadlineSeconds: %s', (_name, config, expected) => {
    const job = hookJob();
    const overrides = { 'rules.hookDeadline.activeDeadlineSeconds': '600', ...config };
    hookDeadline.mutate(job, contextFor(job, { config: overrides }));
    expect((job.spec as JobSpec).activeDeadlineSeconds).toBe(expected);
  });

  it.each([
    ['the default 10 s guard', argo, 3610],
    ['a guard asked for 3600 s', { ...argo, 'hookguard.io/min-runtime-seconds': '3600' }, 7200],
  ])('counts the deadline from after %s, so it always outlasts it', (_name, annotations, expected) => {
    const job = hookJob(annotations);
    const context = contextFor(job, { username: ARGOCD_CONTROLLER, argocdVersion: '2.14.8' });
    minRuntime.mutate(job, context);
    const report = hookDeadline.mutate(job, context);
    expect((job.spec as JobSpec).activeDeadlineSeconds).toBe(expected);
    expect(report.mutations[0]).toMatch(new RegExp(`^set spec.activeDeadlineSeconds: ${expected} \\(3600 after the`));
    // min-runtime, run again on the result (reinvocation), finds its guard and a deadline long enough.
    expect(minRuntime.mutate(job, context)).toEqual({ mutations: [], warnings: [] });
  });

  it('runs on every hook Job, Helm or Argo CD, at admission and at render time; never on Pods', () => {
    expect([hookDeadline.gate, hookDeadline.kinds, hookDeadline.stages]).toEqual([
      'always',
      ['Job'],
      ['admission', 'render'],
    ]);
  });
});
