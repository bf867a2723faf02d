import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import type { JobSpec, KubeObject } from '../../../src/core/types.js';
import { checkObject } from '../../../src/offline/check.js';
import { KUEUE_QUEUE_NAME, suspendedHook } from '../../../src/rules/suspended-hook.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob, hookPod } from '../../support/objects.js';

const ARGO_SYNC =
  'Argo CD counts this sync hook done once it is resumed, before it runs, and the sync goes on (gitops-engine health_job.go); run hooks unsuspended';
const ARGO_DELETE =
  'Argo CD counts this delete hook done while it is suspended, and the deletion goes on without it (argo-cd controller/hook.go); run hooks unsuspended';
const HELM =
  'Helm waits for this hook until --timeout while it stays suspended, queued time included (helm waitForJob); run hooks unsuspended';
const SUSPEND = 'spec.suspend: true';
const KUEUE = `label ${KUEUE_QUEUE_NAME}=batch (Kueue suspends the Job until admitted)`;

function job(annotations: Record<string, string>, suspend: unknown, queue?: string): KubeObject {
  const object = hookJob(annotations, suspend === undefined ? {} : { suspend });
  if (queue !== undefined) object.metadata!.labels = { [KUEUE_QUEUE_NAME]: queue };
  return object;
}

describe('suspended-hook', () => {
  it.each<[string, Record<string, string>, string, unknown, string | undefined, string[]]>([
    [
      'an Argo CD PreSync hook, suspended',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      ARGOCD_CONTROLLER,
      true,
      undefined,
      [`${SUSPEND}: ${ARGO_SYNC}`],
    ],
    [
      'an Argo CD PreSync hook in a Kueue queue',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      ARGOCD_CONTROLLER,
      undefined,
      'batch',
      [`${KUEUE}: ${ARGO_SYNC}`],
    ],
    [
      'Kueue’s webhook already suspended it: the label is named',
      { 'argocd.argoproj.io/hook': 'Sync' },
      ARGOCD_CONTROLLER,
      true,
      'batch',
      [`${KUEUE}: ${ARGO_SYNC}`],
    ],
    [
      'a Helm post-upgrade hook Argo CD applies',
      { 'helm.sh/hook': 'post-upgrade' },
      ARGOCD_CONTROLLER,
      true,
      undefined,
      [`${SUSPEND}: ${ARGO_SYNC}`],
    ],
    [
      'an Argo CD PreDelete hook',
      { 'argocd.argoproj.io/hook': 'PreDelete' },
      ARGOCD_CONTROLLER,
      true,
      undefined,
      [`${SUSPEND}: ${ARGO_DELETE}`],
    ],
    [
      'a Helm pre-delete hook Argo CD applies',
      { 'helm.sh/hook': 'pre-delete' },
      ARGOCD_CONTROLLER,
      undefined,
      'q',
      [`label ${KUEUE_QUEUE_NAME}=q (Kueue suspends the Job until admitted): ${ARGO_DELETE}`],
    ],
    [
      'a Helm hook Helm runs',
      { 'helm.sh/hook': 'pre-install' },
      'kubernetes-admin',
      true,
      undefined,
      [`${SUSPEND}: ${HELM}`],
    ],
    [
      'a Helm test hook Argo CD never applies: Helm runs it',
      { 'helm.sh/hook': 'test' },
      ARGOCD_CONTROLLER,
      true,
      undefined,
      [`${SUSPEND}: ${HELM}`],
    ],
    ['suspend: false', { 'argocd.argoproj.io/hook': 'PreSync' }, ARGOCD_CONTROLLER, false, undefined, []],
    [
      'suspend: "true", a string the API server refuses',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      ARGOCD_CONTROLLER,
      'true',
      undefined,
      [],
    ],
    ['neither', { 'argocd.argoproj.io/hook': 'PreSync' }, ARGOCD_CONTROLLER, undefined, undefined, []],
  ])('%s', (_name, annotations, username, suspend, queue, warnings) => {
    const object = job(annotations, suspend, queue);
    const before = structuredClone(object);
    expect(suspendedHook.mutate(object, contextFor(object, { username }))).toEqual({ mutations: [], warnings });
    expect(object).toEqual(before);
  });

  it('says nothing of a bare hook Pod in a Kueue queue: Kueue gates a Pod, which Argo CD and Helm see Pending', () => {
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'PreSync' });
    pod.metadata!.labels = { [KUEUE_QUEUE_NAME]: 'batch' };
    const context = decisionContext(loadConfig(), '3.5.1', 'render');
    const result = checkObject(pod, { file: '-', document: 1, line: 1, firstLine: '' }, 0, context, {
      username: ARGOCD_CONTROLLER,
    });
    expect(result.findings.map((finding) => finding.rule)).not.toContain('suspended-hook');
  });

  it.each(['admission', 'render'] as const)(
    'warns at %s through the whole decision, at every Argo CD version',
    (stage) => {
      for (const version of [undefined, '2.14.8', '3.3.9', '3.4.0', '3.5.1']) {
        const context = decisionContext(loadConfig(), version, stage);
        const object = job({ 'argocd.argoproj.io/hook': 'PreSync' }, true);
        const result = checkObject(object, { file: '-', document: 1, line: 1, firstLine: '' }, 0, context, {
          username: ARGOCD_CONTROLLER,
        });
        expect(result.allowed).toBe(true);
        expect(result.findings).toContainEqual({
          rule: 'suspended-hook',
          action: 'warn',
          message: `${SUSPEND}: ${ARGO_SYNC}`,
        });
        expect((object.spec as JobSpec).suspend).toBe(true);
      }
    },
  );

  it('is off with rules.suspendedHook.enabled: false', () => {
    const context = decisionContext(loadConfig({ overrides: { 'rules.suspendedHook.enabled': 'false' } }), '3.5.1');
    const result = checkObject(
      job({ 'argocd.argoproj.io/hook': 'PreSync' }, true),
      { file: '-', document: 1, line: 1, firstLine: '' },
      0,
      context,
      {
        username: ARGOCD_CONTROLLER,
      },
    );
    expect(result.findings.map((finding) => finding.rule)).not.toContain('suspended-hook');
  });
});
