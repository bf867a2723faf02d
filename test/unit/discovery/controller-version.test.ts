import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { controllerVersion, imageTag, isArgoCdImage } from '../../../src/discovery/controller-version.js';
import type { KubeObject } from '../../../src/core/types.js';

const DIGEST = 'sha256:0d62e1e0ad9a4f5c3c3f6a4a8b4c42b0a7f0b1d5b1a3e3f2c6f9c1d2e3f4a5b6';

function statefulSet(
  containers: Array<{ name: string; image?: string }>,
  labels: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name: 'argocd-application-controller',
      namespace: 'argocd',
      labels: { 'app.kubernetes.io/name': 'argocd-application-controller', ...labels },
    },
    spec: { template: { spec: { containers } } },
  };
}

describe('imageTag', () => {
  it.each([
    ['quay.io/argoproj/argocd:v2.14.3', 'v2.14.3'],
    ['registry.example.com:5000/mirror/argoproj/argocd:2.14.3', '2.14.3'],
    ['registry.example.com:5000/mirror/argocd', undefined],
    [`quay.io/argoproj/argocd@${DIGEST}`, undefined],
    [`quay.io/argoproj/argocd:v2.14.4@${DIGEST}`, 'v2.14.4'],
    ['argocd:latest', 'latest'],
  ])('%s → %s', (image, tag) => {
    expect(imageTag(image)).toBe(tag);
  });
});

describe('isArgoCdImage', () => {
  it.each([
    ['quay.io/argoproj/argocd:v2.14.3', true],
    ['ghcr.io/argoproj/argocd:v3.1.0', true],
    ['registry.example.com:5000/mirror/argoproj/argocd:2.14.3', true],
    [`quay.io/argoproj/argocd@${DIGEST}`, true],
    ['argocd', true],
    ['registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0', false],
    [`registry.redhat.io/openshift-gitops-1/argocd-rhel9@${DIGEST}`, false],
    ['example.com/team/argocd-with-plugins:v2.14.8', false],
    ['quay.io/argoproj/argocd-applicationset:v0.4.1', false],
  ])('%s → %s', (image, expected) => {
    expect(isArgoCdImage(image)).toBe(expected);
  });
});

describe('controllerVersion', () => {
  it.each<[string, KubeObject, { version: string | undefined; source: string }]>([
    [
      'upstream manifest',
      statefulSet([{ name: 'argocd-application-controller', image: 'quay.io/argoproj/argocd:v2.14.3' }]),
      { version: '2.14.3', source: 'image quay.io/argoproj/argocd:v2.14.3' },
    ],
    [
      'argo-helm container name, mirror with a port, tag without v',
      statefulSet([{ name: 'application-controller', image: 'mirror.local:5000/argoproj/argocd:2.14.4' }]),
      { version: '2.14.4', source: 'image mirror.local:5000/argoproj/argocd:2.14.4' },
    ],
    [
      'the controller among sidecars',
      statefulSet([
        { name: 'proxy', image: 'envoy:v1.30.0' },
        { name: 'application-controller', image: 'quay.io/argoproj/argocd:v3.1.0' },
      ]),
      { version: '3.1.0', source: 'image quay.io/argoproj/argocd:v3.1.0' },
    ],
    [
      'an argocd image in a container with another name',
      statefulSet([
        { name: 'proxy', image: 'envoy:v1.30.0' },
        { name: 'main', image: 'quay.io/argoproj/argocd:v2.13.1' },
      ]),
      { version: '2.13.1', source: 'image quay.io/argoproj/argocd:v2.13.1' },
    ],
    [
      'tag and digest: the tag',
      statefulSet([{ name: 'application-controller', image: `quay.io/argoproj/argocd:v2.14.4@${DIGEST}` }]),
      { version: '2.14.4', source: `image quay.io/argoproj/argocd:v2.14.4@${DIGEST}` },
    ],
    [
      'digest only, version label',
      statefulSet([{ name: 'application-controller', image: `quay.io/argoproj/argocd@${DIGEST}` }], {
        'app.kubernetes.io/version': 'v2.14.3',
      }),
      { version: '2.14.3', source: 'label app.kubernetes.io/version=v2.14.3' },
    ],
    [
      'latest, no label',
      statefulSet([{ name: 'application-controller', image: 'quay.io/argoproj/argocd:latest' }]),
      {
        version: undefined,
        source: 'unknown: image tag "latest" is not a version and no app.kubernetes.io/version label',
      },
    ],
    [
      'digest only, no label',
      statefulSet([{ name: 'application-controller', image: `quay.io/argoproj/argocd@${DIGEST}` }]),
      {
        version: undefined,
        source: `unknown: image quay.io/argoproj/argocd@${DIGEST} is pinned by digest only and no app.kubernetes.io/version label`,
      },
    ],
    [
      'no tag, label not a version',
      statefulSet([{ name: 'application-controller', image: 'quay.io/argoproj/argocd' }], {
        'app.kubernetes.io/version': 'stable',
      }),
      {
        version: undefined,
        source:
          'unknown: image quay.io/argoproj/argocd has no tag and label app.kubernetes.io/version="stable" is not a version',
      },
    ],
    [
      'OpenShift GitOps: the tag is the GitOps operator version, and 1.16.0 is not in the (empty) table',
      statefulSet([
        { name: 'argocd-application-controller', image: 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0' },
      ]),
      {
        version: undefined,
        source:
          'unknown: OpenShift GitOps 1.16.0 (image registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give',
      },
    ],
    [
      'OpenShift GitOps non-OLM default tag: GitOps 1.9.2, build 2, not in the (empty) table',
      statefulSet([
        { name: 'argocd-application-controller', image: 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.9.2-2' },
      ]),
      {
        version: undefined,
        source:
          'unknown: OpenShift GitOps 1.9.2 (image registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.9.2-2) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give',
      },
    ],
    [
      'another image: a version label beside it is not trusted either (argo-helm copies the same tag into it)',
      statefulSet([{ name: 'application-controller', image: 'example.com/team/argocd-with-plugins:v2.14.8' }], {
        'app.kubernetes.io/version': 'v2.14.8',
      }),
      {
        version: undefined,
        source:
          "unknown: image example.com/team/argocd-with-plugins:v2.14.8 is not Argo CD's own (quay.io/argoproj/argocd or a mirror of it): its tags are not Argo CD versions",
      },
    ],
    [
      'no containers at all',
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' } },
      { version: undefined, source: 'unknown: no controller container image and no app.kubernetes.io/version label' },
    ],
  ])('%s', (_name, workload, expected) => {
    expect(controllerVersion(workload)).toEqual(expected);
  });
});

// Red Hat's published table (argocd.openshiftGitopsVersions; the default holds the rows read in openshift/openshift-docs
// modules/go-compatibility-and-support-matrix.adoc): the GitOps release of the argocd-rhel8 tag, build suffix dropped.
describe('controllerVersion of OpenShift GitOps, with the GitOps -> Argo CD table', () => {
  const TABLE = { '1.9.0': '2.7.2', '1.18.0': 'v3.1.0' };
  const rhel8 = (tag: string) =>
    statefulSet([
      { name: 'argocd-application-controller', image: `registry.redhat.io/openshift-gitops-1/argocd-rhel8${tag}` },
    ]);
  it.each([
    [':v1.9.0', '2.7.2', 'OpenShift GitOps 1.9.0 ships Argo CD 2.7.2'],
    [':v1.18.0-3', '3.1.0', 'OpenShift GitOps 1.18.0 ships Argo CD 3.1.0'],
    [`:1.9.0@${DIGEST}`, '2.7.2', 'OpenShift GitOps 1.9.0 ships Argo CD 2.7.2'],
  ])('argocd-rhel8%s is Argo CD %s', (tag, version, says) => {
    const image = `registry.redhat.io/openshift-gitops-1/argocd-rhel8${tag}`;
    expect(controllerVersion(rhel8(tag), TABLE)).toEqual({
      version,
      source: `image ${image}: ${says} (argocd.openshiftGitopsVersions)`,
    });
  });

  it.each([
    [
      ':v1.10.0',
      'unknown: OpenShift GitOps 1.10.0 (image registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.10.0) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give',
    ],
    [
      `@${DIGEST}`,
      `unknown: OpenShift GitOps image registry.redhat.io/openshift-gitops-1/argocd-rhel8@${DIGEST} has no version tag (a digest only, or another tag); give its Argo CD version in argocd.instanceVersions`,
    ],
    [
      ':latest',
      'unknown: OpenShift GitOps image registry.redhat.io/openshift-gitops-1/argocd-rhel8:latest has no version tag (a digest only, or another tag); give its Argo CD version in argocd.instanceVersions',
    ],
  ])('argocd-rhel8%s stays unknown, saying why', (tag, source) => {
    expect(controllerVersion(rhel8(tag), TABLE)).toEqual({ version: undefined, source });
  });

  // Issue 27, item 4: the install script's default tag v1.9.2 and every release since 1.10 were unknown.
  it.each([
    [
      'argocd-rhel8:v1.9.2-2',
      '2.7.2',
      'OpenShift GitOps 1.9.2 is read as 1.9.0, which ships Argo CD 2.7.2 (argocd.openshiftGitopsVersions, by minor release)',
    ],
    [
      'argocd-rhel8:v1.9.1',
      '2.7.2',
      'OpenShift GitOps 1.9.1 is read as 1.9.0, which ships Argo CD 2.7.2 (argocd.openshiftGitopsVersions, by minor release)',
    ],
    ['argocd-rhel8:v1.10.0', '2.8.3', 'OpenShift GitOps 1.10.0 ships Argo CD 2.8.3 (argocd.openshiftGitopsVersions)'],
    [
      'argocd-rhel8:v1.13.4',
      '2.11.2',
      'OpenShift GitOps 1.13.4 is read as 1.13.0, which ships Argo CD 2.11.2 (argocd.openshiftGitopsVersions, by minor release)',
    ],
    [
      'argocd-rhel8:v1.16.2-1',
      '2.14.4',
      'OpenShift GitOps 1.16.2 is read as 1.16.0, which ships Argo CD 2.14.4 (argocd.openshiftGitopsVersions, by minor release)',
    ],
    [
      'argocd-rhel9:v1.18.1',
      '3.1.5',
      'OpenShift GitOps 1.18.1 is read as 1.18.0, which ships Argo CD 3.1.5 (argocd.openshiftGitopsVersions, by minor release)',
    ],
    ['argocd-rhel9:v1.20.0', '3.3.2', 'OpenShift GitOps 1.20.0 ships Argo CD 3.3.2 (argocd.openshiftGitopsVersions)'],
  ])('with the built-in table, %s is Argo CD %s', (name, version, says) => {
    const image = `registry.redhat.io/openshift-gitops-1/${name}`;
    const table = loadConfig().argocd.openshiftGitopsVersions;
    expect(controllerVersion(statefulSet([{ name: 'argocd-application-controller', image }]), table)).toEqual({
      version,
      source: `image ${image}: ${says}`,
    });
  });

  it('prefers a release’s own row to its minor’s, and takes the highest row not above it', () => {
    const table = { '1.9.0': '2.7.2', '1.9.2': '2.7.9', '1.9.4': '2.7.14' };
    const versionOf = (tag: string) =>
      controllerVersion(
        statefulSet([{ name: 'c', image: `registry.redhat.io/openshift-gitops-1/argocd-rhel8:${tag}` }]),
        table,
      ).version;
    expect(['v1.9.2', 'v1.9.3', 'v1.9.1', 'v1.9.5'].map(versionOf)).toEqual(['2.7.9', '2.7.9', '2.7.2', '2.7.14']);
  });

  it('never reads the table for another image', () => {
    const other = statefulSet([{ name: 'application-controller', image: 'example.com/team/argocd-custom:v1.9.0' }]);
    expect(controllerVersion(other, TABLE).version).toBeUndefined();
  });
});
