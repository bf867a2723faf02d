import { ARGOCD_HOOK_FINALIZER } from '../core/annotations.js';
import { metadataOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/**
 * Argo CD 2.14.0-2.14.3 add the hook finalizer without the code that reliably removes it; a Job created with it
 * cannot be deleted, and the next sync fails with "field is immutable".
 */
export const hookFinalizer: MutationRule = {
  id: 'hook-finalizer',
  doc: `Removes ${ARGOCD_HOOK_FINALIZER} at CREATE on the Argo CD versions that add it without a working cleanup (2.14.0-2.14.3).`,
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
    return report({ mutations: [`removed finalizer ${ARGOCD_HOOK_FINALIZER}`] });
  },
};
