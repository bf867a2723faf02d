import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
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

  // Helm 4 waits until --timeout for a hook Job its TTL deleted (helm#31786); Argo CD only races on some versions.
  it.each([
    ['a Helm hook Helm applies', 'kubernetes-admin', undefined, true],
    ['a hook Argo CD applies, version unknown', ARGOCD_CONTROLLER, undefined, true],
    ['a hook Argo CD 2.14.8 applies (no hook finalizer: the TTL race)', ARGOCD_CONTROLLER, '2.14.8', true],
    ['a hook Argo CD 3.4.0 applies (no advisory names ttl-floor)', ARGOCD_CONTROLLER, '3.4.0', false],
  ])('runs on %s: %s', (_name, username, argocdVersion, runs) => {
    for (const stage of ['admission', 'render'] as const) {
      const context = decisionContext(loadConfig(), argocdVersion, stage);
      const request = {
        uid: 'u',
        operation: 'CREATE',
        namespace: 'apps',
        userInfo: { username },
        object: hookJob(undefined, { ttlSecondsAfterFinished: 0 }),
      };
      const decision = decide(request, 'mutate', context);
      expect(decision.rules.includes('ttl-floor'), stage).toBe(runs);
      expect(
        decision.patch.some((op) => op.path === '/spec/ttlSecondsAfterFinished'),
        stage,
      ).toBe(runs);
    }
  });

  it('acts on Jobs only', () => {
    expect(ttlFloor.kinds).toEqual(['Job']);
    expect(ttlFloor.gate).toBe('helm-and-argocd');
  });
});
