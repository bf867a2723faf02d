import { fluxOwnerOf } from '../core/flux.js';
import { annotation } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';
import { CRASH_ISSUE, crashingHelmControllers, HELM_OUTPUT_LOG_POLICY } from './hook-output-log-policy.js';

/**
 * Flux's helm-controller 1.4.0 and later crash (SIGSEGV) on a hook carrying `helm.sh/hook-output-log-policy` when the
 * hook's outcome matches the policy: they never set Helm's HookOutputFunc, which outputLogsByPolicy calls
 * (fluxcd/helm-controller#1562; advisory flux-helm-controller-hook-output-crash, where the sources are cited), and the
 * release is left pending-install or pending-upgrade. By admission Helm has the manifest already: nothing written to
 * the object reaches it, so the rule only warns, of a hook helm-controller rendered (its origin labels
 * `helm.toolkit.fluxcd.io/name` and `/namespace`, on hooks since v1.6.0's `postRenderStrategy: combined`) that
 * carries the annotation while an affected helm-controller runs (discovered, or `flux.helmControllerVersion`).
 * Its gate opens only when a helm-controller an advisory naming this rule affects is known (or one of unknown version).
 */
export const fluxHookOutputCrash: MutationRule = {
  id: 'flux-hook-output-crash',
  doc: `Warns of a hook Flux's helm-controller rendered that carries ${HELM_OUTPUT_LOG_POLICY} while a helm-controller that crashes on it runs (fluxcd/helm-controller#1562).`,
  stages: ['admission'],
  kinds: ['Job', 'Pod'],
  gate: 'helm-controller',
  mutate(object, context) {
    const policy = annotation(object, HELM_OUTPUT_LOG_POLICY);
    const owner = fluxOwnerOf(object);
    const crashing = crashingHelmControllers(context, fluxHookOutputCrash.id);
    if (context.hook.appliedByArgo || policy === undefined || owner === undefined || crashing === undefined)
      return report();
    return report({
      warnings: [
        `${CRASH_ISSUE}: ${crashing} crashes on ${HELM_OUTPUT_LOG_POLICY}: ${policy} (SIGSEGV) if the hook's outcome matches; HelmRelease ${owner.namespace}/${owner.name} is then left pending`,
      ],
    });
  },
};
