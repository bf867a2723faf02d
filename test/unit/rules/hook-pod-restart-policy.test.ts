import { describe, expect, it } from 'vitest';
import type { Stage } from '../../../src/core/rule.js';
import type { KubeObject } from '../../../src/core/types.js';
import { hookPodRestartPolicy, hookPodRestartPolicyAtRender } from '../../../src/rules/hook-pod-restart-policy.js';
import { ARGOCD_CONTROLLER, contextFor, hookPod } from '../../support/objects.js';

const HELM_TEST = { 'helm.sh/hook': 'test' };
const ARGO_SYNC = { 'argocd.argoproj.io/hook': 'Sync' };
const SET_NEVER = 'set spec.restartPolicy: Never (none set means Always, and a hook Pod with Always never succeeds)';
const ALWAYS_TO_NEVER =
  'changed spec.restartPolicy from Always to Never: a hook Pod with Always never succeeds (Always is also the API default)';

function podWith(
  restartPolicy: string | null | undefined,
  annotations: Record<string, string> = HELM_TEST,
): KubeObject {
  const pod = hookPod(annotations);
  const spec = pod.spec as Record<string, unknown>;
  if (restartPolicy === undefined) delete spec.restartPolicy;
  else spec.restartPolicy = restartPolicy;
  return pod;
}

describe('hook-pod-restart-policy', () => {
  it.each<[Stage, string | null | undefined, string | null | undefined, string[]]>([
    // Render time: the author's manifest. Only a missing policy is set; an explicit Always is the validator's.
    ['render', undefined, 'Never', [SET_NEVER]],
    ['render', null, 'Never', [SET_NEVER]],
    ['render', 'Always', 'Always', []],
    ['render', 'OnFailure', 'OnFailure', []],
    ['render', 'Never', 'Never', []],
    // Admission: the API server has defaulted a missing policy to Always, so Always is all there is to read.
    ['admission', 'Always', 'Never', [ALWAYS_TO_NEVER]],
    ['admission', 'OnFailure', 'OnFailure', []],
    ['admission', 'Never', 'Never', []],
    ['admission', undefined, undefined, []],
  ])('at %s, restartPolicy %j becomes %j', (stage, before, after, mutations) => {
    const pod = podWith(before);
    const report = hookPodRestartPolicy.mutate(pod, contextFor(pod, { stage }));
    expect((pod.spec as Record<string, unknown>).restartPolicy).toBe(after);
    expect(report).toEqual({ mutations, warnings: [] });
  });

  it.each([
    ['a Helm test Pod', HELM_TEST, 'kubernetes-admin'],
    ['an Argo CD Sync hook Pod', ARGO_SYNC, ARGOCD_CONTROLLER],
  ])(
    'denies an explicit Always at render time, saying why the hook would never finish: %s',
    (_name, annotations, username) => {
      const pod = podWith('Always', annotations);
      const findings = hookPodRestartPolicyAtRender.validate(pod, contextFor(pod, { stage: 'render', username }), []);
      expect(findings).toEqual([
        {
          rule: 'hook-pod-restart-policy',
          action: 'deny',
          message:
            'Pod apps/check: restartPolicy Always keeps this hook from ever finishing: its containers restart after they exit, so the Pod never reaches Succeeded (Helm waits until its timeout; Argo CD counts it done once it runs, before its command ends). Set restartPolicy: Never',
        },
      ]);
    },
  );

  it.each([['Never'], ['OnFailure']])('allows restartPolicy %s at render time', (policy) => {
    const pod = podWith(policy);
    expect(hookPodRestartPolicyAtRender.validate(pod, contextFor(pod, { stage: 'render' }), [])).toEqual([]);
  });

  it('reads bare Pods only (a Job template cannot hold Always); the denial exists at render time only', () => {
    expect([hookPodRestartPolicy.kinds, hookPodRestartPolicy.stages, hookPodRestartPolicyAtRender.stages]).toEqual([
      ['Pod'],
      ['admission', 'render'],
      ['render'],
    ]);
    expect(hookPodRestartPolicyAtRender.id).toBe(hookPodRestartPolicy.id);
  });
});
