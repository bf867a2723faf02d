// How hook types are read: Helm trims and lowercases each (helm v4.3.2 pkg/release/v1/util/manifest_sorter.go), Argo
// CD matches its own types and Helm's exactly (gitops-engine pkg/sync/hook/helm/type.go; argo-cd controller/hook.go),
// and never applies Helm's test and rollback hooks, which render time under Argo CD therefore leaves alone.
import { describe, expect, it } from 'vitest';
import { readHook } from '../../src/core/hook.js';
import { runCommand } from '../support/command.js';
import { ARGOCD_CONTROLLER, hookJob } from '../support/objects.js';

const detection = { argocdControllerUsernames: [ARGOCD_CONTROLLER] };

describe('readHook: hook types', () => {
  it.each([
    [' Post-Delete ', ['post-delete'], true, false],
    ['PRE-DELETE,Pre-Upgrade', ['pre-delete', 'pre-upgrade'], true, false],
    ['Test', ['test'], false, true],
    ['test-success', ['test-success'], false, true],
  ])('Helm reads helm.sh/hook %j as %j', (value, phases, cleanup, testOnly) => {
    expect(readHook(hookJob({ 'helm.sh/hook': value }), 'alice', detection)).toMatchObject({
      system: 'helm',
      phases,
      cleanup,
      testOnly,
    });
  });

  it('Argo CD types stay exact: postdelete is no PostDelete', () => {
    expect(readHook(hookJob({ 'argocd.argoproj.io/hook': 'postdelete' }), 'alice', detection)).toMatchObject({
      phases: ['postdelete'],
      cleanup: false,
    });
  });

  it.each([
    ['test', true],
    ['pre-rollback,post-rollback', true],
    ['Post-Install', true],
    ['post-install', false],
    ['post-delete', false],
    ['test,pre-upgrade', false],
  ])('applied by Argo CD, helm.sh/hook %j is one Argo CD never applies: %s', (value, never) => {
    const hook = readHook(hookJob({ 'helm.sh/hook': value }), ARGOCD_CONTROLLER, detection);
    expect(hook?.argoNeverApplies).toBe(never);
    // Helm itself applies every one of them.
    expect(readHook(hookJob({ 'helm.sh/hook': value }), 'alice', detection)?.argoNeverApplies).toBe(false);
  });
});

const TEST_POD = `apiVersion: v1
kind: Pod
metadata:
  name: smoke
  namespace: apps
  annotations:
    helm.sh/hook: Test
spec:
  containers:
    - name: main
      image: alpine:3.20
      command: ["true"]
`;

const CLEANUP_JOB = `apiVersion: batch/v1
kind: Job
metadata:
  name: cleanup
  namespace: apps
  annotations:
    helm.sh/hook: Post-Delete
spec:
  activeDeadlineSeconds: 600
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: bitnami/kubectl:1.31
          command: ["kubectl", "delete", "configmap", "x"]
`;

async function check(text: string, ...flags: string[]) {
  const run = await runCommand(['check', '-', '--output', 'json', ...flags], text);
  return JSON.parse(run.stdout).results[0] as { patch: unknown[]; findings: { rule: string; message: string }[] };
}

describe('hookguard check: hook types as each tool reads them', () => {
  it('plain Helm: a Post-Delete Job is a cleanup hook: retried, its delete made idempotent', async () => {
    const result = await check(CLEANUP_JOB);
    expect(result.findings.filter((finding) => finding.rule === 'idempotent-cleanup')).toEqual([
      {
        rule: 'idempotent-cleanup',
        action: 'mutate',
        message:
          'container main: --ignore-not-found for kubectl delete configmap x (exec form): a retry after a partial run does not fail on what it already deleted',
      },
      {
        rule: 'idempotent-cleanup',
        action: 'mutate',
        message:
          'raised spec.backoffLimit from 1 to 3: a cleanup that fails once is retried before helm uninstall fails on it',
      },
    ]);
  });

  it('plain Helm: a Test Pod is a test hook, kept for helm test --logs (no hook-succeeded)', async () => {
    const result = await check(TEST_POD);
    expect(result.patch).toContainEqual({
      op: 'add',
      path: '/metadata/annotations/helm.sh~1hook-delete-policy',
      value: 'before-hook-creation',
    });
  });

  it.each([
    ['a Helm test Pod', TEST_POD.replace('helm.sh/hook: Test', 'helm.sh/hook: test')],
    ['a Helm rollback Job', CLEANUP_JOB.replace('Post-Delete', 'pre-rollback')],
    ['a Helm hook Argo CD does not read (Post-Delete)', CLEANUP_JOB],
  ])('under Argo CD, render time leaves %s alone, and says so', async (_name, text) => {
    const result = await check(text, '--argocd-version', '3.1.0');
    expect(result.patch).toEqual([]);
    expect(result.findings).toEqual([
      {
        rule: 'not-judged',
        action: 'warn',
        message: expect.stringMatching(
          /that no rule judged: Argo CD never applies this Helm hook type \(only pre\/post-install, -upgrade and -delete\), so it is left as written$/,
        ),
      },
    ]);
  });
});
