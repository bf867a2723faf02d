import { describe, expect, it } from 'vitest';
import { chooseArgoVersion, type ArgoInstance, type VersionChoice } from '../../src/core/argocd-instances.js';
import { withInstances } from '../../src/core/context.js';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import type { KubeObject } from '../../src/core/types.js';
import { hookJob } from '../support/objects.js';

const instance = (namespace: string, version: string | undefined): [string, ArgoInstance] => [
  namespace,
  { namespace, version, source: 'test', controllerUsernames: [] },
];
const TWO = new Map([instance('argocd', '2.14.3'), instance('team-b', '3.4.1')]);
const WITH_UNKNOWN = new Map([instance('argocd', '2.14.3'), instance('edge', undefined)]);
const ONE = new Map([instance('argocd', '2.14.3')]);
const NONE = new Map<string, ArgoInstance>();

const controller = (namespace: string) => `system:serviceaccount:${namespace}:argocd-application-controller`;
const tracked = (trackingId: string): KubeObject =>
  hookJob({ 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/tracking-id': trackingId });
const labelled = (value: string): KubeObject => ({
  ...hookJob(),
  metadata: { name: 'm', namespace: 'apps', labels: { 'app.kubernetes.io/instance': value } },
});
const plain = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });

describe('chooseArgoVersion', () => {
  it.each<
    [
      string,
      {
        username?: string;
        object?: KubeObject;
        pinned?: string;
        instances: ReadonlyMap<string, ArgoInstance>;
        trackingLabel?: string;
      },
      VersionChoice,
    ]
  >([
    [
      'a pinned version wins over every instance',
      { username: controller('team-b'), pinned: '2.14.8', instances: TWO },
      { version: '2.14.8', by: 'config' },
    ],
    [
      'the instance in the requesting service account namespace',
      { username: controller('team-b'), instances: TWO },
      { version: '3.4.1', by: 'service-account', instance: 'team-b' },
    ],
    [
      'the other instance for the other service account',
      { username: controller('argocd'), instances: TWO },
      { version: '2.14.3', by: 'service-account', instance: 'argocd' },
    ],
    [
      'any service account of that namespace',
      { username: 'system:serviceaccount:team-b:argocd-server', instances: TWO },
      { version: '3.4.1', by: 'service-account', instance: 'team-b' },
    ],
    [
      'an instance with an unknown version answers for itself',
      { username: controller('edge'), instances: WITH_UNKNOWN },
      { version: undefined, by: 'service-account', instance: 'edge' },
    ],
    [
      'the service account wins over the tracking id',
      { username: controller('argocd'), object: tracked('team-b_web:batch/Job:apps/migrate'), instances: TWO },
      { version: '2.14.3', by: 'service-account', instance: 'argocd' },
    ],
    [
      'a tracking id naming an instance namespace (apps in any namespace)',
      { username: 'kubernetes-admin', object: tracked('team-b_web:batch/Job:apps/migrate'), instances: TWO },
      { version: '3.4.1', by: 'tracking', instance: 'team-b' },
    ],
    [
      'the tracking label, when configured',
      {
        username: 'kubernetes-admin',
        object: labelled('team-b_web'),
        trackingLabel: 'app.kubernetes.io/instance',
        instances: TWO,
      },
      { version: '3.4.1', by: 'tracking', instance: 'team-b' },
    ],
    [
      'the tracking label is ignored when not configured',
      { username: 'kubernetes-admin', object: labelled('team-b_web'), instances: TWO },
      { version: undefined, by: 'none' },
    ],
    [
      'a tracking id without a namespace names no instance',
      { username: 'kubernetes-admin', object: tracked('web:batch/Job:apps/migrate'), instances: TWO },
      { version: undefined, by: 'none' },
    ],
    [
      'a service account of a namespace with no instance, two instances',
      { username: controller('apps'), instances: TWO },
      { version: undefined, by: 'none' },
    ],
    [
      'the only instance of the cluster',
      { username: 'kubernetes-admin', instances: ONE },
      { version: '2.14.3', by: 'only-instance', instance: 'argocd' },
    ],
    [
      'the only instance, when the service account namespace has none',
      { username: controller('apps'), instances: ONE },
      { version: '2.14.3', by: 'only-instance', instance: 'argocd' },
    ],
    [
      'no instance known (discovery off or not synced)',
      { username: controller('argocd'), instances: NONE },
      { version: undefined, by: 'none' },
    ],
    ['no user at all', { instances: TWO }, { version: undefined, by: 'none' }],
    [
      'a username that only looks like a service account',
      { username: 'system:serviceaccount:team-b', instances: TWO },
      { version: undefined, by: 'none' },
    ],
  ])('%s', (_name, question, expected) => {
    expect(
      chooseArgoVersion({
        username: question.username,
        object: question.object ?? plain,
        pinned: question.pinned,
        instances: question.instances,
        trackingLabel: question.trackingLabel,
      }),
    ).toEqual(expected);
  });
});

describe('withInstances', () => {
  it('adds the controllers of discovered instances to the configured controller identities, once each', () => {
    const base = decisionContext(loadConfig());
    const instances = new Map<string, ArgoInstance>([
      [
        'argocd',
        { namespace: 'argocd', version: '2.14.3', source: 'test', controllerUsernames: [controller('argocd')] },
      ],
      [
        'team-c',
        {
          namespace: 'team-c',
          version: undefined,
          source: 'test',
          controllerUsernames: [controller('team-c'), 'system:serviceaccount:team-c:shard-2'],
        },
      ],
    ]);
    const context = withInstances(base, instances);
    expect(context.config.hookDetection.argocdControllerUsernames).toEqual([
      controller('argocd'),
      controller('team-c'),
      'system:serviceaccount:team-c:shard-2',
    ]);
    expect(context.argocdInstances).toBe(instances);
    expect(context.pinnedArgocdVersion).toBeUndefined();
    // The configured context is left as it was.
    expect(base.config.hookDetection.argocdControllerUsernames).toEqual([controller('argocd')]);
  });
});
