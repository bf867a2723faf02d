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
    expect(report.mutations).toEqual(
      ttl === expected
        ? []
        : [
            `raised spec.ttlSecondsAfterFinished from ${ttl} to 60: a hook Job deleted before Argo CD saw it finish can leave the sync waiting`,
          ],
    );
  });

  // Each change says why for the tool that runs the hook, and names the advisory: a Helm hook's is helm-hook-ttl-wait
  // (helm#31786) under Helm 4 or an unknown Helm; Helm 3 gets the floor too (it costs nothing there), naming none.
  const HELM_WHY = 'Helm 4 waits until --timeout for a hook Job deleted before it saw the Job finish';
  it.each([
    [
      'a Helm hook, Helm unknown',
      { 'helm.sh/hook': 'pre-install' },
      'kubernetes-admin',
      {},
      undefined,
      HELM_WHY,
      'helm-hook-ttl-wait',
    ],
    [
      'a Helm hook under Helm 4.1.4',
      { 'helm.sh/hook': 'pre-install' },
      'kubernetes-admin',
      { 'helm.version': '4.1.4' },
      undefined,
      HELM_WHY,
      'helm-hook-ttl-wait',
    ],
    [
      'a Helm hook under Helm 3.21.4',
      { 'helm.sh/hook': 'pre-install' },
      'kubernetes-admin',
      { 'helm.version': '3.21.4' },
      undefined,
      HELM_WHY,
      undefined,
    ],
    [
      'an Argo CD sync hook under 2.14.8',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      ARGOCD_CONTROLLER,
      {},
      '2.14.8',
      'a hook Job deleted before Argo CD saw it finish can leave the sync waiting',
      'argocd-hook-ttl-race',
    ],
    [
      'an Argo CD PostDelete hook',
      { 'argocd.argoproj.io/hook': 'PostDelete' },
      ARGOCD_CONTROLLER,
      {},
      '3.4.0',
      'Argo CD runs a delete hook again when it is gone before Argo CD saw it finish',
      undefined,
    ],
  ])('says why, for %s', (_name, annotations, username, config, argocdVersion, why, advisory) => {
    const context = decisionContext(loadConfig({ overrides: config }), argocdVersion, 'render');
    const request = { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username } };
    const object = hookJob(annotations, { ttlSecondsAfterFinished: 5 });
    const decision = decide({ ...request, object }, 'mutate', context);
    const message = `raised spec.ttlSecondsAfterFinished from 5 to 60: ${why}`;
    expect(decision.findings.filter((finding) => finding.rule === 'ttl-floor')).toEqual([
      advisory
        ? { rule: 'ttl-floor', action: 'mutate', message, advisory }
        : { rule: 'ttl-floor', action: 'mutate', message },
    ]);
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
