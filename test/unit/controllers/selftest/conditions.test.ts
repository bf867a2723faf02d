import { advisoriesOfTool } from '../../../../src/core/argocd-version.js';
import { describe, expect, it } from 'vitest';
import { loadBuiltInAdvisories } from '../../../../src/config/advisories.js';
import type { DiscoveryStatus } from '../../../../src/discovery/discovery.js';
import {
  advisoriesInEffect,
  argoCdKnown,
  certificateValid,
  conditionsOf,
  mergeConditions,
  ready,
  webhookCalled,
  type Observation,
} from '../../../../src/controllers/selftest/conditions.js';

const DAY_MS = 86_400_000;
const NOW = Date.parse('2026-09-01T00:00:00Z');

describe('WebhookCalled', () => {
  it.each([
    ['Called', 'Called', 'True'],
    ['NotCalled', 'NotCalled', 'False'],
    ['NotCalled', 'MutatingNotCalled', 'False'],
    ['NotCalled', 'ValidatingNotCalled', 'False'],
    ['Error', 'Error', 'Unknown'],
  ] as const)('%s (%s): %s, with the reason naming the webhook not called', (outcome, reason, status) => {
    expect(webhookCalled({ outcome, reason, message: 'm' })).toEqual({
      type: 'WebhookCalled',
      status,
      reason,
      message: 'm',
    });
  });
});

describe('CertificateValid', () => {
  it.each([
    [30 * DAY_MS, 14, 'True', 'Valid', 'the serving certificate is valid until 2026-10-01T00:00:00.000Z (30 days)'],
    [14 * DAY_MS + 1, 14, 'True', 'Valid', 'the serving certificate is valid until 2026-09-15T00:00:00.001Z (14 days)'],
    [
      14 * DAY_MS,
      14,
      'False',
      'ExpiresSoon',
      'the serving certificate expires at 2026-09-15T00:00:00.000Z, in 14 days (within selfTest.certificateWarningDays, 14): renew it',
    ],
    [DAY_MS / 2, 0, 'True', 'Valid', 'the serving certificate is valid until 2026-09-01T12:00:00.000Z (0 days)'],
    [
      0,
      14,
      'False',
      'Expired',
      'the serving certificate expired at 2026-09-01T00:00:00.000Z: renew it (certificates.mode self: hookguard renews it, look at its log; cert-manager: the Certificate hookguard-serving; secret: replace the Secret, e.g. with certs/hookguard-certs.sh)',
    ],
    [
      -DAY_MS,
      0,
      'False',
      'Expired',
      'the serving certificate expired at 2026-08-31T00:00:00.000Z: renew it (certificates.mode self: hookguard renews it, look at its log; cert-manager: the Certificate hookguard-serving; secret: replace the Secret, e.g. with certs/hookguard-certs.sh)',
    ],
  ])('expiring in %d ms, warning %d days: %s %s', (inMs, days, status, reason, message) => {
    expect(certificateValid(NOW + inMs, NOW, days)).toEqual({ type: 'CertificateValid', status, reason, message });
  });
});

const synced = (instances: Array<{ namespace: string; version: string | null }>): DiscoveryStatus => ({
  enabled: true,
  synced: true,
  watching: true,
  instances: instances.map((instance) => ({
    ...instance,
    source: `StatefulSet x: image argocd:${instance.version ?? 'latest'}`,
  })),
});

describe('ArgoCDKnown', () => {
  it.each([
    ['pinned', '2.14.3', synced([]), 'True', 'Pinned'],
    ['discovery off', null, { enabled: false, reason: 'discovery.enabled is false' }, 'False', 'DiscoveryOff'],
    [
      'not listed yet',
      null,
      { enabled: true, synced: false, watching: false, lastError: 'HTTP 403', instances: [] },
      'False',
      'NotSynced',
    ],
    ['no Argo CD', null, synced([]), 'True', 'NoneFound'],
    ['all known', null, synced([{ namespace: 'argocd', version: '3.0.1' }]), 'True', 'Discovered'],
    [
      'one unknown',
      null,
      synced([
        { namespace: 'argocd', version: '3.0.1' },
        { namespace: 'team', version: null },
      ]),
      'False',
      'VersionUnknown',
    ],
  ] as const)('%s: %s %s', (_name, pinned, discovery, status, reason) => {
    expect(argoCdKnown(pinned, discovery as DiscoveryStatus)).toMatchObject({ type: 'ArgoCDKnown', status, reason });
  });

  it('names the versions it knows and why one is unknown', () => {
    expect(
      argoCdKnown(
        null,
        synced([
          { namespace: 'argocd', version: '3.0.1' },
          { namespace: 'team', version: null },
        ]),
      ).message,
    ).toBe('Argo CD argocd: 3.0.1, team: unknown; unknown: team (StatefulSet x: image argocd:latest)');
    expect(
      argoCdKnown(null, {
        enabled: true,
        synced: false,
        watching: false,
        lastError: 'HTTP 403: forbidden',
        instances: [],
      }).message,
    ).toBe('Argo CD discovery has not listed the controllers yet: HTTP 403: forbidden');
  });
});

const observed = (
  type: Observation['type'],
  status: Observation['status'],
  reason = status === 'True' ? 'Fine' : 'Broken',
): Observation => ({
  type,
  status,
  reason,
  message: `${type} says ${reason}`,
});

describe('Ready', () => {
  it('is True only when every other condition is', () => {
    expect(
      ready([observed('WebhookCalled', 'True'), observed('CertificateValid', 'True'), observed('ArgoCDKnown', 'True')]),
    ).toMatchObject({
      status: 'True',
      reason: 'Ready',
    });
  });

  it.each([
    ['False', 'NotCalled'],
    ['Unknown', 'Error'],
  ] as const)('is False when one is %s, with its reason and every failing message', (status, reason) => {
    const others = [
      observed('WebhookCalled', status, reason),
      observed('CertificateValid', 'False', 'ExpiresSoon'),
      observed('ArgoCDKnown', 'True'),
    ];
    expect(ready(others)).toEqual({
      type: 'Ready',
      status: 'False',
      reason,
      message: `WebhookCalled=${status} (${reason}): WebhookCalled says ${reason}; CertificateValid=False (ExpiresSoon): CertificateValid says ExpiresSoon`,
    });
  });
});

describe('mergeConditions', () => {
  const T1 = '2026-09-01T00:00:00Z';
  const T2 = '2026-09-01T00:01:00Z';

  it('stamps every condition at first, and reports each as a transition from nothing', () => {
    const { conditions, transitions } = mergeConditions([], [observed('WebhookCalled', 'True')], T1, 3);
    expect(conditions).toEqual([
      { ...observed('WebhookCalled', 'True'), lastTransitionTime: T1, observedGeneration: 3 },
    ]);
    expect(transitions).toEqual([
      { type: 'WebhookCalled', from: undefined, to: 'True', reason: 'Fine', message: 'WebhookCalled says Fine' },
    ]);
  });

  it('keeps lastTransitionTime while the status stays, even when reason and message change; moves it when the status changes', () => {
    const first = mergeConditions(
      [],
      [observed('WebhookCalled', 'True'), observed('CertificateValid', 'True')],
      T1,
      1,
    ).conditions;
    const same = mergeConditions(
      first,
      [observed('WebhookCalled', 'True', 'Other'), observed('CertificateValid', 'False')],
      T2,
      2,
    );
    expect(
      same.conditions.map((condition) => [
        condition.type,
        condition.reason,
        condition.lastTransitionTime,
        condition.observedGeneration,
      ]),
    ).toEqual([
      ['WebhookCalled', 'Other', T1, 2],
      ['CertificateValid', 'Broken', T2, 2],
    ]);
    expect(same.transitions.map((transition) => [transition.type, transition.from, transition.to])).toEqual([
      ['CertificateValid', 'True', 'False'],
    ]);
  });

  it('reads what the object holds defensively: malformed entries count as absent', () => {
    expect(
      conditionsOf({
        conditions: [null, { type: 'Ready' }, { type: 'Ready', status: 'True', lastTransitionTime: T1 }],
      }),
    ).toEqual([{ type: 'Ready', status: 'True', lastTransitionTime: T1 }]);
    expect(conditionsOf(undefined)).toEqual([]);
    expect(conditionsOf({ conditions: 'x' })).toEqual([]);
  });
});

describe('advisoriesInEffect', () => {
  // What the self-test is handed: the Argo CD advisories (src/controllers/selftest/start.ts).
  const advisories = advisoriesOfTool(loadBuiltInAdvisories(), 'argocd');
  it('lists the advisories affecting a known instance, with the instances', () => {
    const found = advisoriesInEffect(advisories, [
      { namespace: 'argocd', version: '3.0.1' },
      { namespace: 'old', version: '2.13.0' },
      { namespace: 'new', version: '3.4.0' },
      { namespace: 'unknown', version: null },
    ]);
    expect(found.map((advisory) => [advisory.id, advisory.fixed, advisory.instances])).toEqual([
      ['argocd-fast-hook-finalizer-race', '3.4.0', [{ namespace: 'argocd', version: '3.0.1' }]],
      ['argocd-hook-ttl-race', '3.0.0', [{ namespace: 'old', version: '2.13.0' }]],
      ['argocd-hook-finalizer-cache-leak', undefined, [{ namespace: 'new', version: '3.4.0' }]],
      [
        'argocd-native-sidecar-finalizer-update',
        undefined,
        [
          { namespace: 'argocd', version: '3.0.1' },
          { namespace: 'new', version: '3.4.0' },
        ],
      ],
      [
        'argocd-foreign-finalizer',
        undefined,
        [
          { namespace: 'argocd', version: '3.0.1' },
          { namespace: 'new', version: '3.4.0' },
        ],
      ],
      ['argocd-autosync-skips-hooks', undefined, [{ namespace: 'new', version: '3.4.0' }]],
      ['argocd-delete-hook-lost', undefined, [{ namespace: 'new', version: '3.4.0' }]],
      ['argocd-failed-delete-hook-loop', undefined, [{ namespace: 'new', version: '3.4.0' }]],
    ]);
  });

  it('is empty when no instance has a known version (every Argo CD version has some advisory)', () => {
    expect(advisoriesInEffect(advisories, [{ namespace: 'unknown', version: null }])).toEqual([]);
    expect(advisoriesInEffect(advisories, [])).toEqual([]);
  });
});
