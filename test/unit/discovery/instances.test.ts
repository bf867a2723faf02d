import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import { controllerUsername } from '../../../src/discovery/controller-version.js';
import { instancesFrom, listedWorkloads } from '../../../src/discovery/discovery.js';
import {
  argoHelmController,
  controller,
  OPERATOR_DEFAULT_IMAGE,
  operatorController,
  upstreamDeploymentController,
} from '../../support/argocd-controllers.js';

const withServiceAccount = (workload: KubeObject, serviceAccountName: string | undefined): KubeObject => {
  const copy = structuredClone(workload) as KubeObject & { spec: { template: { spec: Record<string, unknown> } } };
  if (serviceAccountName === undefined) delete copy.spec.template.spec.serviceAccountName;
  else copy.spec.template.spec.serviceAccountName = serviceAccountName;
  return copy;
};

describe('controllerUsername', () => {
  it.each<[string, KubeObject, string | undefined]>([
    [
      'its service account',
      controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'),
      'system:serviceaccount:argocd:argocd-application-controller',
    ],
    [
      '"default" when it names none',
      withServiceAccount(controller('team-b', 'argocd:v3.0.0'), undefined),
      'system:serviceaccount:team-b:default',
    ],
    [
      'a renamed account',
      withServiceAccount(controller('team-b', 'argocd:v3.0.0'), 'ctrl'),
      'system:serviceaccount:team-b:ctrl',
    ],
    ['nothing without a namespace', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' } }, undefined],
  ])('%s', (_name, workload, expected) => {
    expect(controllerUsername(workload)).toBe(expected);
  });
});

describe('instancesFrom', () => {
  it('keys instances by namespace, sorted, with their controllers', () => {
    const instances = instancesFrom([
      controller('team-b', 'argocd:v3.4.1', 'Deployment'),
      controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'),
    ]);
    expect([...instances.entries()]).toEqual([
      [
        'argocd',
        {
          namespace: 'argocd',
          version: '2.14.3',
          source: 'StatefulSet argocd-application-controller: image quay.io/argoproj/argocd:v2.14.3',
          controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
        },
      ],
      [
        'team-b',
        {
          namespace: 'team-b',
          version: '3.4.1',
          source: 'Deployment argocd-application-controller: image argocd:v3.4.1',
          controllerUsernames: ['system:serviceaccount:team-b:argocd-application-controller'],
        },
      ],
    ]);
  });

  it('agrees with two controllers of one namespace on the same version', () => {
    const instances = instancesFrom([
      controller('argocd', 'argocd:v2.14.4'),
      controller('argocd', 'mirror/argocd:2.14.4', 'Deployment'),
    ]);
    expect(instances.get('argocd')).toEqual({
      namespace: 'argocd',
      version: '2.14.4',
      source:
        'StatefulSet argocd-application-controller: image argocd:v2.14.4; Deployment argocd-application-controller: image mirror/argocd:2.14.4',
      controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
    });
  });

  it('makes the version unknown when controllers of one namespace disagree (say, mid-migration)', () => {
    const instances = instancesFrom([
      controller('argocd', 'argocd:v2.14.3'),
      controller('argocd', 'argocd:v2.14.4', 'Deployment'),
    ]);
    expect(instances.get('argocd')).toMatchObject({
      version: undefined,
      source:
        'unknown: controllers disagree (StatefulSet argocd-application-controller: 2.14.3, Deployment argocd-application-controller: 2.14.4)',
    });
  });

  it.each<
    [string, KubeObject[], string, { version: string | undefined; source: string; controllerUsernames: string[] }]
  >([
    [
      'the upstream StatefulSet',
      [controller('argocd', 'quay.io/argoproj/argocd:v3.4.4')],
      'argocd',
      {
        version: '3.4.4',
        source: 'StatefulSet argocd-application-controller: image quay.io/argoproj/argocd:v3.4.4',
        controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
      },
    ],
    [
      'the upstream Deployment, beside its StatefulSet at zero replicas (only the running one says the version)',
      upstreamDeploymentController('argocd', 'quay.io/argoproj/argocd:v3.4.4', 'quay.io/argoproj/argocd:v3.3.0'),
      'argocd',
      {
        version: '3.4.4',
        source: 'Deployment argocd-application-controller: image quay.io/argoproj/argocd:v3.4.4',
        controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
      },
    ],
    [
      'argo-helm, release "gitops": release-prefixed name, the same service account',
      [argoHelmController('gitops', 'platform')],
      'platform',
      {
        version: '3.4.4',
        source: 'StatefulSet gitops-argocd-application-controller: image quay.io/argoproj/argocd:v3.4.4',
        controllerUsernames: ['system:serviceaccount:platform:argocd-application-controller'],
      },
    ],
    [
      'argo-helm with dynamic cluster distribution: a Deployment',
      [argoHelmController('argocd', 'argocd', 'v3.1.0', { dynamicClusterDistribution: true })],
      'argocd',
      {
        version: '3.1.0',
        source: 'Deployment argocd-application-controller: image quay.io/argoproj/argocd:v3.1.0',
        controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
      },
    ],
    [
      'argocd-operator, ArgoCD "example-argocd": its default image is a digest only',
      [operatorController('example-argocd', 'team-x')],
      'team-x',
      {
        version: undefined,
        source: `StatefulSet example-argocd-application-controller: unknown: image ${OPERATOR_DEFAULT_IMAGE} is pinned by digest only and no app.kubernetes.io/version label`,
        controllerUsernames: ['system:serviceaccount:team-x:example-argocd-argocd-application-controller'],
      },
    ],
    [
      'argocd-operator with spec.version: the upstream image and tag',
      [operatorController('example-argocd', 'team-x', 'quay.io/argoproj/argocd:v2.14.8')],
      'team-x',
      {
        version: '2.14.8',
        source: 'StatefulSet example-argocd-application-controller: image quay.io/argoproj/argocd:v2.14.8',
        controllerUsernames: ['system:serviceaccount:team-x:example-argocd-argocd-application-controller'],
      },
    ],
    [
      "OpenShift GitOps: its image tag is the operator version, not Argo CD's",
      [
        operatorController(
          'openshift-gitops',
          'openshift-gitops',
          'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0',
        ),
      ],
      'openshift-gitops',
      {
        version: undefined,
        source:
          'StatefulSet openshift-gitops-application-controller: unknown: OpenShift GitOps 1.16.0 (image registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give',
        controllerUsernames: ['system:serviceaccount:openshift-gitops:openshift-gitops-argocd-application-controller'],
      },
    ],
  ])('%s', (_name, workloads, namespace, expected) => {
    expect(instancesFrom(workloads).get(namespace)).toEqual({ namespace, ...expected });
  });

  it('takes the version argocd.instanceVersions gives a namespace over what its controller says', () => {
    const instances = instancesFrom(
      [
        operatorController(
          'openshift-gitops',
          'openshift-gitops',
          'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0',
        ),
        controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'),
      ],
      { 'openshift-gitops': 'v3.1.0', 'argocd-remote-view': '2.14.8' },
    );
    expect([...instances.values()]).toEqual([
      {
        namespace: 'argocd',
        version: '2.14.3',
        source: 'StatefulSet argocd-application-controller: image quay.io/argoproj/argocd:v2.14.3',
        controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
      },
      {
        namespace: 'argocd-remote-view',
        version: '2.14.8',
        source: 'argocd.instanceVersions: 2.14.8; no controller discovered',
        controllerUsernames: [],
      },
      {
        namespace: 'openshift-gitops',
        version: '3.1.0',
        source:
          'argocd.instanceVersions: v3.1.0 (discovered: StatefulSet openshift-gitops-application-controller: unknown: OpenShift GitOps 1.16.0 (image registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give)',
        controllerUsernames: ['system:serviceaccount:openshift-gitops:openshift-gitops-argocd-application-controller'],
      },
    ]);
  });

  it('still reads every controller when none runs', () => {
    const instances = instancesFrom([controller('argocd', 'quay.io/argoproj/argocd:v2.14.8', 'StatefulSet', 0)]);
    expect(instances.get('argocd')?.version).toBe('2.14.8');
  });
});

describe('listedWorkloads', () => {
  // The API server leaves kind and apiVersion out of each item of a List (kube-apiserver v1.37.2, GET
  // /apis/apps/v1/namespaces/NS/statefulsets): without them an instance's source read "undefined argocd-…".
  it('gives the items of a List the kind and apiVersion the API server leaves out, so the source names the kind', () => {
    const { apiVersion: _apiVersion, kind: _kind, ...item } = controller('argocd', 'quay.io/argoproj/argocd:v2.14.3');
    const listed = listedWorkloads({ items: [item], metadata: { resourceVersion: '42' } }, 'StatefulSet');
    expect(listed.resourceVersion).toBe('42');
    expect(listed.items[0]).toMatchObject({ apiVersion: 'apps/v1', kind: 'StatefulSet' });
    expect(instancesFrom(listed.items).get('argocd')?.source).toBe(
      'StatefulSet argocd-application-controller: image quay.io/argoproj/argocd:v2.14.3',
    );
  });
});
