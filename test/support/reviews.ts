// Real admission.k8s.io/v1 AdmissionReview requests, shaped the way kube-apiserver sends them to a webhook.
import type { Operation } from '../../src/core/types.js';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface ReviewOptions {
  uid: string;
  operation: AdmissionOperation;
  /** The object as it will be stored; for DELETE pass it as oldObject and leave this null. */
  object: Record<string, unknown> | null;
  oldObject?: Record<string, unknown> | null;
  username?: string;
  /** Defaults to the object's metadata.namespace. */
  namespace?: string;
  dryRun?: boolean;
}

interface Resource {
  group: string;
  version: string;
  kind: string;
  resource: string;
}

// The kinds tests send; the API server reports the group ('' for core), version, kind and plural resource.
const RESOURCES: Readonly<Record<string, Resource>> = {
  'batch/v1/Job': { group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs' },
  'v1/Pod': { group: '', version: 'v1', kind: 'Pod', resource: 'pods' },
  'v1/ConfigMap': { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps' },
};

const OPTIONS_KIND: Readonly<Record<AdmissionOperation, string | undefined>> = {
  CREATE: 'CreateOptions',
  UPDATE: 'UpdateOptions',
  DELETE: 'DeleteOptions',
  CONNECT: undefined,
};

function metadataOf(object: Record<string, unknown> | null | undefined): Record<string, unknown> {
  const metadata = object?.metadata;
  return typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>) : {};
}

/** userInfo as kube-apiserver fills it: a service account token carries a uid and its groups; a client-cert admin does not. */
function userInfoOf(username: string): Record<string, unknown> {
  const serviceAccount = /^system:serviceaccount:([^:]+):/.exec(username);
  if (serviceAccount) {
    return {
      username,
      uid: '3f6c1d2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f',
      groups: ['system:serviceaccounts', `system:serviceaccounts:${serviceAccount[1]}`, 'system:authenticated'],
    };
  }
  return { username, groups: ['system:masters', 'system:authenticated'] };
}

/** An AdmissionReview request body; `object`/`oldObject` are null where the API server sends null. */
export function admissionReview(options: ReviewOptions): Record<string, unknown> {
  const { uid, operation, object, oldObject = null, username = 'kubernetes-admin', dryRun = false } = options;
  const subject = object ?? oldObject;
  const gvk = `${String(subject?.apiVersion)}/${String(subject?.kind)}`;
  const resource = RESOURCES[gvk];
  if (!resource) throw new Error(`admissionReview: no resource known for ${gvk}; add it to RESOURCES`);
  const metadata = metadataOf(subject);
  const name = metadata.name;
  const namespace = options.namespace ?? metadata.namespace;
  const optionsKind = OPTIONS_KIND[operation];
  const kind = { group: resource.group, version: resource.version, kind: resource.kind };
  const plural = { group: resource.group, version: resource.version, resource: resource.resource };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind,
      resource: plural,
      requestKind: kind,
      requestResource: plural,
      // A CREATE with generateName has no name yet; the API server then omits it.
      ...(typeof name === 'string' ? { name } : {}),
      ...(typeof namespace === 'string' ? { namespace } : {}),
      operation,
      userInfo: userInfoOf(username),
      object,
      oldObject,
      dryRun,
      ...(optionsKind ? { options: { kind: optionsKind, apiVersion: 'meta.k8s.io/v1' } } : {}),
    },
  };
}

/** The JSON Patch an AdmissionReview response carries, decoded; throws when it carries none. */
export function decodePatch(response: { patch?: string; patchType?: string }): Operation[] {
  if (response.patch === undefined) throw new Error('the response carries no patch');
  if (response.patchType !== 'JSONPatch') throw new Error(`patchType is ${String(response.patchType)}, not JSONPatch`);
  return JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as Operation[];
}
