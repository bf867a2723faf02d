import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { guardContainer, GUARD_CONTAINER_NAME, minRuntime } from '../../../src/rules/min-runtime.js';
import type { Container, JobSpec } from '../../../src/core/types.js';
import { contextFor, DEFAULT_GUARD_CONTAINER, hookJob, hookPod } from '../../support/objects.js';

const settings = loadConfig().rules.minRuntime;
const argo = { 'argocd.argoproj.io/hook': 'PreSync' };

function initContainersOf(spec: unknown): Container[] | undefined {
  return (spec as JobSpec).template?.spec?.initContainers;
}

describe('min-runtime', () => {
  it('adds a restricted, resource-bounded wait as the last init container', () => {
    const job = hookJob(argo);
    const report = minRuntime.mutate(job, contextFor(job));
    expect(initContainersOf(job.spec)).toEqual([DEFAULT_GUARD_CONTAINER]);
    expect(report).toEqual({ mutations: [`added init container ${GUARD_CONTAINER_NAME} waiting 10s`], warnings: [] });
  });

  it('appends after the chart’s own init containers', () => {
    const job = hookJob(argo);
    const spec = job.spec as JobSpec;
    spec.template!.spec!.initContainers = [{ name: 'probe', image: 'curl' }];
    minRuntime.mutate(job, contextFor(job));
    expect(initContainersOf(job.spec)?.map((container) => container.name)).toEqual(['probe', GUARD_CONTAINER_NAME]);
  });

  it.each([
    ['30', 30, []],
    [' 45 ', 45, []],
    ['abc', 10, ['hookguard.io/min-runtime-seconds="abc" is not an integer 0..3600; using 10']],
    ['-5', 10, ['hookguard.io/min-runtime-seconds="-5" is not an integer 0..3600; using 10']],
    ['99999', 10, ['hookguard.io/min-runtime-seconds="99999" is not an integer 0..3600; using 10']],
  ])('annotation %j waits %i seconds', (value, seconds, warnings) => {
    const job = hookJob({ ...argo, 'hookguard.io/min-runtime-seconds': value });
    const report = minRuntime.mutate(job, contextFor(job));
    expect(initContainersOf(job.spec)?.[0]?.command).toEqual(['sleep', String(seconds)]);
    expect(report.warnings).toEqual(warnings);
  });

  it.each([
    [
      'a Job activeDeadlineSeconds too short for the guard',
      argo,
      { activeDeadlineSeconds: 10 },
      'activeDeadlineSeconds 10 leaves no time after a 10s guard; raise it or lower hookguard.io/min-runtime-seconds',
    ],
    [
      'an annotation of 0',
      { ...argo, 'hookguard.io/min-runtime-seconds': '0' },
      {},
      'hookguard.io/min-runtime-seconds is 0',
    ],
  ])('reports, and does not change, %s', (_name, annotations, spec, unmet) => {
    const job = hookJob(annotations, spec);
    const before = structuredClone(job);
    const report = minRuntime.mutate(job, contextFor(job));
    expect(job).toEqual(before);
    expect(report.unmet).toBe(unmet);
  });

  it('fits a guard inside a longer deadline', () => {
    const job = hookJob(argo, { activeDeadlineSeconds: 600 });
    expect(minRuntime.mutate(job, contextFor(job)).unmet).toBeUndefined();
    expect(initContainersOf(job.spec)).toHaveLength(1);
  });

  it('guards bare Pods in spec.initContainers', () => {
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'Sync' });
    minRuntime.mutate(pod, contextFor(pod));
    expect((pod.spec?.initContainers as Container[])[0]).toEqual(guardContainer(10, settings));
  });

  it('is idempotent: an existing guard is left as it is', () => {
    const job = hookJob(argo);
    minRuntime.mutate(job, contextFor(job));
    const once = structuredClone(job);
    expect(minRuntime.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [] });
    expect(job).toEqual(once);
  });
});
