// The API calls sweep makes, through @kubernetes/client-node's typed clients, as plain JSON objects.
import { BatchV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { KubeObject, Operation } from '../core/types.js';
import { plainObject } from '../kube/plain.js';
import type { SweptKind } from './qualify.js';

export interface SweepClient {
  list(
    kind: SweptKind,
    namespace: string | undefined,
    continueToken: string | undefined,
  ): Promise<{ items: KubeObject[]; continueToken: string | undefined }>;
  get(kind: SweptKind, namespace: string, name: string): Promise<KubeObject>;
  /** A JSON patch (application/json-patch+json). */
  patch(kind: SweptKind, namespace: string, name: string, operations: Operation[]): Promise<KubeObject>;
}

const PAGE_SIZE = 500;
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export function kubeSweepClient(kubeConfig: KubeConfig): SweepClient {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    async list(kind, namespace, continueToken) {
      const page = { limit: PAGE_SIZE, ...(continueToken !== undefined ? { _continue: continueToken } : {}) };
      const list =
        kind === 'Job'
          ? namespace === undefined
            ? await batch.listJobForAllNamespaces(page)
            : await batch.listNamespacedJob({ namespace, ...page })
          : namespace === undefined
            ? await core.listPodForAllNamespaces(page)
            : await core.listNamespacedPod({ namespace, ...page });
      return { items: list.items.map(plainObject), continueToken: list.metadata?._continue || undefined };
    },
    async get(kind, namespace, name) {
      return plainObject(
        kind === 'Job'
          ? await batch.readNamespacedJob({ name, namespace })
          : await core.readNamespacedPod({ name, namespace }),
      );
    },
    async patch(kind, namespace, name, operations) {
      const request = { name, namespace, body: operations };
      return plainObject(
        kind === 'Job'
          ? await batch.patchNamespacedJob(request, JSON_PATCH)
          : await core.patchNamespacedPod(request, JSON_PATCH),
      );
    },
  };
}
