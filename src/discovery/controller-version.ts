// Pure: what an Argo CD application controller workload (Deployment or StatefulSet) says about its version.
import { normalizeArgoVersion } from '../core/argocd-version.js';
import { isRecord, metadataOf, podSpecOf } from '../core/objects.js';
import type { Container, KubeObject } from '../core/types.js';

export const VERSION_LABEL = 'app.kubernetes.io/version';

export interface ControllerVersion {
  version: string | undefined;
  /** Where the version came from, or why it is unknown. */
  source: string;
}

/** The tag of an image reference, if it has one: `host:5000/argoproj/argocd:v2.14.3@sha256:…` → `v2.14.3`. */
export function imageTag(image: string): string | undefined {
  const withoutDigest = image.split('@', 1)[0] ?? '';
  const lastSlash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.indexOf(':', lastSlash + 1);
  return colon === -1 ? undefined : withoutDigest.slice(colon + 1);
}

/**
 * The controller container: upstream manifests name it `argocd-application-controller`, the argo-helm chart
 * `application-controller`; failing both, the one running an `argocd` image, else the only container.
 */
function controllerContainer(workload: KubeObject): Container | undefined {
  const containers = (podSpecOfWorkload(workload)?.containers ?? []).filter(isRecord) as Container[];
  const imageName = (container: Container) =>
    (container.image ?? '').split('@', 1)[0]!.split('/').pop()!.split(':', 1)[0];
  return (
    containers.find((container) => container.name?.endsWith('application-controller')) ??
    containers.find((container) => imageName(container) === 'argocd') ??
    (containers.length === 1 ? containers[0] : undefined)
  );
}

function podSpecOfWorkload(workload: KubeObject) {
  // Deployments and StatefulSets hold their pod template where a Job does.
  return podSpecOf({ ...workload, kind: 'Job' });
}

/** The identity the controller's requests reach admission with. */
export function controllerUsername(workload: KubeObject): string | undefined {
  const namespace = metadataOf(workload)?.namespace;
  if (typeof namespace !== 'string' || namespace === '') return undefined;
  const serviceAccount = podSpecOfWorkload(workload)?.serviceAccountName;
  // A pod without serviceAccountName runs as the namespace's "default" service account.
  return `system:serviceaccount:${namespace}:${typeof serviceAccount === 'string' && serviceAccount !== '' ? serviceAccount : 'default'}`;
}

/**
 * The controller's version: the image tag when it is a version (any registry or mirror, `v2.14.3` or
 * `2.14.3`), else the `app.kubernetes.io/version` label when it is one, else unknown, saying why
 * (`latest`, a digest only, no tag).
 */
export function controllerVersion(workload: KubeObject): ControllerVersion {
  const image = controllerContainer(workload)?.image;
  const tag = image === undefined ? undefined : imageTag(image);
  const fromTag = normalizeArgoVersion(tag);
  if (image !== undefined && fromTag !== undefined) return { version: fromTag, source: `image ${image}` };

  const labels = metadataOf(workload)?.labels;
  const label = isRecord(labels) && typeof labels[VERSION_LABEL] === 'string' ? labels[VERSION_LABEL] : undefined;
  const fromLabel = normalizeArgoVersion(label);
  if (fromLabel !== undefined) return { version: fromLabel, source: `label ${VERSION_LABEL}=${label}` };

  const imageSays =
    image === undefined
      ? 'no controller container image'
      : tag === undefined
        ? image.includes('@')
          ? `image ${image} is pinned by digest only`
          : `image ${image} has no tag`
        : `image tag "${tag}" is not a version`;
  const labelSays =
    label === undefined ? `no ${VERSION_LABEL} label` : `label ${VERSION_LABEL}="${label}" is not a version`;
  return { version: undefined, source: `unknown: ${imageSays} and ${labelSays}` };
}
