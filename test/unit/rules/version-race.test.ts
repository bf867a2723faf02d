import { describe, expect, it } from 'vitest';
import { builtInRules } from '../../../src/rules/index.js';
import { versionRace } from '../../../src/rules/version-race.js';
import type { JobSpec, KubeObject } from '../../../src/core/types.js';
import { ARGOCD_CONTROLLER, contextFor, HOOK_FINALIZER, hookJob } from '../../support/objects.js';

/** The object as the mutating webhook would have stored it. */
function mutated(object: KubeObject, argocdVersion: string | undefined): KubeObject {
  const context = contextFor(object, { username: ARGOCD_CONTROLLER, argocdVersion });
  for (const rule of builtInRules.mutations) if (!context.hook.skip.has(rule.id)) rule.mutate(object, context);
  return object;
}

function judge(object: KubeObject, argocdVersion: string | undefined) {
  return versionRace.validate(
    object,
    contextFor(object, { username: ARGOCD_CONTROLLER, argocdVersion }),
    builtInRules.mutations,
  );
}

describe('version-race', () => {
  it.each(['2.13.3', '2.14.3', '2.14.8', '3.1.0', '3.4.0'])('allows a fully mitigated hook on %s', (version) => {
    expect(judge(mutated(hookJob(undefined, { ttlSecondsAfterFinished: 0 }), version), version)).toEqual([]);
  });

  it.each([
    ['3.1.0', 'min-runtime', {}, ['argocd-fast-hook-finalizer-race'], 'min-runtime opted out with hookguard.io/skip'],
    [
      '3.1.0',
      'ttl-floor',
      { ttlSecondsAfterFinished: 0 },
      ['argocd-fast-hook-finalizer-race'],
      'ttl-floor opted out with hookguard.io/skip',
    ],
    [
      '2.13.3',
      'ttl-floor',
      { ttlSecondsAfterFinished: 5 },
      ['argocd-hook-ttl-race'],
      'ttl-floor opted out with hookguard.io/skip',
    ],
  ])('on %s denies an opted-out %s, naming the advisory', (version, skipped, spec, advisories, reason) => {
    const job = mutated(hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': skipped }, spec), version);
    const findings = judge(job, version);
    expect(findings.map((finding) => finding.advisory)).toEqual(advisories);
    expect(findings.every((finding) => finding.action === 'deny' && finding.rule === 'version-race')).toBe(true);
    expect(findings[0]?.message).toContain(`races with Argo CD ${version}`);
    expect(findings[0]?.message).toContain(reason);
  });

  it('allows an opted-out TTL floor when the TTL is already long enough', () => {
    const job = mutated(
      hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'ttl-floor' }, { ttlSecondsAfterFinished: 300 }),
      '2.14.8',
    );
    expect(judge(job, '2.14.8')).toEqual([]);
  });

  it('allows a chart deadline shorter than the guard: min-runtime adds the wait to it', () => {
    const job = mutated(hookJob(undefined, { activeDeadlineSeconds: 5 }), '3.1.0');
    expect((job.spec as JobSpec).activeDeadlineSeconds).toBe(15);
    expect(judge(job, '3.1.0')).toEqual([]);
  });

  it('denies a look-alike guard: an init container named hookguard-min-runtime that does not wait', () => {
    const job = hookJob();
    (job.spec as JobSpec).template!.spec!.initContainers = [
      { name: 'hookguard-min-runtime', image: 'gcr.io/distroless/static-debian12:debug-nonroot', command: ['true'] },
    ];
    expect(judge(mutated(job, '3.1.0'), '3.1.0')).toEqual([
      {
        rule: 'version-race',
        action: 'deny',
        advisory: 'argocd-fast-hook-finalizer-race',
        message:
          'Job apps/migrate races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): ' +
          "min-runtime init container hookguard-min-runtime is not hookguard's guard (its command is not /busybox/sleep <seconds>); rename or remove it. Fixed in Argo CD 3.4.0.",
      },
    ]);
  });

  it('denies the 2.14.3 hook finalizer when its removal was opted out', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'hook-finalizer' });
    job.metadata!.finalizers = [HOOK_FINALIZER];
    const findings = judge(mutated(job, '2.14.3'), '2.14.3');
    expect(findings.map((finding) => finding.advisory)).toEqual(['argocd-hook-finalizer-partial']);
  });

  it('allows, with a warning it counts apart, a hook whose mitigation is merely missing (mutating webhook bypassed)', () => {
    expect(judge(hookJob(undefined, { ttlSecondsAfterFinished: 0 }), '3.1.0')).toEqual(
      ['ttl-floor', 'min-runtime'].map((mitigation) => ({
        rule: 'version-race',
        action: 'warn',
        advisory: 'argocd-fast-hook-finalizer-race',
        missingMitigation: mitigation,
        message:
          `Job apps/migrate lacks ${mitigation} (was the mutating webhook bypassed?) and races with Argo CD 3.1.0 ` +
          '(argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends); ' +
          "allowed, since only hookguard's own change is missing. Fixed in Argo CD 3.4.0.",
      })),
    );
  });

  it('still denies the opted-out mitigation beside a merely missing one', () => {
    const job = hookJob(
      { 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'min-runtime' },
      { ttlSecondsAfterFinished: 0 },
    );
    expect(judge(job, '3.1.0').map(({ action, missingMitigation }) => [action, missingMitigation])).toEqual([
      ['warn', 'ttl-floor'],
      ['deny', undefined],
    ]);
  });

  it('never denies, nor warns about, a Windows hook it cannot guard, even opted out', () => {
    const windows = (annotations?: Record<string, string>) => {
      const job = hookJob(annotations);
      (job.spec as { template: { spec: Record<string, unknown> } }).template.spec.os = { name: 'windows' };
      return job;
    };
    expect(judge(windows(), '3.1.0')).toEqual([]);
    expect(judge(windows({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'min-runtime' }), '3.1.0')).toEqual([]);
  });

  it.each([
    ['an unknown version', undefined],
    ['a fixed version', '3.4.0'],
  ])('never denies on %s', (_name, version) => {
    expect(
      judge(
        hookJob(
          { 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'min-runtime,ttl-floor' },
          { ttlSecondsAfterFinished: 0 },
        ),
        version,
      ),
    ).toEqual([]);
  });

  it('never judges hooks that plain Helm applies', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'min-runtime' });
    expect(
      versionRace.validate(
        job,
        contextFor(job, { username: 'kubernetes-admin', argocdVersion: '2.14.8' }),
        builtInRules.mutations,
      ),
    ).toEqual([]);
  });
});
