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
