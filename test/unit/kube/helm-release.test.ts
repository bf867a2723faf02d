// Release records built exactly as Helm writes them (helm v4.2.4 and v3.21.4 pkg/storage/driver/util.go
// encodeRelease: JSON, gzip at BestCompression, base64 StdEncoding; secrets.go / cfgmaps.go newSecretsObject /
// newConfigMapsObject: data.release, type helm.sh/release.v1, labels owner/name/status/version). Built here rather
// than by a real helm: the test tooling's helm (test/support/k8s-tools.ts) has no cluster to store a release in.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { chooseRevision, releaseObjectName } from '../../../src/core/release.js';
import { decodeReleaseData, releaseFromStorage } from '../../../src/kube/helm-release.js';

/** A release as Helm 4.2.4 marshals it: a failed pre-upgrade hook and a succeeded one, the upgrade left pending. */
const RELEASE = {
  name: 'shop',
  info: {
    first_deployed: '2026-12-01T10:00:00Z',
    last_deployed: '2026-12-05T09:00:00Z',
    deleted: '',
    description: 'Preparing upgrade',
    status: 'pending-upgrade',
  },
  chart: { metadata: { name: 'shop', version: '1.2.0', apiVersion: 'v2' } },
  manifest: '---\n# Source: shop/templates/deploy.yaml\n',
  hooks: [
    {
      name: 'shop-migrate',
      kind: 'Job',
      path: 'shop/templates/migrate.yaml',
      manifest: 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: shop-migrate\n  namespace: db\n',
      events: ['pre-upgrade'],
      last_run: { started_at: '2026-12-05T09:00:01Z', completed_at: '2026-12-05T09:00:31Z', phase: 'Failed' },
      weight: -5,
      delete_policies: ['before-hook-creation'],
      output_log_policies: ['hook-failed'],
    },
    {
      name: 'shop-warm',
      kind: 'Pod',
      path: 'shop/templates/warm.yaml',
      manifest: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: shop-warm\n',
      events: ['post-install', 'post-upgrade'],
      last_run: { phase: '' },
    },
  ],
  version: 7,
  namespace: 'shop',
};

const helmEncoded = (json: unknown) => gzipSync(JSON.stringify(json), { level: 9 }).toString('base64');

function secret(data: string) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'helm.sh/release.v1',
    metadata: {
      name: releaseObjectName('shop', 7),
      namespace: 'shop',
      labels: { owner: 'helm', name: 'shop', status: 'pending-upgrade', version: '7' },
    },
    // The API server sends a Secret's []byte data as base64: Helm's base64 text, base64 once more.
    data: { release: Buffer.from(data, 'latin1').toString('base64') },
  };
}

const EXPECTED = {
  name: 'shop',
  namespace: 'shop',
  version: 7,
  status: 'pending-upgrade',
  description: 'Preparing upgrade',
  firstDeployed: '2026-12-01T10:00:00Z',
  lastDeployed: '2026-12-05T09:00:00Z',
  chart: 'shop-1.2.0',
  hooks: [
    {
      name: 'shop-migrate',
      kind: 'Job',
      path: 'shop/templates/migrate.yaml',
      events: ['pre-upgrade'],
      weight: -5,
      deletePolicies: ['before-hook-creation'],
      outputLogPolicies: ['hook-failed'],
      lastRunPhase: 'Failed',
      lastRunStartedAt: '2026-12-05T09:00:01Z',
      lastRunCompletedAt: '2026-12-05T09:00:31Z',
      namespace: 'db',
    },
    {
      name: 'shop-warm',
      kind: 'Pod',
      path: 'shop/templates/warm.yaml',
      events: ['post-install', 'post-upgrade'],
      weight: 0,
      deletePolicies: [],
      outputLogPolicies: [],
      lastRunPhase: '',
      lastRunStartedAt: undefined,
      lastRunCompletedAt: undefined,
      namespace: undefined,
    },
  ],
};

describe('a Helm release record', () => {
  it('is read from a Secret (sh.helm.release.v1.NAME.vN)', () => {
    expect(secret(helmEncoded(RELEASE)).metadata.name).toBe('sh.helm.release.v1.shop.v7');
    expect(releaseFromStorage(secret(helmEncoded(RELEASE)))).toEqual(EXPECTED);
  });

  it('is read from a ConfigMap (HELM_DRIVER=configmap), whose data is Helm text as is', () => {
    const configMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x' },
      data: { release: helmEncoded(RELEASE) },
    };
    expect(releaseFromStorage(configMap)).toEqual(EXPECTED);
  });

  it('is read uncompressed, as records from before compression are (no gzip magic)', () => {
    expect(releaseFromStorage(secret(Buffer.from(JSON.stringify(RELEASE)).toString('base64')))).toEqual(EXPECTED);
  });

  it('refuses a gzip bomb without inflating past the limit', () => {
    const bomb = gzipSync(Buffer.alloc(4 * 1024 * 1024), { level: 9 }).toString('base64');
    expect(() => decodeReleaseData(bomb, 'Secret shop/x data.release', 1024 * 1024)).toThrow(
      'Secret shop/x data.release inflates to more than 1048576 bytes: not read',
    );
  });

  it.each([
    ['not base64', 'a%b=', 'Secret shop/sh.helm.release.v1.shop.v7 data.release is not base64'],
    [
      'truncated gzip',
      gzipSync('{"name":"x"}').subarray(0, 12).toString('base64'),
      'Secret shop/sh.helm.release.v1.shop.v7 data.release is not valid gzip: unexpected end of file',
    ],
    [
      'not JSON',
      Buffer.from('hello').toString('base64'),
      "Secret shop/sh.helm.release.v1.shop.v7 data.release is not a release's JSON",
    ],
    [
      'JSON but no release',
      helmEncoded({ kind: 'x' }),
      'Secret shop/sh.helm.release.v1.shop.v7 data.release holds no release (no name or info)',
    ],
  ])('refuses %s with a clear error', (_name, data, message) => {
    expect(() => releaseFromStorage(secret(data))).toThrow(message);
  });

  it('chooses the newest revision, or the one asked for', () => {
    expect(chooseRevision([1, 3, 2], undefined)).toBe(3);
    expect(chooseRevision([1, 3, 2], 2)).toBe(2);
    expect(chooseRevision([1, 3], 2)).toBeUndefined();
    expect(chooseRevision([], undefined)).toBeUndefined();
  });
});
