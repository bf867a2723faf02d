import { getsArgoHookFinalizer } from '../core/hook.js';
import { isRecord, podSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

export const NATIVE_SIDECAR_ID = 'native-sidecar';

/**
 * Argo CD removes its hook finalizer with a full Update of the Job it has cached (gitops-engine
 * pkg/sync/sync_context.go removeHookFinalizer → updateResource → `resIf.Update`, at 093aef0dad58 pinned by argo-cd
 * v3.1.0, in argo-cd v3.4.0 and v3.5.1 gitops-engine/). For a Job whose pod template has a native sidecar (an init
 * container with `restartPolicy: Always`) that Update is refused with `spec.template: field is immutable`, while
 * the same Job without the sidecar works (argo-cd#27407; why the template differs is not settled upstream, and the
 * fix PRs #27425 and #27472, a Patch of the finalizers instead, were closed unmerged). The Job keeps the finalizer
 * and stays Terminating once deleted. hookguard cannot change how Argo CD removes its finalizer: it warns, and `hookguard sweep` frees the
 * Job. It runs after hook-finalizer: a Job hookguard already freed of the finalizer is not at risk.
 */
export const nativeSidecar: MutationRule = {
  id: NATIVE_SIDECAR_ID,
  doc: "Warns when an Argo CD sync hook Job has a native sidecar (an init container with restartPolicy: Always): Argo CD's finalizer removal fails on it (argo-cd#27407); hookguard sweep frees it.",
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'argocd',
  mutate(object, { stage }) {
    const initContainers = podSpecOf(object)?.initContainers;
    const hasNativeSidecar =
      Array.isArray(initContainers) &&
      initContainers.some((container) => isRecord(container) && container.restartPolicy === 'Always');
    if (!hasNativeSidecar || !getsArgoHookFinalizer(object, stage)) return report();
    return report({ warnings: ["argo-cd#27407: Argo CD's finalizer removal fails here; hookguard sweep frees it"] });
  },
};
