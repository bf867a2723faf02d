import { ARGOCD_HOOK_FINALIZER } from '../core/annotations.js';
import { getsArgoHookFinalizer } from '../core/hook.js';
import { finalizersOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

export const FOREIGN_FINALIZER_ID = 'foreign-finalizer';

/**
 * A hook that also carries another controller's finalizer stays Terminating after Argo CD deletes it, for as long as
 * that finalizer is there. Argo CD's next sync re-applies the hook with its own finalizer added (gitops-engine
 * pkg/sync/sync_context.go getSyncTasks, argo-cd v3.4.0 gitops-engine/ and 093aef0dad58), and the API server refuses
 * a new finalizer on an object being deleted: `metadata.finalizers: Forbidden: no new finalizers can be added if the
 * object is being deleted` (argo-cd#26180). Only Argo CD versions that add the hook finalizer fail this way, so the
 * evidence is the hook finalizer itself (see getsArgoHookFinalizer). Nothing hookguard could change removes the
 * other finalizer: it warns. It runs before hook-finalizer, which removes the evidence on Argo CD 2.14.3 while the
 * next sync still adds the finalizer again.
 */
export const foreignFinalizer: MutationRule = {
  id: FOREIGN_FINALIZER_ID,
  doc: `Warns when an Argo CD sync hook also carries another controller's finalizer: once deleted it stays Terminating, and the next sync fails adding ${ARGOCD_HOOK_FINALIZER} (argo-cd#26180).`,
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'argocd',
  mutate(object, { stage }) {
    const foreign = finalizersOf(object).filter((finalizer) => finalizer !== ARGOCD_HOOK_FINALIZER);
    if (foreign.length === 0 || !getsArgoHookFinalizer(object, stage)) return report();
    return report({
      warnings: [`argo-cd#26180: the next sync fails while the deleted hook waits on ${foreign.join(', ')}`],
    });
  },
};
