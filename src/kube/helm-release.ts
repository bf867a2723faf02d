// Decoding a Helm release record from its storage object, exactly as Helm does (helm v3.21.4 and v4.3.2
// pkg/storage/driver/util.go decodeRelease): `data.release` is base64 (StdEncoding) of gzip of the release's JSON,
// or of the JSON itself for records older than compression (no gzip magic 1f 8b 08). A Secret's data is base64 once
// more on the wire (Kubernetes' []byte), a ConfigMap's is not. Hostile input: the inflated size is capped.
import { gunzipSync } from 'node:zlib';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  chooseRevision,
  readHelmRelease,
  releaseObjectName,
  releaseSelector,
  type HelmRelease,
  type StoredRevision,
} from '../core/release.js';
import { isRecord } from '../core/objects.js';
import { InputError } from '../errors.js';
import { apiFailure } from './api-failure.js';
import { getBody } from './api-request.js';

/** The most a release record may inflate to: a chart, its values and its manifests, well above any real one. */
export const MAX_RELEASE_BYTES = 64 * 1024 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const GZIP_MAGIC = [0x1f, 0x8b, 0x08];

function strictBase64(value: string, what: string): Buffer {
  // Go's StdEncoding refuses what Node's decoder would skip over: a character outside the alphabet, a bad length.
  if (value.length % 4 !== 0 || !BASE64.test(value)) throw new InputError(`${what} is not base64`);
  return Buffer.from(value, 'base64');
}

/** The release JSON of a `data.release` value as Helm stored it (base64 of gzip of JSON), inflated at most `limit`. */
export function decodeReleaseData(stored: string, what: string, limit = MAX_RELEASE_BYTES): unknown {
  let bytes = strictBase64(stored, what);
  if (bytes.length > 3 && GZIP_MAGIC.every((byte, index) => bytes[index] === byte)) {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: limit });
    } catch (error) {
      const code = (error as { code?: string }).code;
      throw new InputError(
        code === 'ERR_BUFFER_TOO_LARGE'
          ? `${what} inflates to more than ${limit} bytes: not read`
          : `${what} is not valid gzip: ${(error as Error).message}`,
      );
    }
  } else if (bytes.length > limit) throw new InputError(`${what} is more than ${limit} bytes: not read`);
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    throw new InputError(`${what} is not a release's JSON`);
  }
}

/**
 * The release a storage object holds: a Secret (`data.release` base64 once more, as the API server sends `[]byte`)
 * or a ConfigMap (`data.release` as Helm wrote it).
 */
export function releaseFromStorage(object: unknown, limit = MAX_RELEASE_BYTES): HelmRelease {
  const kind = isRecord(object) ? object.kind : undefined;
  const metadata = isRecord(object) && isRecord(object.metadata) ? object.metadata : {};
  const what = `${typeof kind === 'string' ? kind : 'object'} ${typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : ''}${typeof metadata.name === 'string' ? metadata.name : ''}`;
  const data = isRecord(object) && isRecord(object.data) ? object.data.release : undefined;
  if (typeof data !== 'string') throw new InputError(`${what} has no data.release: not a Helm release record`);
  // A Secret's data.release is base64 of Helm's base64; inflated at most limit, Helm's text is bounded by it too.
  const stored = kind === 'Secret' ? strictBase64(data, `${what} data.release`).toString('latin1') : data;
  const release = readHelmRelease(decodeReleaseData(stored, `${what} data.release`, limit));
  if (release === undefined) throw new InputError(`${what} data.release holds no release (no name or info)`);
  return release;
}

/** What `hookguard why --release` reads: one revision of a release and where it was stored. */
export interface StoredRelease {
  release: HelmRelease;
  /** `Secret shop/sh.helm.release.v1.web.v3`. */
  storedIn: string;
}

const STORAGE_KINDS = [
  { kind: 'Secret', plural: 'secrets' },
  { kind: 'ConfigMap', plural: 'configmaps' },
] as const;
const TIMEOUT_MS = 30_000;
/** Labels only: each revision's object holds the whole chart, and only the newest (or the one asked for) is read. */
const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

async function getJson(kubeConfig: KubeConfig, path: string, accept = 'application/json'): Promise<unknown> {
  try {
    const body = await getBody(kubeConfig, { path, accept, timeoutMs: TIMEOUT_MS });
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch (error) {
    if (apiFailure(error).status === 404) return undefined;
    throw error;
  }
}

/** What a storage object's labels say of the revision it holds; undefined when they are not Helm's. */
function storedRevisionOf(item: unknown): StoredRevision | undefined {
  const metadata = isRecord(item) && isRecord(item.metadata) ? item.metadata : {};
  const labels = isRecord(metadata.labels) ? metadata.labels : {};
  const { name, version, status } = labels;
  if (typeof metadata.namespace !== 'string' || typeof name !== 'string' || typeof status !== 'string')
    return undefined;
  if (typeof version !== 'string' || !/^[1-9][0-9]{0,8}$/.test(version)) return undefined;
  return { namespace: metadata.namespace, name, version: Number(version), status };
}

/**
 * The revisions of release NAME stored in NAMESPACE: Helm's default driver (Secrets) first, then ConfigMaps
 * (HELM_DRIVER=configmap), each listed by Helm's labels (metadata only), the newest revision or `revision` read whole.
 * Undefined when neither holds the release, or not that revision.
 */
export async function readStoredRelease(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  revision: number | undefined,
): Promise<StoredRelease | undefined> {
  for (const { kind, plural } of STORAGE_KINDS) {
    const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/${plural}`;
    const list = await getJson(
      kubeConfig,
      `${base}?${new URLSearchParams({ labelSelector: releaseSelector(name) }).toString()}`,
      METADATA_LIST_ACCEPT,
    );
    const revisions = (isRecord(list) && Array.isArray(list.items) ? list.items : [])
      .flatMap((item) => storedRevisionOf(item) ?? [])
      .map((stored) => stored.version);
    if (revisions.length === 0) continue;
    const chosen = chooseRevision(revisions, revision);
    if (chosen === undefined) return undefined;
    const objectName = releaseObjectName(name, chosen);
    const object = await getJson(kubeConfig, `${base}/${encodeURIComponent(objectName)}`);
    if (object === undefined) return undefined;
    // The decoder tells a Secret's doubled base64 by the kind: the one asked for, whatever the answer says.
    const release = releaseFromStorage(isRecord(object) ? { ...object, kind } : object);
    return { release, storedIn: `${kind} ${namespace}/${objectName}` };
  }
  return undefined;
}

/** client-go's pager size (tools/pager defaultPageSize). */
const PAGE_SIZE = 500;

/** Every item of a list, page by page (`limit`, `continue`). */
async function listAll(kubeConfig: KubeConfig, path: string, query: Record<string, string>, accept: string) {
  const items: Record<string, unknown>[] = [];
  let continueToken: string | undefined;
  do {
    const search = new URLSearchParams({ ...query, limit: String(PAGE_SIZE) });
    if (continueToken !== undefined) search.set('continue', continueToken);
    const page = await getJson(kubeConfig, `${path}?${search.toString()}`, accept);
    if (!isRecord(page)) break;
    if (Array.isArray(page.items)) items.push(...page.items.filter(isRecord));
    const token = isRecord(page.metadata) ? page.metadata.continue : undefined;
    continueToken = typeof token === 'string' && token !== '' ? token : undefined;
  } while (continueToken !== undefined);
  return items;
}

/**
 * Every release revision stored in Secrets in the cluster (Helm's default driver), from their labels alone: what
 * `why -A` picks the failed and pending releases from. ConfigMap records are not listed: every ConfigMap of the
 * cluster would be scanned for the few Helm wrote.
 */
export async function listStoredRevisions(kubeConfig: KubeConfig): Promise<StoredRevision[]> {
  const items = await listAll(kubeConfig, '/api/v1/secrets', { labelSelector: 'owner=helm' }, METADATA_LIST_ACCEPT);
  return items.flatMap((item) => storedRevisionOf(item) ?? []);
}

/** Every Flux HelmRelease (helm.toolkit.fluxcd.io/v2) in the cluster; none where Flux is not installed (404). */
export function listHelmReleases(kubeConfig: KubeConfig): Promise<Record<string, unknown>[]> {
  return listAll(kubeConfig, '/apis/helm.toolkit.fluxcd.io/v2/helmreleases', {}, 'application/json');
}
