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

/** The last part of an image's repository: `quay.io/argoproj/argocd:v2.14.3@sha256:…` → `argocd`. */
function imageName(image: string): string {
  return image.split('@', 1)[0]!.split('/').pop()!.split(':', 1)[0]!;
}

/**
 * Whether the image is Argo CD's own, whose tags are Argo CD versions: `quay.io/argoproj/argocd` (argo-cd v3.5.1
 * manifests/base/kustomization.yaml), from any registry or mirror that keeps its name. Other images that run Argo CD
 * are tagged by whoever built them: OpenShift GitOps' `registry.redhat.io/openshift-gitops-1/argocd-rhel8` carries
 * the GitOps operator's version (gitops-operator v1.20.0 hack/non-olm-install/install-gitops-operator.sh:
 * `argocd-rhel8:${GITOPS_OPERATOR_VER}`, default `v1.9.2-2`), and `v1.16.0` there is not Argo CD 1.16.0.
 */
export function isArgoCdImage(image: string): boolean {
  return imageName(image) === 'argocd';
}

/** OpenShift GitOps version → the Argo CD version it ships (`argocd.openshiftGitopsVersions`). */
export type GitopsVersions = Readonly<Record<string, string>>;

const GITOPS_VERSIONS_KEY = 'argocd.openshiftGitopsVersions';

/** OpenShift GitOps' Argo CD images: `argocd-rhel8`, and `argocd-rhel9` on recent releases. */
const GITOPS_IMAGES = new Set(['argocd-rhel8', 'argocd-rhel9']);

const minorOf = (version: string) => version.split('.', 2).join('.');

/**
 * The table's row for a GitOps release: its own, else the row of the same minor release (each GitOps minor ships
 * one Argo CD minor: gitops-operator's branches v1.10 to v1.20 pin argocd-operator releases whose default Argo CD is
 * 2.8 to 3.3, common/defaults.go ArgoCDDefaultArgoVersion), the highest not above it, else the lowest.
 */
function gitopsRow(release: string, gitopsVersions: GitopsVersions): [string, string] | undefined {
  const rows = Object.entries(gitopsVersions)
    .map(([gitops, argocd]): [string | undefined, string] => [normalizeArgoVersion(gitops), argocd])
    .filter((row): row is [string, string] => row[0] !== undefined && minorOf(row[0]) === minorOf(release))
    .sort(([a], [b]) => compareReleases(a, b));
  const exact = rows.find(([gitops]) => gitops === release);
  return exact ?? rows.filter(([gitops]) => compareReleases(gitops, release) <= 0).at(-1) ?? rows[0];
}

/** Compares x.y.z releases numerically. */
function compareReleases(a: string, b: string): number {
  const [x, y] = [a, b].map((version) => version.split('-', 1)[0]!.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return (x![i] ?? 0) - (y![i] ?? 0);
  return 0;
}

/**
 * OpenShift GitOps' Argo CD: its image `argocd-rhel8` (or `argocd-rhel9`) is tagged with the GitOps version, `v1.9.2`
 * or with a build suffix `v1.9.2-2` (gitops-operator v1.20.0 hack/non-olm-install/install-gitops-operator.sh), and
 * Red Hat publishes which Argo CD each GitOps release ships; a patch release not in the table takes its minor's row.
 * undefined when the image is neither.
 */
function gitopsVersion(image: string, gitopsVersions: GitopsVersions): ControllerVersion | undefined {
  if (!GITOPS_IMAGES.has(imageName(image))) return undefined;
  const tag = imageTag(image);
  const parsed = normalizeArgoVersion(tag);
  if (tag === undefined || parsed === undefined)
    return {
      version: undefined,
      source: `unknown: OpenShift GitOps image ${image} has no version tag (a digest only, or another tag); give its Argo CD version in argocd.instanceVersions`,
    };
  const release = parsed.split('-', 1)[0]!;
  const entry = gitopsRow(release, gitopsVersions);
  const argocd = normalizeArgoVersion(entry?.[1]);
  if (argocd === undefined)
    return {
      version: undefined,
      source: `unknown: OpenShift GitOps ${release} (image ${image}) is not in ${GITOPS_VERSIONS_KEY}; add the Argo CD version its release notes give`,
    };
  return {
    version: argocd,
    source:
      entry![0] === release
        ? `image ${image}: OpenShift GitOps ${release} ships Argo CD ${argocd} (${GITOPS_VERSIONS_KEY})`
        : `image ${image}: OpenShift GitOps ${release} is read as ${entry![0]}, which ships Argo CD ${argocd} (${GITOPS_VERSIONS_KEY}, by minor release)`,
  };
}

/**
 * The controller container: upstream manifests and argocd-operator name it `argocd-application-controller`, the
 * argo-helm chart `application-controller`; failing both, the one running an `argocd` image, else the only one.
 */
function controllerContainer(workload: KubeObject): Container | undefined {
  const containers = (podSpecOfWorkload(workload)?.containers ?? []).filter(isRecord) as Container[];
  return (
    containers.find((container) => container.name?.endsWith('application-controller')) ??
    containers.find((container) => isArgoCdImage(container.image ?? '')) ??
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
 * The controller's version: the tag of Argo CD's own image when it is a version (any registry or mirror, `v2.14.3`
 * or `2.14.3`), else the `app.kubernetes.io/version` label when it is one (argo-helm sets it to the image tag:
 * argo-helm argo-cd-10.1.1 charts/argo-cd/templates/_common.tpl `argo-cd.versionLabelValue`), else unknown, saying
 * why (`latest`, a digest only, no tag). Another image says nothing about the Argo CD version, and neither does a
 * label beside it (argo-helm would copy the same foreign tag into it): unknown. argocd-operator's default image is
 * `quay.io/argoproj/argocd@sha256:…`, a digest only (v0.18.0 common/defaults.go ArgoCDDefaultArgoVersion).
 * OpenShift GitOps' argocd-rhel8 is the exception: its tag is a GitOps version, which `gitopsVersions` (Red Hat's
 * published table) turns into the Argo CD version it ships.
 *
 * The argocd-operator `ArgoCD` resource (argoproj.io/v1beta1) says nothing more: the controller's image is built from
 * its spec.image (or the operator's ARGOCD_IMAGE) and spec.version (argocd-operator v0.18.0
 * controllers/argocd/util.go getArgoContainerImage, GetImageAndTag), so spec.version is the tag read here, and
 * ArgoCDStatus has no version field (api/v1beta1/argocd_types.go). Reading it would only add a permission.
 */
export function controllerVersion(workload: KubeObject, gitopsVersions: GitopsVersions = {}): ControllerVersion {
  const image = controllerContainer(workload)?.image;
  const gitops = image === undefined ? undefined : gitopsVersion(image, gitopsVersions);
  if (gitops) return gitops;
  if (image !== undefined && !isArgoCdImage(image))
    return {
      version: undefined,
      source: `unknown: image ${image} is not Argo CD's own (quay.io/argoproj/argocd or a mirror of it): its tags are not Argo CD versions`,
    };
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

/**
 * Whether the workload runs any controller. The upstream manifests for a Deployment controller ship the StatefulSet
 * beside it at `replicas: 0` (argo-cd v3.5.1 manifests/base/application-controller-deployment/
 * argocd-application-controller-statefulset.yaml); an unset count means 1.
 */
export function isRunning(workload: KubeObject): boolean {
  const replicas = isRecord(workload.spec) ? workload.spec.replicas : undefined;
  return replicas !== 0;
}
