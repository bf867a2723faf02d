import { ARGOCD_HOOK_FINALIZER } from '../core/annotations.js';
import { hasDeletePolicy, toolOf } from '../core/delete-policies.js';
import { objectLabel, jobSpecOf, jsonEqual, metadataOf } from '../core/objects.js';
import type { RuleContext, UpdateJudge } from '../core/rule.js';
import type { KubeObject } from '../core/types.js';

export const IMMUTABLE_UPDATE_ID = 'immutable-update';

function explainCause(oldObject: KubeObject, newObject: KubeObject, where: string, context: RuleContext): string {
  const metadata = metadataOf(oldObject);
  const finalizers = Array.isArray(metadata?.finalizers) ? metadata.finalizers : [];
  const hookFinalizerIndex = finalizers.indexOf(ARGOCD_HOOK_FINALIZER);
  const advisories = context.advisoriesFor(IMMUTABLE_UPDATE_ID).map((advisory) => advisory.id);
  const argocd = context.argocdVersion
    ? ` (Argo CD ${context.argocdVersion}${advisories.length ? `, advisory ${advisories.join(', ')}` : ''})`
    : '';

  if (metadata?.deletionTimestamp && hookFinalizerIndex >= 0) {
    const path = `/metadata/finalizers/${hookFinalizerIndex}`;
    const patch = `[{"op":"test","path":"${path}","value":"${ARGOCD_HOOK_FINALIZER}"},{"op":"remove","path":"${path}"}]`;
    return (
      `The old Job is being deleted but still holds ${ARGOCD_HOOK_FINALIZER}, which nothing will remove${argocd}. ` +
      `Fix: kubectl patch job ${where} --type json -p '${patch}' and sync again.`
    );
  }
  if (metadata?.deletionTimestamp) {
    return `The old Job is being deleted and waits on finalizers [${finalizers.join(', ')}]; wait for them or ask their owners, then sync again.`;
  }
  if (!hasDeletePolicy(newObject, toolOf(context.hook), 'before-hook-creation')) {
    return (
      `Its delete policy lacks before-hook-creation, so the old Job is not deleted before the new one is applied${argocd}. ` +
      `Fix: add before-hook-creation (Helm) or BeforeHookCreation (Argo CD) to the delete policy, and now: kubectl delete job ${where}.`
    );
  }
  return `The old Job was not deleted before this update${argocd}. Fix: kubectl delete job ${where} and sync again.`;
}

/**
 * An UPDATE that changes a Job's pod template fails in the API server with "field is immutable"; denying it here
 * says why and how to fix it. Updates of metadata, finalizers or status are always allowed (argo-cd#24187).
 *
 * The delete policy in the explanation is read from the new object's annotations as the hook's tool reads them
 * (`hasDeletePolicy`): since admission writes no delete policy, they are the chart's. A Job created by an earlier
 * hookguard may still carry the policy it injected; by default each held before-hook-creation, which is also the
 * tools' default when the chart sets none, so the explanation stays the same for it.
 */
export const immutableUpdate: UpdateJudge = {
  id: IMMUTABLE_UPDATE_ID,
  doc: 'Denies an UPDATE changing a hook Job spec.template (which the API server rejects as immutable) with the cause and the exact fix.',
  // An UPDATE exists only in a cluster: there is no render-time counterpart.
  stages: ['admission'],
  judge(oldObject, newObject, context) {
    if (context.hook.kind !== 'Job') return undefined;
    const oldSpec = jobSpecOf(oldObject);
    const newSpec = jobSpecOf(newObject);
    if (!oldSpec || !newSpec || jsonEqual(oldSpec.template, newSpec.template)) return undefined;
    // Suspended Jobs may change some template fields (KEP-2926); let the API server judge those.
    if (oldSpec.suspend === true) return undefined;
    const metadata = metadataOf(oldObject);
    const where = `${metadata?.name ?? '<name>'} -n ${metadata?.namespace ?? metadataOf(newObject)?.namespace ?? 'default'}`;
    const advisory = context.advisoriesFor(IMMUTABLE_UPDATE_ID)[0]?.id;
    return {
      rule: IMMUTABLE_UPDATE_ID,
      action: 'deny',
      message: `${objectLabel(newObject)}: spec.template is immutable and this update changes it, so the API server would reject it ("field is immutable"). ${explainCause(oldObject, newObject, where, context)}`,
      ...(advisory ? { advisory } : {}),
    };
  },
};
