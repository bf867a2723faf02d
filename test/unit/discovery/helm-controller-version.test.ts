import { describe, expect, it } from 'vitest';
import { helmControllerKnown } from '../../../src/controllers/selftest/conditions.js';
import { helmControllerVersion } from '../../../src/discovery/helm-controller-version.js';
import { helmControllersOf, helmControllerStatuses } from '../../../src/discovery/helm-controllers.js';
import type { KubeObject } from '../../../src/core/types.js';

/** A helm-controller Deployment as flux2 installs it (container `manager`). */
function deployment(image: string, name = 'helm-controller', replicas?: number): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'flux-system', labels: { 'app.kubernetes.io/version': 'v2.9.4' } },
    spec: {
      ...(replicas !== undefined ? { replicas } : {}),
      template: { spec: { containers: [{ name: 'manager', image }] } },
    },
  };
}

describe('helmControllerVersion', () => {
  it.each([
    ['ghcr.io/fluxcd/helm-controller:v1.6.3', '1.6.3', 'image ghcr.io/fluxcd/helm-controller:v1.6.3'],
    ['mirror.example:5000/fluxcd/helm-controller:v1.3.0@sha256:ab', '1.3.0', undefined],
    [
      'ghcr.io/fluxcd/helm-controller@sha256:ab',
      undefined,
      'unknown: image ghcr.io/fluxcd/helm-controller@sha256:ab is pinned by digest only; give it in flux.helmControllerVersion',
    ],
    [
      'ghcr.io/fluxcd/helm-controller:latest',
      undefined,
      'unknown: image tag "latest" is not a version; give it in flux.helmControllerVersion',
    ],
    // Another image's tag is not a helm-controller version, and flux2's version label is Flux's (v2.9.4), never read.
    [
      'example.com/my/controller:v1.6.3',
      undefined,
      'unknown: no container runs a helm-controller image (…/fluxcd/helm-controller)',
    ],
  ])('%s → %s', (image, version, source) => {
    const found = helmControllerVersion(deployment(image));
    expect(found.version).toBe(version);
    if (source !== undefined) expect(found.source).toBe(source);
  });

  it('counts running Deployments only, and says when a version is unknown', () => {
    const statuses = helmControllerStatuses([
      deployment('ghcr.io/fluxcd/helm-controller:v1.6.3'),
      deployment('ghcr.io/fluxcd/helm-controller:v1.5.0', 'old', 0),
      deployment('ghcr.io/fluxcd/helm-controller:latest', 'tenant'),
    ]);
    expect(statuses.map((status) => [status.name, status.version])).toEqual([
      ['helm-controller', '1.6.3'],
      ['tenant', null],
    ]);
    expect(helmControllersOf(statuses)).toEqual({ versions: ['1.6.3'], unknownVersion: true });
    expect(helmControllerKnown({ enabled: true, synced: true, watching: true, helmControllers: statuses })).toEqual({
      type: 'HelmControllerKnown',
      status: 'False',
      reason: 'VersionUnknown',
      message:
        'Flux helm-controller flux-system/helm-controller: 1.6.3, flux-system/tenant: unknown (unknown: image tag "latest" is not a version; give it in flux.helmControllerVersion)',
    });
  });

  it('reports the pinned version when discovery is off', () => {
    expect(
      helmControllerKnown({
        enabled: false,
        reason: 'flux.helmControllerVersion is set to 1.6.3',
        helmControllers: [{ namespace: '', name: '', version: '1.6.3', source: 'flux.helmControllerVersion' }],
      }),
    ).toEqual({
      type: 'HelmControllerKnown',
      status: 'True',
      reason: 'Pinned',
      message: 'Flux helm-controller 1.6.3 (flux.helmControllerVersion)',
    });
  });
});
