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
 * Whether an item of the comma-separated `value`, trimmed and read by `policyOf`, is `wanted` ('wanted'), else
 * whether any item named a policy at all ('other' or 'none'). An index loop with no lists or sets: hook-ttl asks on every hook Job, and the
 * lists and sets a split builds cost it a microsecond (issue 40).
 */
function scanPolicies(
  value: string,
  policyOf: (item: string) => DeletePolicy | undefined,
  wanted: DeletePolicy,
): 'wanted' | 'other' | 'none' {
  let found: 'other' | 'none' = 'none';
  let start = 0;
  while (start <= value.length) {
    const comma = value.indexOf(',', start);
    const end = comma === -1 ? value.length : comma;
    const policy = policyOf(value.slice(start, end).trim());
    if (policy === wanted) return 'wanted';
    if (policy !== undefined) found = 'other';
    start = end + 1;
  }
  return found;
}

const helmPolicy = (item: string): DeletePolicy | undefined =>
  HELM_POLICIES.has(item) ? (item as DeletePolicy) : undefined;
const helmPolicyAnyCase = (item: string): DeletePolicy | undefined => helmPolicy(item.toLowerCase());
const argocdPolicy = (item: string): DeletePolicy | undefined => ARGOCD_POLICIES.get(item);

/**
 * Whether `tool` acts on `policy` for this object.
 *
 * Helm reads only `helm.sh/hook-delete-policy`: each comma-separated item trimmed and lower-cased, and
 * before-hook-creation only when the annotation is absent. An annotation that is present, even empty or with unknown
 * values only, leaves no default (helm v4.3.2 `pkg/release/v1/util/manifest_sorter.go` operateAnnotationValues,
 * `pkg/action/hooks.go` hookSetDeletePolicy: `if len(h.DeletePolicies) == 0`; the same in v3.21.4
 * `pkg/releaseutil/manifest_sorter.go` and `pkg/action/hooks.go` execHook).
 *
 * Argo CD reads its own annotation and then Helm's, both trimmed and matched exactly (`HookSucceeded`,
 * `hook-succeeded`), unknown values dropped, and before-hook-creation when neither gives one (gitops-engine
 * `pkg/sync/hook/delete_policy.go` DeletePolicies and `pkg/sync/hook/helm/delete_policy.go` at 093aef0dad58, the
 * commit argo-cd v3.1.0 pins; unchanged in argo-cd v3.4.0 `gitops-engine/pkg/sync/hook/delete_policy.go`).
 */
export function hasDeletePolicy(object: KubeObject, tool: HookTool, policy: DeletePolicy): boolean {
  const helm = annotation(object, HELM_DELETE_POLICY);
  if (tool === 'helm') {
    if (helm === undefined) return policy === 'before-hook-creation';
    return scanPolicies(helm, helmPolicyAnyCase, policy) === 'wanted';
  }
  const argocd = annotation(object, ARGOCD_DELETE_POLICY);
  const own = argocd === undefined ? 'none' : scanPolicies(argocd, argocdPolicy, policy);
  if (own === 'wanted') return true;
  const helms = helm === undefined ? 'none' : scanPolicies(helm, helmPolicy, policy);
  if (helms === 'wanted') return true;
  return own === 'none' && helms === 'none' && policy === 'before-hook-creation';
}
