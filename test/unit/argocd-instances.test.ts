import { describe, expect, it } from 'vitest';
import {
  chooseArgoVersion,
  judgedVersions,
  type ArgoInstance,
  type RemoteArgo,
  type VersionChoice,
} from '../../src/core/argocd-instances.js';
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
// One Argo CD without the hook finalizer (2.14.8), one with it (3.1.0), and one that cannot say.
const OLD_AND_NEW = new Map([instance('argocd', '2.14.8'), instance('team-b', '3.1.0')]);
const OLD_AND_UNKNOWN = new Map([instance('argocd', '2.14.8'), instance('edge', undefined)]);
const TWO_OLD = new Map([instance('argocd', '2.14.8'), instance('legacy', '2.13.3')]);
const SAME_VERSION = new Map([instance('argocd', '3.1.0'), instance('team-b', '3.1.0')]);

const MANAGER = 'system:serviceaccount:kube-system:argocd-manager';
const remoteAt = (version: string | undefined, username = MANAGER): RemoteArgo => ({ username, version });

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
        remote?: RemoteArgo[];
        trackingLabel?: string;
        carriesHookFinalizer?: boolean;
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
      'a pinned version wins over a remote identity',
      { username: MANAGER, pinned: '2.14.8', instances: TWO, remote: [remoteAt('3.1.0')] },
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
      'a remote identity: its configured version, not the local instance',
      { username: MANAGER, instances: ONE, remote: [remoteAt('3.1.0')] },
      { version: '3.1.0', by: 'remote', remote: MANAGER },
    ],
    [
      'a remote identity without a version (the default argocd-manager): unknown, never the only instance',
      { username: MANAGER, instances: ONE, remote: [remoteAt(undefined)] },
      { version: undefined, by: 'remote', remote: MANAGER },
    ],
    [
      'a remote identity wins over the instance in the namespace of its service account',
      {
        username: 'system:serviceaccount:argocd:hub',
        instances: TWO,
        remote: [remoteAt('3.1.0', 'system:serviceaccount:argocd:hub')],
      },
      { version: '3.1.0', by: 'remote', remote: 'system:serviceaccount:argocd:hub' },
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
      'the only instance, beside a remote identity of unknown version (it asserts no Argo CD)',
      { username: 'kubernetes-admin', instances: ONE, remote: [remoteAt(undefined)] },
      { version: '2.14.3', by: 'only-instance', instance: 'argocd' },
    ],
    [
      'the only Argo CD is a remote one with a version',
      { username: 'kubernetes-admin', instances: NONE, remote: [remoteAt('3.1.0')] },
      { version: '3.1.0', by: 'only-instance', remote: MANAGER },
    ],
    [
      'two instances and nothing says which: the union of both',
      { username: 'kubernetes-admin', instances: TWO },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'team-b', version: '3.4.1' },
        ],
      },
    ],
    [
      'a service account of a namespace with no instance: the union',
      { username: controller('apps'), instances: TWO },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'team-b', version: '3.4.1' },
        ],
      },
    ],
    [
      'the tracking label is ignored when not configured: the union',
      { username: 'kubernetes-admin', object: labelled('team-b_web'), instances: TWO },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'team-b', version: '3.4.1' },
        ],
      },
    ],
    [
      'a tracking id without a namespace names no instance: the union',
      { username: 'kubernetes-admin', object: tracked('web:batch/Job:apps/migrate'), instances: TWO },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'team-b', version: '3.4.1' },
        ],
      },
    ],
    [
      'one instance and a remote Argo CD with a version: the union of both',
      { username: 'system:serviceaccount:apps:deployer', instances: ONE, remote: [remoteAt('3.1.0')] },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { remote: MANAGER, version: '3.1.0' },
        ],
      },
    ],
    [
      'a union with an instance of unknown version',
      { username: 'kubernetes-admin', instances: WITH_UNKNOWN },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'edge', version: null },
        ],
      },
    ],
    [
      'a union of one version is that version',
      { username: 'kubernetes-admin', instances: SAME_VERSION },
      {
        version: '3.1.0',
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '3.1.0' },
          { instance: 'team-b', version: '3.1.0' },
        ],
      },
    ],
    [
      'a CREATE carrying the hook finalizer rules out the Argo CD that does not add it',
      { username: 'kubernetes-admin', instances: OLD_AND_NEW, carriesHookFinalizer: true },
      { version: '3.1.0', by: 'hook-finalizer', instance: 'team-b' },
    ],
    [
      'without the finalizer nothing is ruled out (absence proves nothing: PreDelete hooks never carry it)',
      { username: 'kubernetes-admin', instances: OLD_AND_NEW },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.8' },
          { instance: 'team-b', version: '3.1.0' },
        ],
      },
    ],
    [
      'the finalizer keeps every Argo CD that adds it',
      { username: 'kubernetes-admin', instances: TWO, carriesHookFinalizer: true },
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'team-b', version: '3.4.1' },
        ],
      },
    ],
    [
      'the finalizer keeps an Argo CD of unknown version (it may add it)',
      { username: 'kubernetes-admin', instances: OLD_AND_UNKNOWN, carriesHookFinalizer: true },
      { version: undefined, by: 'hook-finalizer', instance: 'edge' },
    ],
    [
      'the finalizer rules out every known Argo CD: unknown',
      { username: 'kubernetes-admin', instances: TWO_OLD, carriesHookFinalizer: true },
      { version: undefined, by: 'none' },
    ],
    [
      'the finalizer rules out even the only instance: unknown, not its version',
      { username: 'kubernetes-admin', instances: new Map([instance('argocd', '2.14.8')]), carriesHookFinalizer: true },
      { version: undefined, by: 'none' },
    ],
    [
      'the finalizer does not override the service account',
      { username: controller('argocd'), instances: OLD_AND_NEW, carriesHookFinalizer: true },
      { version: '2.14.8', by: 'service-account', instance: 'argocd' },
    ],
    [
      'no instance known (discovery off or not synced)',
      { username: controller('argocd'), instances: NONE },
      { version: undefined, by: 'none' },
    ],
    [
      'a username that only looks like a service account, one instance',
      { username: 'system:serviceaccount:team-b', instances: ONE },
      { version: '2.14.3', by: 'only-instance', instance: 'argocd' },
    ],
  ])('%s', (_name, question, expected) => {
    expect(
      chooseArgoVersion({
        username: question.username,
        object: question.object ?? plain,
        pinned: question.pinned,
        instances: question.instances,
        remote: question.remote ?? [],
        trackingLabel: question.trackingLabel,
        carriesHookFinalizer: question.carriesHookFinalizer ?? false,
      }),
    ).toEqual(expected);
  });
});

describe('judgedVersions', () => {
  it.each<[string, VersionChoice | undefined, string | readonly string[] | undefined]>([
    ['not applied by Argo CD', undefined, undefined],
    ['one version', { version: '2.14.8', by: 'config' }, '2.14.8'],
    ['an unknown one', { version: undefined, by: 'remote', remote: MANAGER }, undefined],
    [
      'a union: every version',
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { remote: MANAGER, version: '3.1.0' },
        ],
      },
      ['2.14.3', '3.1.0'],
    ],
    [
      'a union of one version',
      {
        version: '3.1.0',
        by: 'union',
        candidates: [
          { instance: 'a', version: '3.1.0' },
          { instance: 'b', version: '3.1.0' },
        ],
      },
      '3.1.0',
    ],
    [
      'a union with an unknown version is unknown',
      {
        version: undefined,
        by: 'union',
        candidates: [
          { instance: 'argocd', version: '2.14.3' },
          { instance: 'edge', version: null },
        ],
      },
      undefined,
    ],
  ])('%s', (_name, choice, expected) => {
    expect(judgedVersions(choice)).toEqual(expected);
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
      MANAGER,
      controller('team-c'),
      'system:serviceaccount:team-c:shard-2',
    ]);
    expect(context.argocdInstances).toBe(instances);
    expect(context.pinnedArgocdVersion).toBeUndefined();
    // The configured context is left as it was.
    expect(base.config.hookDetection.argocdControllerUsernames).toEqual([controller('argocd'), MANAGER]);
  });
});
