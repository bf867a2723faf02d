// Argo CD application controllers as the upstream manifests and the argo-helm chart deploy them.

export const CONTROLLER_SELECTOR = 'app.kubernetes.io/name=argocd-application-controller';

export function controller(namespace: string, image: string, kind: 'StatefulSet' | 'Deployment' = 'StatefulSet') {
  return {
    apiVersion: 'apps/v1',
    kind,
    metadata: {
      name: 'argocd-application-controller',
      namespace,
      labels: { 'app.kubernetes.io/name': 'argocd-application-controller', 'app.kubernetes.io/part-of': 'argocd' },
    },
    spec: {
      template: {
        spec: {
          serviceAccountName: 'argocd-application-controller',
          containers: [{ name: 'argocd-application-controller', image }],
        },
      },
    },
  };
}

/** The /readyz body once discovery has synced and watches one StatefulSet controller in `argocd`. */
export function readyWithController(version: string, image: string) {
  return {
    status: 'ready',
    discovery: {
      enabled: true,
      synced: true,
      watching: true,
      instances: [
        { namespace: 'argocd', version, source: `StatefulSet argocd-application-controller: image ${image}` },
      ],
    },
  };
}
