// What hookguard's core reads of a hook (src/core/hook.ts readHook, src/core/delete-policies.ts hasDeletePolicy),
// written as CEL over the admission request, for the admission policies of `hookguard policies`. Each function
// returns the text of one CEL expression; the differential test (test/unit/policies/differential.test.ts) evaluates
// them against the same objects as decide() and holds the two equal.
//
// Only what Kubernetes CEL has in every API server that serves admissionregistration.k8s.io/v1 mutating policies
// (1.36+): the standard macros, `in`, and the strings extension's split/trim/lowerAscii (kubernetes/apiserver v0.36.3
// pkg/cel/environment/base.go: ext.Strings version 2). Map and list literals must be homogeneous there
// (cel.HomogeneousAggregateLiterals, same file), so every literal here is a list of strings or a map of strings.
import {
  ARGOCD_DELETE_POLICY,
  ARGOCD_HOOK,
  ARGOCD_TRACKING_ID,
  HELM_DELETE_POLICY,
  HELM_HOOK,
  HOOKGUARD_MODE,
  HOOKGUARD_SKIP,
} from '../core/annotations.js';
import type { HookDetection } from '../core/hook.js';

/** A CEL string literal: JSON's escapes (\" \\ \n \uXXXX) are CEL's too. */
export function celString(text: string): string {
  return JSON.stringify(text);
}

/** A CEL list of string literals. */
export function celStrings(items: readonly string[]): string {
  return `[${items.map(celString).join(', ')}]`;
}

const ANNOTATIONS = 'object.metadata.annotations';

/** Whether the object carries the annotation `key`. */
export function hasAnnotation(key: string): string {
  return `(has(${ANNOTATIONS}) && ${celString(key)} in ${ANNOTATIONS})`;
}

/**
 * The longest annotation value the policies split into items. CEL's split and the comprehensions over its list cost
 * kube-apiserver time that grows with the square of the item count (cel-go v0.29.2 in k8s.io/apiserver v0.37.2,
 * measured with test/cluster/tools/celcost: 4,096 commas 0.45 s, 16,384 5.3 s, 65,536 111 s, and a Job with a 255 KiB
 * `hookguard.io/skip` held a create until the API server's request timeout): a tenant's create must not cost that.
 * No hook writes a list this long (Helm's nine hook types with commas are 96 characters), so a longer value is read as
 * absent, where the webhook reads it in linear time.
 */
export const ANNOTATION_READ_LIMIT = 512;

/** The object carries the annotation `key` with a value short enough to read (ANNOTATION_READ_LIMIT). */
function readable(key: string): string {
  return `(${hasAnnotation(key)} && ${ANNOTATIONS}[${celString(key)}].size() <= ${ANNOTATION_READ_LIMIT})`;
}

/**
 * The annotation's comma-separated items, each trimmed, empty ones dropped; [] when the annotation is absent or too
 * long to read.
 */
function annotationItems(key: string, variable: string): string {
  return `(${readable(key)} ? ${ANNOTATIONS}[${celString(key)}].split(',').map(${variable}, ${variable}.trim()).filter(${variable}, ${variable} != '') : [])`;
}

/** A hook object: a Helm or Argo CD hook annotation (the kind and version come from the policy's resource rules). */
export const IS_HOOK = `(${hasAnnotation(HELM_HOOK)} || ${hasAnnotation(ARGOCD_HOOK)})`;

/** `hookguard.io/mode: audit` on the object (HookInfo.auditOnly). */
export const AUDIT_ONLY = `(${hasAnnotation(HOOKGUARD_MODE)} && ${ANNOTATIONS}[${celString(HOOKGUARD_MODE)}].trim() == 'audit')`;

/** The object names the rule in `hookguard.io/skip` (HookInfo.skip), in a value short enough to read. */
export function skips(ruleId: string): string {
  return `(${readable(HOOKGUARD_SKIP)} && ${ANNOTATIONS}[${celString(HOOKGUARD_SKIP)}].split(',').exists(id, id.trim() == ${celString(ruleId)}))`;
}

/** Argo CD's hook annotation rules the object's semantics (HookInfo.system `argocd`). */
const ARGOCD_SYSTEM = hasAnnotation(ARGOCD_HOOK);

/** Helm's hook types as Helm reads them: trimmed and lowercased. */
const HELM_TYPES_LOWER = `${annotationItems(HELM_HOOK, 'h')}.map(h, h.lowerAscii())`;

/** HookInfo.phases: Argo CD's types as written when it has any, else Helm's lowercased. */
const PHASES = `(${ARGOCD_SYSTEM} ? ${annotationItems(ARGOCD_HOOK, 'a')} : ${HELM_TYPES_LOWER})`;

/** HookInfo.testOnly: a Helm hook whose types are all test or test-success. */
export const TEST_ONLY = `(!${ARGOCD_SYSTEM} && ${HELM_TYPES_LOWER}.size() > 0 && ${HELM_TYPES_LOWER}.all(t, t == 'test' || t == 'test-success'))`;

/** HookInfo.cleanup: a pre/post-delete hook. */
export const CLEANUP = `${PHASES}.exists(p, p in ['pre-delete', 'post-delete', 'PreDelete', 'PostDelete'])`;

/** HookInfo.appliedByArgo, with the identities and tracking label the config gives. */
export function appliedByArgo(detection: HookDetection): string {
  const parts = [
    ARGOCD_SYSTEM,
    `request.userInfo.username in ${celStrings(detection.argocdControllerUsernames)}`,
    hasAnnotation(ARGOCD_TRACKING_ID),
  ];
  const label = detection.argocdTrackingLabel;
  if (label !== undefined) parts.push(`(has(object.metadata.labels) && ${celString(label)} in object.metadata.labels)`);
  return `(${parts.join(' || ')})`;
}

const ARGOCD_SYNC_TYPES = ['PreSync', 'Sync', 'PostSync', 'SyncFail'];
const HELM_TYPES_ARGOCD_SYNCS = ['pre-install', 'pre-upgrade', 'post-install', 'post-upgrade'];

/**
 * HookInfo.argoSyncPhase: applied by Argo CD, and run in a sync phase as gitops-engine reads the types (Argo CD's own
 * when it knows any of them, Skip included; else Helm's as written).
 */
export function argoSyncPhase(detection: HookDetection): string {
  const known = `${annotationItems(ARGOCD_HOOK, 'k')}.filter(k, k in ${celStrings([...ARGOCD_SYNC_TYPES, 'Skip'])})`;
  const helmTypes = annotationItems(HELM_HOOK, 'w');
  return `(${appliedByArgo(detection)} && (${known}.size() > 0 ? ${known}.exists(s, s in ${celStrings(ARGOCD_SYNC_TYPES)}) : ${helmTypes}.exists(s, s in ${celStrings(HELM_TYPES_ARGOCD_SYNCS)})))`;
}

/**
 * Whether the tool that runs the hook deletes it once it succeeds (hasDeletePolicy(..., 'hook-succeeded')):
 * Helm reads its own annotation, items trimmed and lowercased; Argo CD its own and Helm's, trimmed and exact.
 */
export function deletesOnSuccess(detection: HookDetection): string {
  const items = (key: string, test: string) =>
    `(${readable(key)} && ${ANNOTATIONS}[${celString(key)}].split(',').exists(d, ${test}))`;
  const helm = items(HELM_DELETE_POLICY, `d.trim().lowerAscii() == 'hook-succeeded'`);
  const argocd = `(${items(ARGOCD_DELETE_POLICY, `d.trim() == 'HookSucceeded'`)} || ${items(HELM_DELETE_POLICY, `d.trim() == 'hook-succeeded'`)})`;
  return `(${appliedByArgo(detection)} ? ${argocd} : ${helm})`;
}
