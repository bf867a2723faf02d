// helmReleaseTarget(): the Helm release a Flux HelmRelease manages, with helm-controller v1.6.3's defaults
// (api/v2/helmrelease_types.go GetReleaseName, GetStorageNamespace, GetReleaseNamespace), and its quoted conditions.
import { describe, expect, it } from 'vitest';
import { helmReleaseTarget, notReadyForAHook } from '../../../src/core/flux.js';

const helmRelease = (spec: Record<string, unknown>, conditions: unknown[] = []) => ({
  apiVersion: 'helm.toolkit.fluxcd.io/v2',
  kind: 'HelmRelease',
  metadata: { namespace: 'flux-system', name: 'web' },
  spec,
  status: { conditions },
});

describe('helmReleaseTarget', () => {
  it.each([
    ['nothing set: the name, in the HelmRelease namespace', {}, ['web', 'flux-system', 'flux-system']],
    [
      'a target namespace: <target>-<name>, installed there, stored beside the HelmRelease',
      { targetNamespace: 'shop' },
      ['shop-web', 'flux-system', 'shop'],
    ],
    [
      'every field given',
      { releaseName: 'storefront', targetNamespace: 'shop', storageNamespace: 'shop' },
      ['storefront', 'shop', 'shop'],
    ],
  ])('%s', (_name, spec, [releaseName, storageNamespace, releaseNamespace]) => {
    expect(helmReleaseTarget(helmRelease(spec))).toMatchObject({ releaseName, storageNamespace, releaseNamespace });
  });

  it('quotes Ready and Released only, as written', () => {
    const target = helmReleaseTarget(
      helmRelease({}, [
        { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed' },
        { type: 'Reconciling', status: 'True', reason: 'Progressing' },
        { type: 'Released', status: 'False', reason: 'UpgradeFailed', message: '' },
      ]),
    );
    expect(target?.conditions).toEqual([
      { type: 'Ready', status: 'False', reason: 'UpgradeFailed', message: 'Helm upgrade failed' },
      { type: 'Released', status: 'False', reason: 'UpgradeFailed' },
    ]);
  });

  it('no name or namespace: no target', () => {
    expect(helmReleaseTarget({ spec: {} })).toBeUndefined();
    expect(helmReleaseTarget('web')).toBeUndefined();
  });
});

describe('notReadyForAHook', () => {
  const target = (conditions: unknown[]) => helmReleaseTarget(helmRelease({}, conditions))!;
  it.each([
    [
      "Ready False, quoting Helm's hook error",
      [
        {
          type: 'Ready',
          status: 'False',
          reason: 'UpgradeFailed',
          message:
            'Helm upgrade failed for release shop/web with chart web@1.2.0: pre-upgrade hooks failed: job web-migrate failed',
        },
      ],
      true,
    ],
    [
      'Ready False for something else',
      [{ type: 'Ready', status: 'False', reason: 'ArtifactFailed', message: 'HelmChart flux-system/web is not ready' }],
      false,
    ],
    [
      'Ready True',
      [
        {
          type: 'Ready',
          status: 'True',
          reason: 'UpgradeSucceeded',
          message: 'Helm upgrade succeeded for release shop/web',
        },
      ],
      false,
    ],
    ['no Ready yet', [], false],
  ])('%s', (_name, conditions, expected) => {
    expect(notReadyForAHook(target(conditions))).toBe(expected);
  });
});
