// Argo CD's delete-phase hooks (PreDelete from v3.3.0, PostDelete, and Helm's pre-/post-delete it maps there) are
// created by the application controller with a plain create (argo-cd controller/hook.go executeHooks at v3.0.0,
// v3.3.0 and v3.5.1) and never get the hook finalizer (gitops-engine pkg/sync/sync_context.go getSyncTasks adds it
// to sync hooks only): no rule that exists because of the finalizer applies, and nothing denies them.
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import type { AdmissionRequest, KubeObject } from '../../../src/core/types.js';
import { runCommand } from '../../support/command.js';
import { ARGOCD_CONTROLLER, HOOK_FINALIZER, hookJob } from '../../support/objects.js';

function manifest(hook: string, extra: string): string {
  return `apiVersion: batch/v1
kind: Job
metadata:
  name: cleanup
  namespace: apps
  annotations:
    ${hook}
    ${extra}
spec:
  activeDeadlineSeconds: 5
  ttlSecondsAfterFinished: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: alpine:3.20
          command: ["true"]
`;
}

const DELETE_PHASE = [
  'argocd.argoproj.io/hook: PostDelete',
  'argocd.argoproj.io/hook: PreDelete',
  'helm.sh/hook: post-delete',
  'helm.sh/hook: pre-delete',
];
const SKIPS = ['hookguard.io/skip: min-runtime,ttl-floor', 'hookguard.io/min-runtime-seconds: "30"'];

async function check(text: string, version = '3.1.0') {
  const run = await runCommand(['check', '-', '--argocd-version', version, '--output', 'json'], text);
  const [result] = JSON.parse(run.stdout).results;
  return { status: run.status, result };
}

const ruleIds = (findings: { rule: string }[]) => [...new Set(findings.map((finding) => finding.rule))];

describe('delete-phase hooks under Argo CD', () => {
  it.each(DELETE_PHASE.flatMap((hook) => SKIPS.map((extra) => [hook, extra])))(
    '%s (%s) at 3.1.0, with a 5 s deadline: no guard, never denied',
    async (hook, extra) => {
      const { status, result } = await check(manifest(hook, extra));
      expect(status).toBe(0);
      expect(result.allowed).toBe(true);
      expect(ruleIds(result.findings)).not.toContain('version-race');
      expect(ruleIds(result.findings)).not.toContain('min-runtime');
      expect(JSON.stringify(result.patch)).not.toContain('hookguard-min-runtime');
    },
  );

  it('a PostSync hook with the same settings is guarded at 3.1.0, its 5 s deadline raised by the 30 s wait', async () => {
    const { status, result } = await check(manifest('argocd.argoproj.io/hook: PostSync', SKIPS[1]!));
    expect(status).toBe(0);
    expect(result.findings).toContainEqual({
      rule: 'min-runtime',
      action: 'mutate',
      advisory: 'argocd-fast-hook-finalizer-race',
      message:
        "raised spec.activeDeadlineSeconds from 5 to 35: the guard's 30s wait counts against it, and the hook keeps all its own time",
    });
  });

  it('keeps the TTL floor, as for a Helm hook, and names no advisory: executeHooks creates a vanished hook again', async () => {
    const { result } = await check(manifest('argocd.argoproj.io/hook: PostDelete', ''));
    expect(result.findings).toContainEqual({
      rule: 'ttl-floor',
      action: 'mutate',
      message:
        'raised spec.ttlSecondsAfterFinished from 0 to 60: Argo CD runs a delete hook again when it is gone before Argo CD saw it finish',
    });
  });

  it('with the version unknown, the guard goes to sync hooks only', async () => {
    const noDeadline = (hook: string) => manifest(hook, '').replace('  activeDeadlineSeconds: 5\n', '');
    const run = await runCommand(['check', '-', '--output', 'json'], noDeadline('argocd.argoproj.io/hook: PostDelete'));
    const sync = await runCommand(['check', '-', '--output', 'json'], noDeadline('argocd.argoproj.io/hook: PostSync'));
    expect(JSON.stringify(JSON.parse(sync.stdout).results[0].patch)).toContain('hookguard-min-runtime');
    expect(JSON.stringify(JSON.parse(run.stdout).results[0].patch)).not.toContain('hookguard-min-runtime');
  });

  it('at admission: a PostDelete Job Argo CD 3.1.0 creates (no finalizer) gets no guard and passes /validate', () => {
    const context = decisionContext(loadConfig(), '3.1.0');
    const object: KubeObject = hookJob(
      { 'argocd.argoproj.io/hook': 'PostDelete', 'hookguard.io/skip': 'min-runtime' },
      { activeDeadlineSeconds: 5 },
    );
    const request = (endpoint: string): AdmissionRequest => ({
      uid: `u-${endpoint}`,
      kind: { group: 'batch', version: 'v1', kind: 'Job' },
      operation: 'CREATE',
      namespace: 'apps',
      userInfo: { username: ARGOCD_CONTROLLER },
      object,
    });
    const mutated = decide(request('mutate'), 'mutate', context);
    expect(mutated.rules).not.toContain('min-runtime');
    const validated = decide(request('validate'), 'validate', context);
    expect(validated.allowed).toBe(true);
    expect(validated.findings).toEqual([]);
    // The same Job as a PostSync hook carries the finalizer and is denied for the skip.
    const sync = hookJob(
      { 'argocd.argoproj.io/hook': 'PostSync', 'hookguard.io/skip': 'min-runtime' },
      { activeDeadlineSeconds: 5 },
    );
    sync.metadata!.finalizers = [HOOK_FINALIZER];
    const denied = decide({ ...request('validate'), object: sync }, 'validate', context);
    expect(denied.allowed).toBe(false);
  });
});
