// A hook's delete policies as the tool that runs the hook reads them from its annotations, so rules judge what Helm
// or Argo CD will actually do rather than what the annotations seem to say.
import { ARGOCD_DELETE_POLICY, HELM_DELETE_POLICY } from './annotations.js';
import type { HookInfo } from './hook.js';
import { annotation } from './objects.js';
import type { KubeObject } from './types.js';

export type DeletePolicy = 'before-hook-creation' | 'hook-succeeded' | 'hook-failed';

/** Which tool runs the hook, and so reads its delete policy: Argo CD for every hook it applies, else Helm. */
export type HookTool = 'helm' | 'argocd';

export function toolOf(hook: Pick<HookInfo, 'appliedByArgo'>): HookTool {
  return hook.appliedByArgo ? 'argocd' : 'helm';
}

const HELM_POLICIES: ReadonlySet<string> = new Set<DeletePolicy>([
  'before-hook-creation',
  'hook-succeeded',
  'hook-failed',
]);
const ARGOCD_POLICIES: ReadonlyMap<string, DeletePolicy> = new Map([
  ['BeforeHookCreation', 'before-hook-creation'],
  ['HookSucceeded', 'hook-succeeded'],
  ['HookFailed', 'hook-failed'],
]);

/** The delete policies each tool knows, spelt as it reads them in its annotation. */
export const DELETE_POLICY_NAMES: Readonly<Record<HookTool, readonly string[]>> = {
  helm: [...HELM_POLICIES],
  argocd: [...ARGOCD_POLICIES.keys()],
};

/**
 * Adds the policy each comma-separated item of `value` names (trimmed, then read by `policyOf`). A plain loop:
 * hook-ttl asks on every hook Job, and the lists and sets built in between cost it a microsecond.
 */
function addPolicies(
  policies: Set<DeletePolicy>,
  value: string | undefined,
  policyOf: (item: string) => DeletePolicy | undefined,
): void {
  if (value === undefined) return;
  for (const item of value.split(',')) {
    const policy = policyOf(item.trim());
    if (policy !== undefined) policies.add(policy);
  }
}

const helmPolicy = (item: string): DeletePolicy | undefined =>
  HELM_POLICIES.has(item) ? (item as DeletePolicy) : undefined;

/**
 * The delete policies `tool` acts on for this object.
 *
 * Helm reads only `helm.sh/hook-delete-policy`: each comma-separated item trimmed and lower-cased, and
 * before-hook-creation only when the annotation is absent. An annotation that is present, even empty or with unknown
 * values only, leaves no default (helm v4.1.4 `pkg/release/v1/util/manifest_sorter.go` operateAnnotationValues,
 * `pkg/action/hooks.go` hookSetDeletePolicy: `if len(h.DeletePolicies) == 0`; the same in v3.21.4
 * `pkg/releaseutil/manifest_sorter.go` and `pkg/action/hooks.go` execHook).
 *
 * Argo CD reads its own annotation and then Helm's, both trimmed and matched exactly (`HookSucceeded`,
 * `hook-succeeded`), unknown values dropped, and before-hook-creation when neither gives one (gitops-engine
 * `pkg/sync/hook/delete_policy.go` DeletePolicies and `pkg/sync/hook/helm/delete_policy.go` at 093aef0dad58, the
 * commit argo-cd v3.1.0 pins; unchanged in argo-cd v3.4.0 `gitops-engine/pkg/sync/hook/delete_policy.go`).
 */
export function deletePoliciesFor(object: KubeObject, tool: HookTool): ReadonlySet<DeletePolicy> {
  const helm = annotation(object, HELM_DELETE_POLICY);
  const policies = new Set<DeletePolicy>();
  if (tool === 'helm') {
    if (helm === undefined) policies.add('before-hook-creation');
    else addPolicies(policies, helm, (item) => helmPolicy(item.toLowerCase()));
    return policies;
  }
  addPolicies(policies, annotation(object, ARGOCD_DELETE_POLICY), (item) => ARGOCD_POLICIES.get(item));
  addPolicies(policies, helm, helmPolicy);
  if (policies.size === 0) policies.add('before-hook-creation');
  return policies;
}
