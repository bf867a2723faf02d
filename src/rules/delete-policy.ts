import { ARGOCD_DELETE_POLICY, HELM_DELETE_POLICY } from '../core/annotations.js';
import { hasDeletePolicy, toolOf } from '../core/delete-policies.js';
import type { HookInfo } from '../core/hook.js';
import { annotation, setAnnotation } from '../core/objects.js';
import { report, type MutationRule, type RuleReport } from '../core/rule.js';
import type { KubeObject } from '../core/types.js';

/**
 * A hook without a delete policy gets one explicitly, in the annotation its own tool reads; a chart's choice is kept.
 * A choice in either tool's annotation counts: Argo CD merges `argocd.argoproj.io/hook-delete-policy` and
 * `helm.sh/hook-delete-policy` (gitops-engine `pkg/sync/hook/delete_policy.go` DeletePolicies, argo-cd v3.4.0
 * `gitops-engine/`), so adding Argo CD's default beside a chart's Helm policy would add to the chart's choice, and a
 * chart that wrote only Argo CD's annotation chose for the tool it was written for.
 *
 * Render time only, because that is where the tools read it. Helm parses the policy from the rendered manifest
 * (after its post-renderer, in Helm 4) into the release and acts on that copy, never on the live object (helm v4.3.2
 * `pkg/release/v1/util/manifest_sorter.go`, `pkg/action/hooks.go` hookHasDeletePolicy reads `h.DeletePolicies`;
 * `pkg/action/action.go` renderResources runs the post-renderer before SortManifests under the `combined`
 * PostRenderStrategy, the only one the helm CLI uses). Argo CD reads a sync hook's policy from the target manifest
 * before the live object (gitops-engine `pkg/sync/sync_task.go` hasHookDeletePolicy → `t.obj()` = `obj(t.targetObj,
 * t.liveObj)`, at 093aef0dad58 pinned by argo-cd v3.1.0, and in argo-cd v3.4.0 `gitops-engine/`). Written at
 * admission it would change nothing and say `hook-succeeded` on a Job that will not be deleted. Argo CD's PreDelete
 * and PostDelete hooks are the exception: the controller reads their policy from the live object (argo-cd v3.4.0
 * `controller/hook.go` cleanupHooks); admission still writes none, and their Jobs get a TTL from `hook-ttl` instead.
 *
 * Where the Helm that runs the hooks may be one a Helm advisory naming this rule affects (helm.version, which the
 * post-renderer plugin sets from the helm running it; every Helm when unknown), hook-succeeded is left out of the
 * policy written: Helm 4.2.1 waits its whole --timeout after each deletion by policy (helm v4.2.1
 * `pkg/action/hooks.go` deleteHookByPolicy → WaitForDelete; `pkg/kube/statuswait.go` statusObserver never ends the
 * wait while the deleted hook is Unknown; reverted in v4.2.2). `hook-ttl`, which runs next, then gives the Job a TTL.
 * A hook Argo CD applies is never run by Helm: it keeps the configured policy.
 */
export const deletePolicy: MutationRule = {
  id: 'delete-policy',
  doc: 'Gives a hook Job or Pod without a delete policy an explicit one where the tools read it, in the rendered manifest (Helm: before-hook-creation,hook-succeeded, test hooks before-hook-creation; Argo CD: BeforeHookCreation,HookSucceeded), and keeps before-hook-creation in the policy a chart set on a hook of any kind.',
  stages: ['render'],
  kinds: ['Job', 'Pod', 'Other'],
  gate: 'always',
  mutate(object, { hook, settings, helmVersion, helmAdvisoriesFor }) {
    if (annotation(object, HELM_DELETE_POLICY) !== undefined || annotation(object, ARGOCD_DELETE_POLICY) !== undefined)
      return keepBeforeHookCreation(object, hook);
    // Another kind without a policy already gets the tools' default, before-hook-creation, and needs nothing else.
    if (hook.kind === 'Other') return report();
    const key = hook.system === 'argocd' ? ARGOCD_DELETE_POLICY : HELM_DELETE_POLICY;
    const policies = settings.deletePolicy;
    const value = hook.system === 'argocd' ? policies.argocd : hook.testOnly ? policies.helmTest : policies.helm;
    const [hanging] = helmAdvisoriesFor(deletePolicy.id);
    if (hanging && key === HELM_DELETE_POLICY && hasHookSucceeded(value)) {
      const kept = withoutHookSucceeded(value);
      setAnnotation(object, key, kept);
      const helm = helmVersion === undefined ? 'the Helm version is unknown and' : `Helm ${helmVersion}`;
      // hook-ttl gives a Job its TTL; a Pod has none (ttlSecondsAfterFinished is a Job's field only).
      const instead =
        hook.kind === 'Pod'
          ? 'a Pod has no TTL: the finished Pod stays until before-hook-creation deletes it at the next run'
          : 'a TTL removes the finished hook instead';
      return report({
        mutations: [
          `set ${key}: ${kept}, without hook-succeeded: ${helm} may wait its whole --timeout after that deletion; ${instead}`,
        ],
        advisory: hanging.id,
      });
    }
    setAnnotation(object, key, value);
    return report({ mutations: [`set ${key}: ${value}: ${whyPolicy(value, hook)}`] });
  },
};

/**
 * Why the policy written helps, in one clause. Without a policy both tools delete a hook only before its next run
 * (before-hook-creation), so a finished hook stays in the cluster until then; a test hook's default keeps its Pod
 * for `helm test --logs` (Helm 3 deletes a hook-succeeded test Pod before reading its logs).
 */
function whyPolicy(value: string, hook: HookInfo): string {
  if (hasHookSucceeded(value)) return 'a succeeded hook is deleted at once instead of staying until its next run';
  if (hook.testOnly) return 'no hook-succeeded, so helm test --logs can still read the Pod';
  return "the tool's default written out: a finished hook stays until its next run";
}

/**
 * A chart's policy without before-hook-creation leaves the hook in place after a run that did not delete it (a
 * failure under hook-succeeded, or any run under hook-failed alone), and the next run's create fails with "already
 * exists" (lightdash/helm-charts#141, openebs#4085, argo-cd#21637). So before-hook-creation joins the policy the tool
 * reads (`hasDeletePolicy`), in the annotation the chart wrote: Argo CD's own when it is there, else Helm's (which
 * Argo CD reads too). It costs what the tools' default costs: Helm and Argo CD use before-hook-creation when a hook
 * sets no policy.
 */
function keepBeforeHookCreation(object: KubeObject, hook: HookInfo): RuleReport {
  const tool = toolOf(hook);
  if (hasDeletePolicy(object, tool, 'before-hook-creation')) return report();
  const argocd = annotation(object, ARGOCD_DELETE_POLICY);
  const [key, item] =
    tool === 'argocd' && argocd !== undefined
      ? [ARGOCD_DELETE_POLICY, 'BeforeHookCreation']
      : [HELM_DELETE_POLICY, 'before-hook-creation'];
  const kept = policyItems(annotation(object, key) ?? '');
  const value = [item, ...kept].join(',');
  setAnnotation(object, key, value);
  return report({
    mutations: [
      `set ${key}: ${value}: without ${item} the next run fails with "already exists" while this hook is still there`,
    ],
  });
}

function policyItems(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Whether a policy holds hook-succeeded, in Helm's spelling or Argo CD's (HookSucceeded). */
function hasHookSucceeded(value: string): boolean {
  return policyItems(value).some((item) => item.toLowerCase().replace('-', '') === 'hooksucceeded');
}

/** The policy without hook-succeeded; Helm's own default, before-hook-creation, when nothing else is left. */
function withoutHookSucceeded(value: string): string {
  const kept = policyItems(value).filter((item) => item.toLowerCase() !== 'hook-succeeded');
  return kept.length > 0 ? kept.join(',') : 'before-hook-creation';
}
