// Decoding a Helm release record from its storage object, exactly as Helm does (helm v3.21.4 and v4.2.4
// pkg/storage/driver/util.go decodeRelease): `data.release` is base64 (StdEncoding) of gzip of the release's JSON,
// or of the JSON itself for records older than compression (no gzip magic 1f 8b 08). A Secret's data is base64 once
// more on the wire (Kubernetes' []byte), a ConfigMap's is not. Hostile input: the inflated size is capped.
import { gunzipSync } from 'node:zlib';
import { readHelmRelease, type HelmRelease } from '../core/release.js';
import { isRecord } from '../core/objects.js';
import { InputError } from '../errors.js';

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
