import semver from 'semver';
import type { Advisory, AdvisoryTool } from './types.js';

/**
 * A usable Argo CD version from an image tag or label ("v2.14.3", "2.14.3+a1b2c3"), or undefined when the
 * value says nothing about the code that runs ("latest", a digest, a branch name).
 */
export function normalizeArgoVersion(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const cleaned = semver.clean(raw.trim());
  return cleaned ?? undefined;
}

export function versionInRange(version: string, range: string): boolean {
  return semver.satisfies(version, range, { includePrerelease: true });
}

export function advisoryAffects(advisory: Advisory, version: string): boolean {
  return versionInRange(version, advisory.affected);
}

/** The advisories about one tool's versions (an advisory without `tool` is about Argo CD). */
export function advisoriesOfTool(advisories: readonly Advisory[], tool: AdvisoryTool): Advisory[] {
  return advisories.filter((advisory) => (advisory.tool ?? 'argocd') === tool);
}

export function isValidRange(range: string): boolean {
  return semver.validRange(range) !== null;
}

/**
 * The Argo CD versions whose sync puts its hook finalizer on every sync hook before applying it: 2.14.3 (which
 * pinned gitops-engine 65db274b by mistake) and 3.0.0 on, release candidates included (v3.0.0-rc1 pins 7258614f).
 * Checked tag by tag: each tag's go.mod pins a gitops-engine commit whose pkg/sync/hook/hook.go declares
 * `argocd.argoproj.io/hook-finalizer` or not (v2.14.2 c19f8cfa: no; v2.14.3 65db274b: yes; v2.14.4 43fce7ce and
 * v2.14.21 c08b0a72: no; v3.0.0 7258614f: yes); from v3.3.0 the engine is in the argo-cd tree, and
 * v3.5.1 gitops-engine/pkg/sync/sync_context.go getSyncTasks still adds it (`targetObj.SetFinalizers(…)`).
 */
export const HOOK_FINALIZER_VERSIONS = '2.14.3 || >=3.0.0-0';

/** Whether Argo CD `version` (normalised) adds its hook finalizer to the sync hooks it applies. */
export function addsHookFinalizer(version: string): boolean {
  return semver.satisfies(version, HOOK_FINALIZER_VERSIONS, { includePrerelease: true });
}
