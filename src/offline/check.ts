// The offline evaluation behind `hookguard check`: each document as a CREATE, through the mutating decision and
// then the validating one on what the mutation stored, as the API server would call the two webhooks.
import { applyPatch } from '../core/json-patch.js';
import type { DecisionContext } from '../core/context.js';
import { hookKindOf } from '../core/hook.js';
import { ARGO_NEVER_APPLIES, computedPatch, decide, type Decision } from '../core/decide.js';
import { ARGOCD_HOOK, HELM_HOOK } from '../core/annotations.js';
import { annotation, isRecord, objectLabel } from '../core/objects.js';
import type { Finding, KubeObject, Mode, Operation } from '../core/types.js';
import type { Source } from './read.js';

export interface CheckResult {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name?: string;
  /** How every report names it: objectLabel() (`Job ns/name`, `Job ns/migrate-*` for a generateName). */
  label: string;
  allowed: boolean;
  /** audit: nothing is denied and the patch is withheld (the config's mode, or `hookguard.io/mode: audit`). */
  mode: Mode;
  patch: Operation[];
  findings: Finding[];
  source: Source;
}

/** The id findings about objects hookguard did not judge carry: no rule ran on them. */
export const NOT_JUDGED = 'not-judged';

/**
 * A finding for a hook Job or Pod that hookguard passed through unjudged, saying why: never a silent "allowed,
 * unchanged" for a hook that runs something. A hook of another kind (a ServiceAccount, a ConfigMap, RBAC a hook Job
 * needs) runs nothing and no rule is about it beyond its delete policy: a warning for each would be noise in every
 * chart that has them (hookguard's own has four), so it gets none.
 */
function notJudged(object: KubeObject, decision: Decision): Finding | undefined {
  const kind = String(object.kind);
  if (kind !== 'Job' && kind !== 'Pod') return undefined;
  // At render time a hook of another kind is read for its delete policy only (the tools read that from the manifest).
  const judged =
    decision.hook === undefined ? 'that no rule judged' : 'of which hookguard judged only the delete policy';
  const helm = annotation(object, HELM_HOOK);
  const argocd = annotation(object, ARGOCD_HOOK);
  if (helm === undefined && argocd === undefined) return undefined;
  const hook =
    argocd !== undefined ? `an Argo CD hook (${ARGOCD_HOOK}: ${argocd})` : `a Helm hook (${HELM_HOOK}: ${helm})`;
  const why =
    decision.reason === 'namespace excluded'
      ? `its namespace is in excludedNamespaces`
      : decision.reason === ARGO_NEVER_APPLIES
        ? 'Argo CD never applies this Helm hook type (only pre/post-install, -upgrade and -delete), so it is left as written'
        : `hookguard judges hook Jobs of batch/v1 and Pods of v1, and this ${kind} is ${String(object.apiVersion)}`;
  return {
    rule: NOT_JUDGED,
    action: 'warn',
    message: `${objectLabel(object)} is ${hook} ${judged}: ${why}`,
  };
}

export interface CheckOptions {
  /** The user the objects are applied as: Argo CD's controller, or a person running Helm. */
  username: string;
}

export function checkObject(
  object: KubeObject,
  source: Source,
  index: number,
  context: DecisionContext,
  options: CheckOptions,
): CheckResult {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const request = {
    uid: `check-${index + 1}`,
    operation: 'CREATE',
    namespace: typeof metadata.namespace === 'string' ? metadata.namespace : undefined,
    userInfo: { username: options.username },
    object,
  };
  const mutation = decide(request, 'mutate', context);
  const patch = computedPatch(mutation);
  const stored = patch.length > 0 ? applyPatch(structuredClone(object), patch, false, false).newDocument : object;
  const validation = decide({ ...request, object: stored }, 'validate', context);
  const name =
    typeof metadata.name === 'string'
      ? metadata.name
      : typeof metadata.generateName === 'string'
        ? metadata.generateName
        : undefined;
  const unjudged =
    mutation.hook !== undefined && hookKindOf(object) !== 'Other' ? undefined : notJudged(object, mutation);
  return {
    apiVersion: object.apiVersion as string,
    kind: object.kind as string,
    ...(typeof metadata.namespace === 'string' ? { namespace: metadata.namespace } : {}),
    ...(name === undefined ? {} : { name }),
    label: objectLabel(object),
    allowed: mutation.allowed && validation.allowed,
    mode: mutation.mode,
    patch,
    findings: [...mutation.findings, ...validation.findings, ...(unjudged ? [unjudged] : [])],
    source,
  };
}
