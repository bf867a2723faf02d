// The API calls sweep makes. Lists ask for metadata only, and of each page only the objects being deleted are parsed
// (src/kube/api-request.ts, src/kube/list-scan.ts); the few full reads and writes (a candidate, its Workflow, the
// patch, the Event) go through client-node's typed clients.
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type EventsV1Event,
  type KubeConfig,
} from '@kubernetes/client-node';
import { isRecord } from '../core/objects.js';
import type { KubeObject, ObjectMeta, Operation } from '../core/types.js';
import { getBody, ReceiveBuffer } from '../kube/api-request.js';
import { scanListPage } from '../kube/list-scan.js';
import { plainObject } from '../kube/plain.js';
import type { SweptKind } from './qualify.js';

export interface MetadataPage {
  /** The metadata of the objects of the page that are being deleted (and perhaps a few others); the rest unread. */
  items: ObjectMeta[];
  /** Every object of the page. */
  objects: number;
  continueToken: string | undefined;
  /** The size of the page as received. */
  bytes: number;
}

export interface SweepClient {
  listMetadata(
    kind: SweptKind,
    namespace: string | undefined,
    continueToken: string | undefined,
  ): Promise<MetadataPage>;
  get(kind: SweptKind, namespace: string, name: string): Promise<KubeObject>;
  /** A JSON patch (application/json-patch+json). */
  patch(kind: SweptKind, namespace: string, name: string, operations: Operation[]): Promise<KubeObject>;
  /** An Argo Workflows Workflow (argoproj.io/v1alpha1). */
  getWorkflow(namespace: string, name: string): Promise<KubeObject>;
  /** An Argo CD Application (argoproj.io/v1alpha1). */
  getApplication(namespace: string, name: string): Promise<KubeObject>;
  /** Creates an events.k8s.io/v1 Event. */
  createEvent(namespace: string, event: EventsV1Event): Promise<void>;
}

/** client-go's pager size (tools/pager: defaultPageSize 500), which the API server is tuned for. */
export const PAGE_SIZE = 500;
/** Like client-go's metadata client (metadata/metadata.go, List): metadata only, or the full list from a server that
 * cannot convert it; either way only `metadata` of each item is read. */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const LIST_TIMEOUT_MS = 60_000;
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

function collectionPath(kind: SweptKind, namespace: string | undefined): string {
  const prefix = kind === 'Job' ? '/apis/batch/v1' : '/api/v1';
  const plural = kind === 'Job' ? 'jobs' : 'pods';
  return namespace === undefined
    ? `${prefix}/${plural}`
    : `${prefix}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
}

export function kubeSweepClient(kubeConfig: KubeConfig): SweepClient {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const events = kubeConfig.makeApiClient(EventsV1Api);
  // Custom objects come back as the parsed JSON itself: no model objects to convert.
  const getArgoObject = async (plural: string, kind: string, namespace: string, name: string) => {
    const object: unknown = await custom.getNamespacedCustomObject({
      group: 'argoproj.io',
      version: 'v1alpha1',
      plural,
      namespace,
      name,
    });
    if (!isRecord(object)) throw new Error(`${kind} ${namespace}/${name}: the answer is not an object`);
    return object;
  };
  // Pages are read one at a time, each scanned before the next is asked for.
  const pages = new ReceiveBuffer();
  return {
    async listMetadata(kind, namespace, continueToken) {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (continueToken !== undefined) query.set('continue', continueToken);
      const body = await getBody(
        kubeConfig,
        {
          path: `${collectionPath(kind, namespace)}?${query.toString()}`,
          accept: METADATA_LIST_ACCEPT,
          timeoutMs: LIST_TIMEOUT_MS,
        },
        pages,
      );
      // Only an object being deleted can be a candidate, and kube-apiserver writes the key as is (Go's encoding/json
      // escapes no letter): an item without this text is not parsed at all.
      const page = scanListPage(body, '"deletionTimestamp"');
      const token = page.metadata.continue;
      return {
        items: page.items.flatMap((item) => (isRecord(item) && isRecord(item.metadata) ? [item.metadata] : [])),
        objects: page.itemCount,
        continueToken: typeof token === 'string' && token !== '' ? token : undefined,
        bytes: body.length,
      };
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
    getWorkflow: (namespace, name) => getArgoObject('workflows', 'Workflow', namespace, name),
    getApplication: (namespace, name) => getArgoObject('applications', 'Application', namespace, name),
    async createEvent(namespace, event) {
      await events.createNamespacedEvent({ namespace, body: event });
    },
  };
}
