// Argo CD application controllers as each install lays them out: their kind, name, labels, service account,
// container and image, as read from the sources at the tags named on each builder. And the controllers of other Argo
// projects, with labels alike enough that discovery must tell them apart.
import { DEFAULTS } from '../../src/config/keys.js';
import type { KubeObject } from '../../src/core/types.js';

/** The selector discovery uses by default. */
export const CONTROLLER_SELECTOR = DEFAULTS.discovery.labelSelector;

type Kind = 'StatefulSet' | 'Deployment';

interface Layout {
  kind: Kind;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  /** The pod template's labels: only what the selector of the workload needs. */
  podLabels: Record<string, string>;
  serviceAccountName: string;
  containerName: string;
  image: string;
  replicas?: number;
}

function workload(layout: Layout): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: layout.kind,
    metadata: { name: layout.name, namespace: layout.namespace, labels: layout.labels },
    spec: {
      ...(layout.replicas !== undefined ? { replicas: layout.replicas } : {}),
      selector: { matchLabels: layout.podLabels },
      template: {
        metadata: { labels: layout.podLabels },
        spec: {
          serviceAccountName: layout.serviceAccountName,
          containers: [{ name: layout.containerName, image: layout.image }],
        },
      },
    },
  };
}

const UPSTREAM_LABELS = {
  'app.kubernetes.io/name': 'argocd-application-controller',
  'app.kubernetes.io/part-of': 'argocd',
  'app.kubernetes.io/component': 'application-controller',
};

/**
 * The upstream manifests (argo-cd v3.5.1 manifests/base/application-controller/
 * argocd-application-controller-statefulset.yaml): StatefulSet `argocd-application-controller`, service account and
 * container of the same name. A Deployment when `kind` says so.
 */
export function controller(
  namespace: string,
  image: string,
  kind: Kind = 'StatefulSet',
  replicas?: number,
): KubeObject {
  return workload({
    kind,
    name: 'argocd-application-controller',
    namespace,
    labels: UPSTREAM_LABELS,
    podLabels: { 'app.kubernetes.io/name': 'argocd-application-controller' },
    serviceAccountName: 'argocd-application-controller',
    containerName: 'argocd-application-controller',
    image,
    ...(replicas !== undefined ? { replicas } : {}),
  });
}

/**
 * The upstream Deployment controller (argo-cd v3.5.1 manifests/base/application-controller-deployment/): the
 * Deployment, and the StatefulSet of the same name and labels beside it at `replicas: 0`.
 */
export function upstreamDeploymentController(namespace: string, image: string, statefulSetImage = image): KubeObject[] {
  return [controller(namespace, image, 'Deployment', 1), controller(namespace, statefulSetImage, 'StatefulSet', 0)];
}

/**
 * The argo-helm chart (argo-cd-10.1.1, appVersion v3.4.4) installed as `release`: StatefulSet
 * `<fullname>-application-controller` (fullname: the release name when it contains "argocd", else
 * `<release>-argocd`; _common.tpl argo-cd.fullname), a Deployment with `controller.dynamicClusterDistribution`; its
 * labels (argo-cd.labels), the version label from the image tag; service account `argocd-application-controller`
 * whatever the release (values.yaml controller.serviceAccount.name); container `application-controller`.
 */
export function argoHelmController(
  release: string,
  namespace: string,
  tag = 'v3.4.4',
  options: { dynamicClusterDistribution?: boolean } = {},
): KubeObject {
  const fullname = release.includes('argocd') ? release : `${release}-argocd`;
  const selector = {
    'app.kubernetes.io/name': 'argocd-application-controller',
    'app.kubernetes.io/instance': release,
  };
  return workload({
    kind: options.dynamicClusterDistribution ? 'Deployment' : 'StatefulSet',
    name: `${fullname}-application-controller`,
    namespace,
    labels: {
      'helm.sh/chart': 'argo-cd-10.1.1',
      ...selector,
      'app.kubernetes.io/component': 'application-controller',
      'app.kubernetes.io/managed-by': 'Helm',
      'app.kubernetes.io/part-of': 'argocd',
      'app.kubernetes.io/version': tag,
    },
    podLabels: selector,
    serviceAccountName: 'argocd-application-controller',
    containerName: 'application-controller',
    image: `quay.io/argoproj/argocd:${tag}`,
  });
}

/** argocd-operator v0.18.0's default image: a digest (common/defaults.go ArgoCDDefaultArgoVersion, "v3.3.10"). */
export const OPERATOR_DEFAULT_IMAGE =
  'quay.io/argoproj/argocd@sha256:05d68bf224df7cd39713012c19226a33c374f2f3bd65df7b9088349e4ac3e6a2';

/**
 * argocd-operator (v0.18.0 controllers/argocd/statefulset.go reconcileApplicationControllerStatefulSet) for an
 * ArgoCD resource named `name`: StatefulSet `<name>-application-controller` labelled by newStatefulSetWithName and
 * common.DefaultLabels, pod template labelled with its name only, service account
 * `<name>-argocd-application-controller`, container `argocd-application-controller`. OpenShift GitOps is this
 * operator with the instance `openshift-gitops` in namespace `openshift-gitops` (gitops-operator v1.20.0
 * common/common.go) and its own image.
 */
export function operatorController(name: string, namespace: string, image = OPERATOR_DEFAULT_IMAGE): KubeObject {
  const fullname = `${name}-application-controller`;
  return workload({
    kind: 'StatefulSet',
    name: fullname,
    namespace,
    labels: {
      'app.kubernetes.io/name': fullname,
      'app.kubernetes.io/part-of': 'argocd',
      'app.kubernetes.io/managed-by': name,
      'app.kubernetes.io/component': 'application-controller',
    },
    podLabels: { 'app.kubernetes.io/name': fullname },
    serviceAccountName: `${name}-argocd-application-controller`,
    containerName: 'argocd-application-controller',
    image,
  });
}

/**
 * Controllers that are not Argo CD's application controller, with labels close to it: Argo CD's ApplicationSet
 * controller (argo-cd v3.5.1 manifests/base/applicationset-controller/), Argo Rollouts (argo-rollouts v1.9.1
 * manifests/install.yaml), and the argo-helm charts of Argo Workflows and Argo Events (argo-helm argo-cd-10.1.1
 * charts/argo-workflows and charts/argo-events templates/_helpers.tpl, controller.name).
 */
export function otherArgoControllers(namespace: string): KubeObject[] {
  const deployment = (name: string, labels: Record<string, string>, image: string) =>
    workload({
      kind: 'Deployment',
      name,
      namespace,
      labels,
      podLabels: { 'app.kubernetes.io/name': labels['app.kubernetes.io/name'] ?? name },
      serviceAccountName: name,
      containerName: name,
      image,
    });
  return [
    deployment(
      'argocd-applicationset-controller',
      {
        'app.kubernetes.io/name': 'argocd-applicationset-controller',
        'app.kubernetes.io/part-of': 'argocd',
        'app.kubernetes.io/component': 'applicationset-controller',
      },
      'quay.io/argoproj/argocd:v3.4.4',
    ),
    deployment(
      'argo-rollouts',
      {
        'app.kubernetes.io/component': 'rollouts-controller',
        'app.kubernetes.io/name': 'argo-rollouts',
        'app.kubernetes.io/part-of': 'argo-rollouts',
      },
      'quay.io/argoproj/argo-rollouts:v1.9.1',
    ),
    deployment(
      'argo-workflows-workflow-controller',
      {
        'app.kubernetes.io/name': 'argo-workflows-workflow-controller',
        'app.kubernetes.io/component': 'workflow-controller',
        'app.kubernetes.io/part-of': 'argo-workflows',
      },
      'quay.io/argoproj/workflow-controller:v4.1.2',
    ),
    deployment(
      'argo-events-controller-manager',
      {
        'app.kubernetes.io/name': 'argo-events-controller-manager',
        'app.kubernetes.io/component': 'controller-manager',
        'app.kubernetes.io/part-of': 'argo-events',
      },
      'quay.io/argoproj/argo-events:v1.9.11',
    ),
  ];
}
