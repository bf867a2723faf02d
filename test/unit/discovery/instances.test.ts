import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import { controllerUsername } from '../../../src/discovery/controller-version.js';
import { instancesFrom } from '../../../src/discovery/discovery.js';
import { controller } from '../../support/argocd-controllers.js';

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
});
