// Pure: what hookguard knows of Flux's helm-controller, the other deployer of Helm charts with hooks.
import { advisoryAffects, versionInRange } from './argocd-version.js';
import { isRecord, metadataOf } from './objects.js';
import type { Advisory, KubeObject } from './types.js';

/**
 * The labels helm-controller puts on what it renders, hooks included under `postRenderStrategy: combined` (the
 * default from v1.6.0): fluxcd/helm-controller v1.6.3 internal/postrender/common_renderer.go originLabels
 * (`<group>/name`, `<group>/namespace` with the group helm.toolkit.fluxcd.io), api/v2/helmrelease_types.go
 * PostRenderStrategy. They name the HelmRelease, not the Helm release.
 */
export const FLUX_NAME_LABEL = 'helm.toolkit.fluxcd.io/name';
export const FLUX_NAMESPACE_LABEL = 'helm.toolkit.fluxcd.io/namespace';

/**
 * What is known of the helm-controllers that may deploy the hooks judged: their versions (normalised), and whether
 * one runs whose version is unknown. At render time `flux.helmControllerVersion` (or `--flux-version`) gives one
 * version, or none: no helm-controller is known to deploy the chart. At admission, discovery's (or the pin).
 */
export interface HelmControllers {
  versions: readonly string[];
  unknownVersion: boolean;
}

export const NO_HELM_CONTROLLERS: HelmControllers = Object.freeze({
  versions: Object.freeze([]),
  unknownVersion: false,
});

/** The HelmRelease (namespace and name) whose helm-controller rendered the object, read from its origin labels. */
export function fluxOwnerOf(object: KubeObject): { namespace: string; name: string } | undefined {
  const labels = metadataOf(object)?.labels;
  if (!isRecord(labels)) return undefined;
  const name = labels[FLUX_NAME_LABEL];
  const namespace = labels[FLUX_NAMESPACE_LABEL];
  if (typeof name !== 'string' || name === '' || typeof namespace !== 'string' || namespace === '') return undefined;
  return { namespace, name };
}

/**
 * The advisories about helm-controller (`tool: helm-controller`) naming `ruleId` in `warnedBy` that affect any of the
 * known helm-controllers; with a helm-controller of unknown version, every such advisory (it may be affected).
 */
export function helmControllerAdvisories(
  advisories: readonly Advisory[],
  controllers: HelmControllers,
  ruleId: string,
): readonly Advisory[] {
  return advisories.filter(
    (advisory) =>
      advisory.tool === 'helm-controller' &&
      advisory.warnedBy.includes(ruleId) &&
      (controllers.unknownVersion || controllers.versions.some((version) => advisoryAffects(advisory, version))),
  );
}

/** The known helm-controller versions in `range`. */
export function versionsIn(controllers: HelmControllers, range: string): string[] {
  return controllers.versions.filter((version) => versionInRange(version, range));
}

/** The Helm release a HelmRelease (helm.toolkit.fluxcd.io/v2) manages, and its Ready and Released conditions. */
export interface HelmReleaseTarget {
  releaseName: string;
  /** Where helm-controller keeps the release records. */
  storageNamespace: string;
  /** Where the release (and so its hooks) is installed. */
  releaseNamespace: string;
  conditions: { type: string; status: string; reason?: string; message?: string }[];
}

const QUOTED_CONDITIONS = ['Ready', 'Released'];

/**
 * The defaults of fluxcd/helm-controller v1.6.3 api/v2/helmrelease_types.go: GetReleaseName (spec.releaseName, else
 * `<spec.targetNamespace>-<name>` with a target namespace, else the name), GetStorageNamespace (spec.storageNamespace,
 * else the HelmRelease's namespace), GetReleaseNamespace (spec.targetNamespace, else the HelmRelease's namespace).
 */
export function helmReleaseTarget(object: unknown): HelmReleaseTarget | undefined {
  if (!isRecord(object)) return undefined;
  const metadata = metadataOf(object);
  const name = metadata?.name;
  const namespace = metadata?.namespace;
  if (typeof name !== 'string' || name === '' || typeof namespace !== 'string' || namespace === '') return undefined;
  const spec = isRecord(object.spec) ? object.spec : {};
  const given = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  const targetNamespace = given(spec.targetNamespace);
  const status = isRecord(object.status) ? object.status : {};
  const conditions = (Array.isArray(status.conditions) ? status.conditions : [])
    .filter(isRecord)
    .filter((condition) => typeof condition.type === 'string' && QUOTED_CONDITIONS.includes(condition.type))
    .map((condition) => ({
      type: condition.type as string,
      status: typeof condition.status === 'string' ? condition.status : 'Unknown',
      ...(given(condition.reason) !== undefined ? { reason: condition.reason as string } : {}),
      ...(given(condition.message) !== undefined ? { message: condition.message as string } : {}),
    }));
  return {
    releaseName: given(spec.releaseName) ?? (targetNamespace !== undefined ? `${targetNamespace}-${name}` : name),
    storageNamespace: given(spec.storageNamespace) ?? namespace,
    releaseNamespace: targetNamespace ?? namespace,
    conditions,
  };
}

/**
 * Whether a HelmRelease is not Ready because of a Helm hook: its Ready condition False, and it or Released quoting
 * Helm's hook error ("pre-upgrade hooks failed: …", pkg/action/hooks.go; "… hook … failed").
 */
export function notReadyForAHook(target: HelmReleaseTarget): boolean {
  const ready = target.conditions.find((condition) => condition.type === 'Ready');
  if (ready?.status !== 'False') return false;
  return target.conditions.some((condition) => /\bhooks?\b/i.test(condition.message ?? ''));
}
