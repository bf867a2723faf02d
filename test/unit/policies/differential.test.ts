// `hookguard policies` against decide(): every hook fixture and a table of hooks of our own, as the API server hands
// them to admission (defaulted), go through the generated admission policies (their CEL run by @bufbuild/cel,
// test/support/admission-policies.ts) and through decide() with only the rules the policies cover. The stored objects
// must be equal, but for what --explain says the policies leave out (idempotent-cleanup's command rewrites), and the
// hook-deadline warnings the same.
import { describe, expect, it } from 'vitest';
import type { DecisionContext } from '../../../src/core/context.js';
import type { KubeObject } from '../../../src/core/types.js';
import { ANNOTATION_READ_LIMIT } from '../../../src/policies/cel.js';
import { admissionPolicies, PARAMS_NAME } from '../../../src/policies/generate.js';
import { mutatedByPolicies, policyWarnings } from '../../support/admission-policies.js';
import { loadFixtures } from '../../support/fixtures.js';
import { byWebhook, contextOf, defaulted } from '../../support/policy-reference.js';
import { ARGOCD_CONTROLLER, HOOK_FINALIZER, hookJob, hookPod } from '../../support/objects.js';

const HELM_USER = 'system:serviceaccount:ci:helm';

function byPolicies(context: DecisionContext, object: KubeObject, username: string) {
  const objects = admissionPolicies(context, { namespace: 'hookguard' });
  const params = new Map(objects.filter((item) => item.kind === 'ConfigMap').map((item) => [PARAMS_NAME, item]));
  const request = { object, username, params };
  return { stored: mutatedByPolicies(objects, request), warnings: policyWarnings(objects, request) };
}

interface Case {
  name: string;
  object: KubeObject;
  username?: string;
}

const SYNC = { 'argocd.argoproj.io/hook': 'PreSync' };
const ours: Case[] = [
  { name: 'a Helm hook Job', object: hookJob() },
  { name: 'a Helm test hook Job', object: hookJob({ 'helm.sh/hook': 'test' }) },
  { name: 'a Helm hook spelt Test, Post-Delete', object: hookJob({ 'helm.sh/hook': ' Test , Post-Delete' }) },
  {
    name: 'a Helm hook with hook-succeeded, spelt otherwise',
    object: hookJob({ 'helm.sh/hook': 'post-install', 'helm.sh/hook-delete-policy': ' Hook-Succeeded' }),
  },
  {
    name: 'an Argo CD hook with Helm-spelt policy HookSucceeded (Argo CD reads it exactly)',
    object: hookJob({ ...SYNC, 'helm.sh/hook-delete-policy': 'Hook-Succeeded' }),
  },
  {
    name: 'an Argo CD hook with HookSucceeded',
    object: hookJob({ ...SYNC, 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation, HookSucceeded' }),
  },
  {
    name: 'a Helm hook applied by the Argo CD controller (tracking)',
    object: hookJob({ 'helm.sh/hook': 'pre-upgrade', 'argocd.argoproj.io/tracking-id': 'app:batch/Job:apps/migrate' }),
  },
  {
    name: 'a Helm hook applied by the Argo CD controller (its user)',
    object: hookJob({ 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': 'hook-succeeded' }),
    username: ARGOCD_CONTROLLER,
  },
  { name: 'a Helm hook Job with a TTL of 5', object: hookJob(undefined, { ttlSecondsAfterFinished: 5 }) },
  { name: 'an Argo CD sync hook with a TTL of 5', object: hookJob(SYNC, { ttlSecondsAfterFinished: 5 }) },
  {
    name: 'an Argo CD PostDelete hook with a TTL of 5',
    object: hookJob({ 'argocd.argoproj.io/hook': 'PostDelete' }, { ttlSecondsAfterFinished: 5 }),
  },
  {
    name: 'an Argo CD Skip hook with a Helm pre-install type, TTL 5',
    object: hookJob(
      { 'argocd.argoproj.io/hook': 'Skip', 'helm.sh/hook': 'pre-install' },
      { ttlSecondsAfterFinished: 5 },
    ),
  },
  {
    name: 'a TTL of 5 that skips ttl-floor and hook-ttl',
    object: hookJob(
      { 'helm.sh/hook': 'post-install', 'hookguard.io/skip': 'hook-ttl, ttl-floor' },
      { ttlSecondsAfterFinished: 5 },
    ),
  },
  {
    // The longest values the policies read (ANNOTATION_READ_LIMIT): read as the webhook reads them.
    name: 'a skip, hook types and delete policy each 512 characters long',
    object: hookJob(
      {
        'helm.sh/hook': `pre-delete${','.repeat(ANNOTATION_READ_LIMIT - 'pre-delete'.length)}`,
        'helm.sh/hook-delete-policy': `before-hook-creation${' '.repeat(ANNOTATION_READ_LIMIT - 'before-hook-creation'.length)}`,
        'hookguard.io/skip': `hook-ttl${' '.repeat(ANNOTATION_READ_LIMIT - 'hook-ttl'.length)}`,
      },
      { ttlSecondsAfterFinished: 5 },
    ),
  },
  {
    name: 'an object in audit mode',
    object: hookJob({ 'helm.sh/hook': 'post-install', 'hookguard.io/mode': ' audit ' }),
  },
  {
    name: 'a cleanup hook with backoffLimit 1',
    object: hookJob({ 'helm.sh/hook': 'post-delete' }, { backoffLimit: 1 }),
  },
  {
    name: 'an Argo CD PreDelete hook with backoffLimit 0',
    object: hookJob({ 'argocd.argoproj.io/hook': 'PreDelete' }, { backoffLimit: 0 }),
  },
  {
    name: 'a cleanup hook that deletes with kubectl (the rewrite is left out)',
    object: hookJob(
      { 'helm.sh/hook': 'pre-delete' },
      {
        backoffLimit: 2,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'k', image: 'bitnami/kubectl', command: ['sh', '-c', 'kubectl delete cm x'] }],
          },
        },
      },
    ),
  },
  {
    name: 'a Job with the guard, a container at FallbackToLogsOnError and one at File',
    object: hookJob(undefined, {
      template: {
        spec: {
          restartPolicy: 'Never',
          initContainers: [
            { name: 'hookguard-min-runtime', image: 'busybox', command: ['sleep', '10'] },
            { name: 'init', image: 'alpine' },
          ],
          containers: [
            { name: 'a', image: 'alpine', terminationMessagePolicy: 'FallbackToLogsOnError' },
            { name: 'b', image: 'alpine', terminationMessagePolicy: 'File' },
          ],
        },
      },
    }),
  },
  {
    name: 'a hook with the label set otherwise',
    object: {
      ...hookJob(),
      metadata: {
        name: 'm',
        namespace: 'apps',
        labels: { 'hookguard.io/hook': 'no' },
        annotations: { 'helm.sh/hook': 'pre-install' },
      },
    },
  },
  {
    name: 'a hook in kube-system',
    object: {
      ...hookJob(),
      metadata: { name: 'm', namespace: 'kube-system', annotations: { 'helm.sh/hook': 'pre-install' } },
    },
  },
  { name: 'a Job running 3 Pods', object: hookJob(undefined, { completions: 3 }) },
  { name: 'a Job with a deadline', object: hookJob(undefined, { activeDeadlineSeconds: 300 }) },
  {
    name: 'a hook skipping hook-deadline',
    object: hookJob({ 'helm.sh/hook': 'pre-install', 'hookguard.io/skip': 'hook-deadline' }),
  },
  {
    name: 'a bare hook Pod (restartPolicy defaulted to Always)',
    object: { ...hookPod({ 'helm.sh/hook': 'test' }), spec: { containers: [{ name: 't', image: 'alpine' }] } },
  },
  {
    name: 'a bare hook Pod with OnFailure',
    object: {
      ...hookPod({ 'helm.sh/hook': 'test' }),
      spec: { restartPolicy: 'OnFailure', containers: [{ name: 't', image: 'alpine' }] },
    },
  },
  {
    name: 'an Argo CD sync hook Pod with the hook finalizer',
    object: {
      ...hookPod(SYNC),
      metadata: { name: 'p', namespace: 'apps', annotations: SYNC, finalizers: [HOOK_FINALIZER] },
    },
  },
  { name: 'a Job that is no hook', object: { ...hookJob(), metadata: { name: 'plain', namespace: 'apps' } } },
];

const cases: Case[] = [
  ...loadFixtures().map((fixture) => ({ name: `fixture ${fixture.file}`, object: fixture.object })),
  ...ours,
];

const CONFIGS: Array<[string, Record<string, string>, string | undefined]> = [
  ['the defaults, Argo CD unknown', {}, undefined],
  ['Argo CD 3.3.0 (ttl-floor on sync hooks)', {}, '3.3.0'],
  ['Argo CD 3.5.1 (no ttl-floor on sync hooks)', {}, '3.5.1'],
  [
    'a deadline configured, a TTL floor of 120',
    {
      'rules.hookDeadline.activeDeadlineSeconds': '600',
      'rules.ttlFloor.minTtlSecondsAfterFinished': '120',
      'rules.hookTtl.ttlSecondsAfterFinished': '30',
    },
    undefined,
  ],
  [
    'a tracking label, 5 retries',
    { 'argocd.trackingLabel': 'argocd.argoproj.io/instance', 'rules.idempotentCleanup.minBackoffLimit': '5' },
    '2.14.3',
  ],
  [
    'no TTL floor, no warnings',
    { 'rules.ttlFloor.minTtlSecondsAfterFinished': '0', 'rules.hookDeadline.warn': 'false' },
    undefined,
  ],
];

describe.each(CONFIGS)('hookguard policies against decide(): %s', (_name, config, argocdVersion) => {
  const context = contextOf(config, argocdVersion);
  it.each(cases)('$name', ({ object, username }) => {
    const admitted = defaulted(object);
    for (const user of username ? [username] : [HELM_USER, ARGOCD_CONTROLLER]) {
      const webhook = byWebhook(context, admitted, user);
      const policies = byPolicies(context, admitted, user);
      expect(policies.stored, `as ${user}`).toEqual(webhook.stored);
      expect(policies.warnings, `as ${user}`).toEqual(webhook.warnings);
    }
  });
});

describe('the differential test can fail', () => {
  it('sees a policy that changes what the webhook does not', () => {
    const context = contextOf({});
    const objects = admissionPolicies(context, { namespace: 'hookguard' });
    const wrong = objects.map((item) =>
      item.metadata?.name === 'hookguard-hook-ttl' && item.kind === 'MutatingAdmissionPolicy'
        ? JSON.parse(
            JSON.stringify(item)
              .replace('"no-ttl"', '"no-ttl-x"')
              .replace('!has(object.spec.ttlSecondsAfterFinished)', 'true'),
          )
        : item,
    ) as KubeObject[];
    const admitted = defaulted(hookJob(undefined, { ttlSecondsAfterFinished: 7200 }));
    expect(mutatedByPolicies(wrong, { object: admitted, username: HELM_USER })).not.toEqual(
      byWebhook(context, admitted, HELM_USER).stored,
    );
  });

  it('refuses an initialiser whose type name is not its field path', () => {
    const object = defaulted(hookPod({ 'helm.sh/hook': 'test' }));
    const policy = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'wrong' },
      spec: {
        matchConstraints: { resourceRules: [{ resources: ['pods'], operations: ['CREATE'] }] },
        matchConditions: [],
        failurePolicy: 'Ignore',
        mutations: [
          { patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{spec: Object.status{}}' } },
        ],
      },
    };
    const binding = { kind: 'MutatingAdmissionPolicyBinding', spec: { policyName: 'wrong' } };
    expect(() => mutatedByPolicies([policy, binding] as KubeObject[], { object, username: HELM_USER })).toThrow(
      'type mismatch: Object.status initialises field spec of Object',
    );
  });
});

describe('an annotation longer than the policies read (ANNOTATION_READ_LIMIT, 512 characters)', () => {
  // Where the webhook and the policies part, by design: kube-apiserver's CEL split costs time with the square of the
  // items (test/cluster/policies.test.ts measures it), so the policies read a longer value as absent.
  it('is read as absent: a skip of 513 characters skips nothing, where the webhook reads it', () => {
    const context = contextOf({});
    const skip = (length: number) =>
      defaulted(hookJob({ 'helm.sh/hook': 'post-install', 'hookguard.io/skip': `hook-ttl${' '.repeat(length - 8)}` }));
    expect(byPolicies(context, skip(ANNOTATION_READ_LIMIT), HELM_USER).stored.spec).not.toHaveProperty(
      'ttlSecondsAfterFinished',
    );
    expect(byPolicies(context, skip(ANNOTATION_READ_LIMIT + 1), HELM_USER).stored.spec).toHaveProperty(
      'ttlSecondsAfterFinished',
      86400,
    );
    expect(byWebhook(context, skip(ANNOTATION_READ_LIMIT + 1), HELM_USER).stored.spec).not.toHaveProperty(
      'ttlSecondsAfterFinished',
    );
  });

  it('is read as absent: hook types of 513 characters make no cleanup hook, so its retries stay as written', () => {
    const context = contextOf({});
    const cleanup = (length: number) =>
      defaulted(hookJob({ 'helm.sh/hook': `pre-delete${','.repeat(length - 10)}` }, { backoffLimit: 0 }));
    expect(byPolicies(context, cleanup(ANNOTATION_READ_LIMIT), HELM_USER).stored.spec).toHaveProperty(
      'backoffLimit',
      3,
    );
    expect(byPolicies(context, cleanup(ANNOTATION_READ_LIMIT + 1), HELM_USER).stored.spec).toHaveProperty(
      'backoffLimit',
      0,
    );
  });
});

describe('what the policies do to a plain Helm hook Job (exactly)', () => {
  it('sets the TTL, the label and FallbackToLogsOnError, and warns about the deadline', () => {
    const context = contextOf({});
    const admitted = defaulted(hookJob());
    const policies = byPolicies(context, admitted, HELM_USER);
    expect(policies.stored).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'migrate',
        namespace: 'apps',
        annotations: { 'helm.sh/hook': 'pre-upgrade' },
        labels: { 'hookguard.io/hook': 'admitted' },
      },
      spec: {
        backoffLimit: 6,
        ttlSecondsAfterFinished: 86400,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [
              {
                name: 'main',
                image: 'alpine:3.20',
                command: ['sh', '-c', 'echo hi'],
                terminationMessagePolicy: 'FallbackToLogsOnError',
              },
            ],
          },
        },
      },
    });
    expect(policies.warnings).toEqual([
      'hookguard [hook-deadline]: no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever',
    ]);
  });
});
