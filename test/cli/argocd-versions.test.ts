// What `hookguard check --argocd-version V` does to one hook Job on each side of the version ranges of
// data/advisories.yaml, run as a user runs it: the built CLI in a real process. The ranges rest on each Argo CD tag's
// go.mod pin of gitops-engine: only 2.14.3 and 3.0.0 and later have the hook finalizer; argo-cd#25916 is in 3.4.0.
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { DEFAULT_GUARD_CONTAINER } from '../support/objects.js';

/** A chart's pre-upgrade hook Job that deletes itself as soon as it finishes, with its delete policy set. */
const FAST_HOOK_JOB = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: apps
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  ttlSecondsAfterFinished: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: alpine:3.20
          command: ["true"]
`;

const GUARD = { op: 'add', path: '/spec/template/spec/initContainers', value: [DEFAULT_GUARD_CONTAINER] };
const TTL_FLOOR = { op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 };
// hook-deadline at every version: no deadline set by default, the missing one named.
const DEADLINE_FINDING = ['hook-deadline', undefined];

function check(version: string) {
  const run = runCli(['check', '-', '--argocd-version', version, '--output', 'json'], FAST_HOOK_JOB);
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  const [result] = JSON.parse(run.stdout).results;
  return result as { patch: unknown[]; findings: { rule: string; action: string; advisory?: string }[] };
}

describe('hookguard check --argocd-version, per Argo CD version', () => {
  it.each([
    // No hook finalizer: the TTL race only, so the TTL floor and no guard.
    ['2.13.3', [TTL_FLOOR], [['ttl-floor', 'argocd-hook-ttl-race'], DEADLINE_FINDING]],
    ['2.14.2', [TTL_FLOOR], [['ttl-floor', 'argocd-hook-ttl-race'], DEADLINE_FINDING]],
    ['2.14.8', [TTL_FLOOR], [['ttl-floor', 'argocd-hook-ttl-race'], DEADLINE_FINDING]],
    // The finalizer, and the fast-Job race with it: the guard, and the TTL floor.
    [
      '2.14.3',
      [GUARD, TTL_FLOOR],
      [
        ['ttl-floor', 'argocd-fast-hook-finalizer-race'],
        ['min-runtime', 'argocd-fast-hook-finalizer-race'],
        DEADLINE_FINDING,
      ],
    ],
    [
      '3.1.0',
      [GUARD, TTL_FLOOR],
      [
        ['ttl-floor', 'argocd-fast-hook-finalizer-race'],
        ['min-runtime', 'argocd-fast-hook-finalizer-race'],
        DEADLINE_FINDING,
      ],
    ],
    // argo-cd#25916 removes the finalizer whatever the hook's speed, and the finalizer outlasts any TTL.
    ['3.4.0', [], [DEADLINE_FINDING]],
  ])('at %s: patch and findings', (version, patch, findings) => {
    const result = check(version);
    expect(result.patch).toEqual(patch);
    expect(result.findings.map((finding) => [finding.rule, finding.advisory])).toEqual(findings);
  });

  it('prints, from 3.1.4 on, that gitops-engine#770 ends a stuck sync at the next sync', () => {
    const run = runCli(['check', '-', '--argocd-version', '3.3.6'], FAST_HOOK_JOB);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      "  mutate min-runtime [argocd-fast-hook-finalizer-race]: added init container hookguard-min-runtime waiting 10s: a hook that ends before Argo CD sees it run keeps Argo CD's hook finalizer, and the sync waits on it\n" +
        '         note: gitops-engine#770 is in this Argo CD: a finalizer this hook keeps is removed at the next sync, so a stuck sync ends there\n',
    );
    expect(runCli(['check', '-', '--argocd-version', '3.1.3'], FAST_HOOK_JOB).stdout).not.toContain('note:');
  });
});
