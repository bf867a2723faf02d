// Pure: what a Flux helm-controller Deployment says about its version.
import { normalizeArgoVersion } from '../core/argocd-version.js';
import { isRecord, podSpecOf } from '../core/objects.js';
import type { Container, KubeObject } from '../core/types.js';
import { imageTag } from './controller-version.js';

export interface HelmControllerVersion {
  version: string | undefined;
  /** Where the version came from, or why it is unknown. */
  source: string;
}

/** The last part of an image's repository: `ghcr.io/fluxcd/helm-controller:v1.6.3@sha256:…` → `helm-controller`. */
function imageName(image: string): string {
  return image.split('@', 1)[0]!.split('/').pop()!.split(':', 1)[0]!;
}

/**
 * The controller container: helm-controller's own manifests name it `manager` (fluxcd/helm-controller v1.6.3
 * config/manager/deployment.yaml), flux2 keeps that name; failing it, the one running a `helm-controller` image.
 */
function controllerContainer(workload: KubeObject): Container | undefined {
  const containers = (podSpecOf({ ...workload, kind: 'Job' })?.containers ?? []).filter(isRecord) as Container[];
  return (
    containers.find(
      (container) => container.name === 'manager' && imageName(container.image ?? '') === 'helm-controller',
    ) ?? containers.find((container) => imageName(container.image ?? '') === 'helm-controller')
  );
}

/**
 * The helm-controller's version: the tag of its own image (`ghcr.io/fluxcd/helm-controller` or
 * `docker.io/fluxcd/helm-controller`, or any mirror that keeps the name), `v1.6.3` or `1.6.3`. Nothing else is read:
 * flux2's `app.kubernetes.io/version` label is the Flux distribution's version (v2.x), not the helm-controller's, and
 * another image's tag is whoever built it's. Unknown, saying why, otherwise (a digest only, `latest`, no tag).
 */
export function helmControllerVersion(workload: KubeObject): HelmControllerVersion {
  const image = controllerContainer(workload)?.image;
  if (image === undefined)
    return {
      version: undefined,
      source: 'unknown: no container runs a helm-controller image (…/fluxcd/helm-controller)',
    };
  const tag = imageTag(image);
  const version = normalizeArgoVersion(tag);
  if (version !== undefined) return { version, source: `image ${image}` };
  const says =
    tag === undefined
      ? image.includes('@')
        ? `image ${image} is pinned by digest only`
        : `image ${image} has no tag`
      : `image tag "${tag}" is not a version`;
  return { version: undefined, source: `unknown: ${says}; give it in flux.helmControllerVersion` };
}
