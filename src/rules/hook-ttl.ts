import { ARGOCD_DELETE_POLICY, HELM_DELETE_POLICY } from '../core/annotations.js';
import { hasDeletePolicy, toolOf } from '../core/delete-policies.js';
import type { HookInfo } from '../core/hook.js';
import { annotation, jobSpecOf } from '../core/objects.js';
import { report, type MutationRule, type RuleSettings } from '../core/rule.js';
import { deletePolicy } from './delete-policy.js';
import type { KubeObject } from '../core/types.js';

// Helm 4 marks every document it hands its post-renderer with the template it came from (helm v4.3.2
// pkg/action/action.go annotateAndMerge, filenameAnnotation), so at render time the finding can name the file.
const HELM_TEMPLATE_FILE = 'postrenderer.helm.sh/postrender-filename';

/** The policy the chart should write: what it has (or the default), plus deletion on success, in its tool's words. */
function advisedPolicy(object: KubeObject, hook: HookInfo): { key: string; value: string } {
  const [key, known, fallback, succeeded] =
    hook.system === 'argocd'
      ? [ARGOCD_DELETE_POLICY, ['BeforeHookCreation', 'HookFailed'], 'BeforeHookCreation', 'HookSucceeded']
      : [HELM_DELETE_POLICY, ['before-hook-creation', 'hook-failed'], 'before-hook-creation', 'hook-succeeded'];
  const kept = (annotation(object, key) ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => known.includes(hook.system === 'argocd' ? item : item.toLowerCase()));
  return { key, value: [...(kept.length > 0 ? kept : [fallback]), succeeded].join(',') };
}

function ttlOf(settings: RuleSettings): number {
  return Math.max(settings.hookTtl.ttlSecondsAfterFinished, settings.ttlFloor.minTtlSecondsAfterFinished);
}

/**
 * What a delete policy is for, done at admission with what the live object controls: a finished hook Job must not
 * linger (a `post-delete` Job stays after `helm uninstall` forever: nothing runs that hook again to delete it). The
 * delete policy itself only takes effect in the rendered manifest (see `delete-policy`); on the stored object only
 * the Job's own `ttlSecondsAfterFinished` does (Kubernetes' TTL-after-finished controller). So a hook Job that
 * neither has one nor a policy its tool reads as delete-on-success (`hasDeletePolicy`) gets the configured TTL,
 * never below the TTL floor; a chart's TTL, whatever its value, is left to `ttl-floor`. A hook Job the TTL removed
 * is no trouble to either tool later: Helm's deletion by policy ignores NotFound (helm v4.3.2 `pkg/kube/client.go`
 * Delete), and Argo CD deletes a hook only while its live object exists (gitops-engine `pkg/sync/sync_task.go`
 * deleteBeforeCreation, deleteOnPhaseSuccessful: `t.liveObj != nil`, at 093aef0dad58).
 *
 * The TTL cannot tell the outcomes apart: Kubernetes' TTL-after-finished controller deletes a Job once it is finished,
 * Complete or Failed alike (kubernetes `pkg/controller/ttlafterfinished/ttlafterfinished_controller.go` needsCleanup
 * and jobFinishTime: the TTL counts from the JobComplete or JobFailed condition, read at 003e86297d18). So the
 * default is a day: a hook that failed overnight is still there, with its Pods and their logs, the next morning.
 *
 * Helm `test` hooks are left alone: their results are what `helm test` is run for and stay until the next run
 * deletes them (before-hook-creation). `helm test --logs` reads only test hooks that are Pods, by the hook's name
 * (helm v4.3.2 `pkg/action/release_testing.go` GetPodLogs: `h.Kind != "Pod"` skipped, `getContainerLogs(out, client,
 * h.Name)`), which this rule (Jobs only) never touches.
 */
export const hookTtl: MutationRule = {
  id: 'hook-ttl',
  doc: 'Gives a hook Job that nothing deletes once it succeeds (no ttlSecondsAfterFinished, no hook-succeeded delete policy) a ttlSecondsAfterFinished (default 86400, never below the TTL floor; it deletes a failed Job as it deletes a complete one), and names the delete policy its chart should carry. Not Helm test hooks.',
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'always',
  mutate(object, { stage, hook, settings, helmVersion, helmAdvisoriesFor }) {
    const spec = jobSpecOf(object);
    if (hook.kind !== 'Job' || hook.testOnly || !spec) return report();
    if (spec.ttlSecondsAfterFinished !== undefined && spec.ttlSecondsAfterFinished !== null) return report();
    if (hasDeletePolicy(object, toolOf(hook), 'hook-succeeded')) return report();
    const ttl = ttlOf(settings);
    spec.ttlSecondsAfterFinished = ttl;
    const file = annotation(object, HELM_TEMPLATE_FILE);
    const where = file ? ` (${file})` : '';
    // At render time for a Helm that may hang on hook-succeeded (delete-policy left it out), the TTL is the fix. The
    // template has no hook-succeeded (or this rule would not be here), often no policy at all: the advice is the TTL,
    // and why a policy is no fix, never a hook-succeeded to take out.
    const [hanging] = stage === 'render' ? helmAdvisoriesFor(deletePolicy.id) : [];
    const fix = hanging
      ? `set spec.ttlSecondsAfterFinished in the template${where}; ${hookSucceededHangs(helmVersion)}`
      : adviseDeletePolicy(object, hook, where);
    return report({
      mutations: [
        `set spec.ttlSecondsAfterFinished to ${ttl}: no delete policy removes this Job once it succeeds. ` +
          `Fix in its chart: ${fix}`,
      ],
      ...(hanging ? { advisory: hanging.id } : {}),
    });
  },
};

/** Why a hook-succeeded policy is no fix where delete-policy left it out: the Helm named hangs, an unknown one may. */
function hookSucceededHangs(helmVersion: string | undefined): string {
  return helmVersion === undefined
    ? 'a hook-succeeded delete policy may leave Helm waiting its whole --timeout'
    : `a hook-succeeded delete policy would leave Helm ${helmVersion} waiting its whole --timeout`;
}

function adviseDeletePolicy(object: KubeObject, hook: HookInfo, where: string): string {
  const advised = advisedPolicy(object, hook);
  return `add ${advised.key}: ${advised.value} to the template's metadata.annotations${where}`;
}
