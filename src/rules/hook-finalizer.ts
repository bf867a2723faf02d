import { ARGOCD_HOOK_FINALIZER } from '../core/annotations.js';
import { metadataOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/**
 * Argo CD 2.14.3 pulled in gitops-engine's hook finalizer by mistake (its go.mod pins 65db274b, gitops-engine#646;
 * 2.14.2 and 2.14.4 pin commits without it; argo-cd#21804, reverted by argo-cd#22162): a Job created with it may not
 * be deleted, and the next sync fails with "field is immutable" (argo-cd#22142). Which versions run this rule is
 * the argocd-hook-finalizer-partial advisory's range (data/advisories.yaml), not this file's.
 */
export const hookFinalizer: MutationRule = {
  id: 'hook-finalizer',
  doc: `Removes ${ARGOCD_HOOK_FINALIZER} at CREATE on the Argo CD version that added it by mistake (2.14.3).`,
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'argocd-known',
  mutate(object) {
    const metadata = metadataOf(object);
    const finalizers = metadata?.finalizers;
    if (!metadata || !Array.isArray(finalizers) || !finalizers.includes(ARGOCD_HOOK_FINALIZER)) return report();
    const kept = finalizers.filter((finalizer) => finalizer !== ARGOCD_HOOK_FINALIZER);
    if (kept.length > 0) metadata.finalizers = kept;
    else delete metadata.finalizers;
    return report({
      mutations: [
        `removed finalizer ${ARGOCD_HOOK_FINALIZER}: this Argo CD adds it by mistake, and a hook Job it keeps turns the next sync into "field is immutable"`,
      ],
    });
  },
};
