// What the server knows of the cluster as a whole, read from the API server's discovery (GET /apis) at start and kept
// fresh by a poll: a snapshot the DecisionContext carries, never a call to the API server per request.

/** The cluster's facts rules read; undefined in a context where nothing was discovered (render time, not yet read). */
export interface ClusterFacts {
  /**
   * The API server serves the `security.openshift.io` group (SecurityContextConstraints): OpenShift, whose SCC admission
   * assigns user ids in every namespace, annotated yet or not.
   */
  openshift: boolean;
}

/** The API group whose presence makes a cluster OpenShift (openshift/api security/v1 register.go GroupName). */
export const OPENSHIFT_SECURITY_GROUP = 'security.openshift.io';

/** Whether a `rules.minRuntime.openshift` setting, with what discovery found, makes the cluster OpenShift. */
export function isOpenShift(setting: 'auto' | 'true' | 'false', cluster: ClusterFacts | undefined): boolean {
  return setting === 'auto' ? cluster?.openshift === true : setting === 'true';
}

/**
 * The facts of an APIGroupList (the body of GET /apis): OpenShift when it lists the security.openshift.io group.
 * Undefined for a body that is not an APIGroupList, so a proxy's error page is never read as "not OpenShift".
 */
export function clusterFactsFrom(body: unknown): ClusterFacts | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { kind, groups } = body as { kind?: unknown; groups?: unknown };
  if (kind !== 'APIGroupList' || !Array.isArray(groups)) return undefined;
  return {
    openshift: groups.some(
      (group: unknown) =>
        typeof group === 'object' && group !== null && (group as { name?: unknown }).name === OPENSHIFT_SECURITY_GROUP,
    ),
  };
}
