import { describe, expect, it } from 'vitest';
import { ttlFloor } from '../../../src/rules/ttl-floor.js';
import { contextFor, hookJob, ARGOCD_CONTROLLER } from '../../support/objects.js';

describe('ttl-floor', () => {
  it.each([
    [0, 60],
    [59, 60],
    [60, 60],
    [3600, 3600],
  ])('ttlSecondsAfterFinished %i becomes %i', (ttl, expected) => {
    const job = hookJob(undefined, { ttlSecondsAfterFinished: ttl });
    const report = ttlFloor.mutate(job, contextFor(job, { username: ARGOCD_CONTROLLER, argocdVersion: '2.14.8' }));
    expect(job.spec?.ttlSecondsAfterFinished).toBe(expected);
    expect(report.mutations).toEqual(ttl === expected ? [] : [`raised spec.ttlSecondsAfterFinished from ${ttl} to 60`]);
  });

  it('leaves a Job without a TTL alone (it is never deleted by TTL)', () => {
    const job = hookJob();
    ttlFloor.mutate(job, contextFor(job));
    expect(job.spec).not.toHaveProperty('ttlSecondsAfterFinished');
  });

  it('is gated to Argo CD-applied hooks on affected or unknown versions', () => {
    expect(ttlFloor.gate).toBe('argocd');
    expect(ttlFloor.kinds).toEqual(['Job']);
  });
});
