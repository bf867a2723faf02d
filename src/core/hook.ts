import {
  ARGOCD_HOOK,
  ARGOCD_HOOK_FINALIZER,
  ARGOCD_TRACKING_ID,
  HELM_HOOK,
  HOOKGUARD_MODE,
  HOOKGUARD_SKIP,
} from './annotations.js';
import { annotation, finalizersOf, isRecord, metadataOf } from './objects.js';
import type { Stage } from './rule.js';
import type { HookNaming, KubeObject } from './types.js';

/**
 * `Other`: a hook of any other kind (ServiceAccount, Role, ConfigMap, Secret, …). Helm and Argo CD run those as hooks
 * too, and read their delete policies; only rules that name `Other` see them, at render time (decide()).
 */
export type HookKind = 'Job' | 'Pod' | 'Other';

/** Whose hook semantics apply: Argo CD ignores Helm hook annotations when any Argo CD hook annotation is set. */
export type HookSystem = 'helm' | 'argocd';

export interface HookInfo {
  kind: HookKind;
  system: HookSystem;
  phases: readonly string[];
  /** A pre/post-delete hook: it runs during uninstall and must survive a retry. */
  cleanup: boolean;
  /** Only a Helm `test` hook: its Pod is kept after success so `helm test --logs` can read it. */
  testOnly: boolean;
  appliedByArgo: boolean;
  /**
   * Applied by Argo CD, yet a Helm hook of no type Argo CD applies (only test or rollback hooks, or a type spelled
   * otherwise than Argo CD matches it): Argo CD never creates it (gitops-engine pkg/sync/hook/helm/type.go), so at
   * render time it is left as it is.
   */
  argoNeverApplies: boolean;
  /**
   * Applied by Argo CD in a sync phase (PreSync, Sync, PostSync, SyncFail, or the Helm hooks that map there): the
   * only hooks Argo CD's hook finalizer and the races about it concern (see runsInArgoSyncPhase). False for its
   * PreDelete/PostDelete hooks, and for any hook Argo CD does not apply.
   */
  argoSyncPhase: boolean;
  skip: ReadonlySet<string>;
  auditOnly: boolean;
}

export interface HookDetection {
  argocdControllerUsernames: readonly string[];
  /** Label Argo CD tracks resources by, when the cluster uses label tracking; unset means "do not trust labels". */
  argocdTrackingLabel?: string;
}

const CLEANUP_PHASES = new Set(['pre-delete', 'post-delete', 'PreDelete', 'PostDelete']);

/** Which kind of hook an object is: a Job of batch/v1 or a Pod of v1 runs something; any other kind is 'Other'. */
export function hookKindOf(object: KubeObject): HookKind | undefined {
  if (object.apiVersion === 'batch/v1' && object.kind === 'Job') return 'Job';
  if (object.apiVersion === 'v1' && object.kind === 'Pod') return 'Pod';
  if (typeof object.apiVersion === 'string' && typeof object.kind === 'string' && object.kind !== '') return 'Other';
  return undefined;
}

function splitList(value: string | undefined): string[] {
  if (value === undefined) return [];
  // Most hooks name one type: no list to split.
  if (!value.includes(',')) {
    const trimmed = value.trim();
    return trimmed === '' ? [] : [trimmed];
  }
  const items: string[] = [];
  for (const item of value.split(',')) {
    const trimmed = item.trim();
    if (trimmed !== '') items.push(trimmed);
  }
  return items;
}

const NO_SKIPS: ReadonlySet<string> = new Set();

/** Reads what makes an object a hook; undefined for anything hookguard leaves alone. */
export function readHook(
  object: unknown,
  username: string | undefined,
  detection: HookDetection,
): HookInfo | undefined {
  if (!isRecord(object)) return undefined;
  const kube = object as KubeObject;
  const kind = hookKindOf(kube);
  if (!kind) return undefined;
  const argocdPhases = annotation(kube, ARGOCD_HOOK);
  const helmPhases = annotation(kube, HELM_HOOK);
  if (argocdPhases === undefined && helmPhases === undefined) return undefined;

  const system: HookSystem = argocdPhases !== undefined ? 'argocd' : 'helm';
  const argocdTypes = splitList(argocdPhases);
  const helmTypesAsWritten = splitList(helmPhases);
  // Helm's hook types as Helm reads them: each item trimmed and lowercased (helm v4.3.2
  // pkg/release/v1/util/manifest_sorter.go sort: `strings.ToLower(strings.TrimSpace(hookType))`), so `Post-Delete` is
  // post-delete and `Test` is test. Argo CD's own types, and Argo CD's reading of Helm's, stay exact.
  const phases = system === 'argocd' ? argocdTypes : helmTypesAsWritten.map((type) => type.toLowerCase());
  const labels = metadataOf(kube)?.labels;
  const trackedByLabel =
    detection.argocdTrackingLabel !== undefined &&
    isRecord(labels) &&
    typeof labels[detection.argocdTrackingLabel] === 'string';
  const appliedByArgo =
    system === 'argocd' ||
    (username !== undefined && detection.argocdControllerUsernames.includes(username)) ||
    annotation(kube, ARGOCD_TRACKING_ID) !== undefined ||
    trackedByLabel;

  return {
    kind,
    system,
    phases,
    cleanup: phases.some((phase) => CLEANUP_PHASES.has(phase)),
    testOnly:
      system === 'helm' && phases.length > 0 && phases.every((phase) => phase === 'test' || phase === 'test-success'),
    appliedByArgo,
    argoNeverApplies:
      appliedByArgo && system === 'helm' && !helmTypesAsWritten.some((type) => HELM_TYPES_ARGOCD_APPLIES.has(type)),
    argoSyncPhase: appliedByArgo && syncPhaseOfTypes(argocdTypes, helmTypesAsWritten),
    skip: skipsOf(annotation(kube, HOOKGUARD_SKIP)),
    auditOnly: annotation(kube, HOOKGUARD_MODE)?.trim() === 'audit',
  };
}

// Almost no object opts out of a rule: those share one empty set.
function skipsOf(value: string | undefined): ReadonlySet<string> {
  const ids = splitList(value);
  return ids.length === 0 ? NO_SKIPS : new Set(ids);
}

/**
 * `generated` for a hook named by `metadata.generateName`, else `fixed`. Argo CD gives such a hook a new name each
 * sync and keeps its generateName (gitops-engine pkg/sync/sync_context.go getSyncTasks), so the admitted object
 * still says how it was named.
 */
export function hookNaming(object: KubeObject): HookNaming {
  const generateName = metadataOf(object)?.generateName;
  return typeof generateName === 'string' && generateName !== '' ? 'generated' : 'fixed';
}

// gitops-engine pkg/sync/common/types.go NewHookType (Skip aside) and pkg/sync/hook/helm/type.go hookTypes
// (argo-cd v3.4.0 gitops-engine/, unchanged since 093aef0dad58, pinned by v3.1.0).
const ARGOCD_SYNC_PHASES = new Set(['PreSync', 'Sync', 'PostSync', 'SyncFail']);
const HELM_PHASES_ARGOCD_SYNCS = new Set(['pre-install', 'pre-upgrade', 'post-install', 'post-upgrade']);
/**
 * Every Helm hook type Argo CD applies, matched exactly: the sync ones above, and pre-/post-delete, which the
 * application controller maps to PreDelete/PostDelete (argo-cd controller/hook.go hookTypeAnnotations, v3.3.0,
 * v3.5.1; post-delete alone at v3.0.0). Rollback and test hooks it never applies.
 */
const HELM_TYPES_ARGOCD_APPLIES = new Set([...HELM_PHASES_ARGOCD_SYNCS, 'pre-delete', 'post-delete']);

/**
 * Whether Argo CD runs this hook in a sync phase: gitops-engine reads the Argo CD hook types, and the Helm ones only
 * when no Argo CD type is known (pkg/sync/hook/hook.go Types). PreDelete and PostDelete hooks are not sync hooks:
 * the application controller creates them itself (argo-cd controller/hook.go executeHooks).
 */
export function runsInArgoSyncPhase(object: KubeObject): boolean {
  return syncPhaseOfTypes(splitList(annotation(object, ARGOCD_HOOK)), splitList(annotation(object, HELM_HOOK)));
}

/** runsInArgoSyncPhase, from the hook types as the annotations list them. */
function syncPhaseOfTypes(argocdTypes: readonly string[], helmTypes: readonly string[]): boolean {
  const known = argocdTypes.filter((type) => ARGOCD_SYNC_PHASES.has(type) || type === 'Skip');
  if (known.length > 0) return known.some((type) => ARGOCD_SYNC_PHASES.has(type));
  return helmTypes.some((phase) => HELM_PHASES_ARGOCD_SYNCS.has(phase));
}

/**
 * Whether the Argo CD applying this hook puts its hook finalizer on it. At admission the object says so itself:
 * Argo CD adds the finalizer to the manifest before applying a sync hook (gitops-engine pkg/sync/sync_context.go
 * getSyncTasks), and never to PreDelete/PostDelete hooks. At render time it has not been added yet: any sync hook
 * will carry it on a version that has it (the caller's advisory range says which).
 */
export function getsArgoHookFinalizer(object: KubeObject, stage: Stage): boolean {
  return stage === 'admission' ? finalizersOf(object).includes(ARGOCD_HOOK_FINALIZER) : runsInArgoSyncPhase(object);
}
