// The API calls of self-managed certificates: the Secret (GET, create, PUT with its resourceVersion) and the caBundle
// of every webhook in hookguard's Mutating- and ValidatingWebhookConfiguration with the record of the CAs hookguard
// made (src/tls/trust.ts), in one JSON patch that first tests the resourceVersion it was computed from, so a
// concurrent change makes it fail and the next round reads again. What is read is cut to MAX_PEM_BYTES per value.
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type KubeConfig,
  type V1Secret,
} from '@kubernetes/client-node';
import { abortWith } from '../kube/abort.js';
import { apiFailure } from '../kube/api-failure.js';
import { SECRET_KEYS, type CertificateData } from './authority.js';
import { capped, MAX_PEM_BYTES } from './pem.js';
import { TRUST_ANNOTATION } from './trust.js';

export interface StoredCertificates {
  data: CertificateData;
  resourceVersion: string;
}

export type WebhookKind = 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';
export const WEBHOOK_KINDS: readonly WebhookKind[] = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];

export interface WebhookCaBundles {
  resourceVersion: string;
  /** Each webhook's clientConfig.caBundle, decoded (at most MAX_PEM_BYTES), in order; undefined where it has none. */
  caBundles: (string | undefined)[];
  /** The TRUST_ANNOTATION's value; undefined when there is none. */
  trustRecord: string | undefined;
  /** Whether metadata.annotations exists (a JSON patch adds a key only to an object that exists). */
  hasAnnotations: boolean;
}

export interface CertificateApi {
  /** undefined when the Secret does not exist (404). */
  getSecret(signal: AbortSignal): Promise<StoredCertificates | undefined>;
  /** Creates the Secret, or replaces the one read at `resourceVersion` (409 if it changed since); its new version. */
  writeSecret(data: CertificateData, resourceVersion: string | undefined, signal: AbortSignal): Promise<string>;
  /** undefined when the configuration does not exist (404). */
  getWebhooks(kind: WebhookKind, signal: AbortSignal): Promise<WebhookCaBundles | undefined>;
  /**
   * Sets every webhook's caBundle to `caBundle` (PEM) and the TRUST_ANNOTATION to `trustRecord`, if the
   * configuration is still at `current.resourceVersion`; its new resourceVersion.
   */
  setCaBundles(
    kind: WebhookKind,
    current: WebhookCaBundles,
    caBundle: string,
    trustRecord: string,
    signal: AbortSignal,
  ): Promise<string>;
  /** Sets only the TRUST_ANNOTATION, the caBundles left as they are, on the same condition; its new resourceVersion. */
  setTrustRecord(
    kind: WebhookKind,
    current: WebhookCaBundles,
    trustRecord: string,
    signal: AbortSignal,
  ): Promise<string>;
  /** `namespace/name` of the Secret, for log lines. */
  describe(): string;
}

/** base64 to text, reading no more of a huge value than MAX_PEM_BYTES needs. */
const fromBase64 = (value: string): string =>
  capped(Buffer.from(value.slice(0, Math.ceil(MAX_PEM_BYTES / 3) * 4), 'base64').toString('utf8'));

/** The manager the API server records for hookguard's writes (managedFields); else client-node's user agent, node-fetch. */
const FIELD_MANAGER = 'hookguard';

const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

function decoded(secret: V1Secret): CertificateData {
  const data: CertificateData = {};
  for (const key of Object.values(SECRET_KEYS)) {
    const value = secret.data?.[key];
    if (value !== undefined) data[key] = capped(fromBase64(value));
  }
  return data;
}

export function kubeCertificateApi(
  kubeConfig: KubeConfig,
  names: { namespace: string; secretName: string; webhookName: string },
): CertificateApi {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const { namespace, secretName: name, webhookName } = names;
  const absentOn404 = <T>(call: Promise<T>): Promise<T | undefined> =>
    call.catch((error: unknown) => {
      if (apiFailure(error).status === 404) return undefined;
      throw error;
    });
  // A JSON patch, cancellable: client-node would send a merge patch's content type otherwise.
  const jsonPatch = (signal: AbortSignal): ConfigurationOptions => ({
    middleware: [...(abortWith(signal).middleware ?? []), ...(JSON_PATCH.middleware ?? [])],
    middlewareMergeStrategy: 'append',
  });
  return {
    describe: () => `${namespace}/${name}`,
    async getSecret(signal) {
      const secret = await absentOn404(core.readNamespacedSecret({ name, namespace }, abortWith(signal)));
      if (secret === undefined) return undefined;
      return { data: decoded(secret), resourceVersion: secret.metadata?.resourceVersion ?? '' };
    },
    async writeSecret(data, resourceVersion, signal) {
      const body: V1Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name,
          namespace,
          labels: { 'app.kubernetes.io/name': 'hookguard', 'app.kubernetes.io/component': 'certificates' },
          ...(resourceVersion === undefined ? {} : { resourceVersion }),
        },
        type: 'kubernetes.io/tls',
        data: Object.fromEntries(
          Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'utf8').toString('base64')]),
        ),
      };
      const written =
        resourceVersion === undefined
          ? await core.createNamespacedSecret({ namespace, body, fieldManager: FIELD_MANAGER }, abortWith(signal))
          : await core.replaceNamespacedSecret(
              { name, namespace, body, fieldManager: FIELD_MANAGER },
              abortWith(signal),
            );
      return written.metadata?.resourceVersion ?? '';
    },
    async getWebhooks(kind, signal) {
      const read =
        kind === 'MutatingWebhookConfiguration'
          ? admission.readMutatingWebhookConfiguration({ name: webhookName }, abortWith(signal))
          : admission.readValidatingWebhookConfiguration({ name: webhookName }, abortWith(signal));
      const configuration = await absentOn404<{
        metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
        webhooks?: { clientConfig: { caBundle?: string } }[];
      }>(read);
      if (configuration === undefined) return undefined;
      const { metadata } = configuration;
      return {
        resourceVersion: metadata?.resourceVersion ?? '',
        caBundles: (configuration.webhooks ?? []).map((webhook) => {
          const bundle = webhook.clientConfig.caBundle;
          return bundle === undefined ? undefined : fromBase64(bundle);
        }),
        trustRecord: metadata?.annotations?.[TRUST_ANNOTATION],
        hasAnnotations: metadata?.annotations !== undefined,
      };
    },
    setCaBundles: (kind, current, caBundle, trustRecord, signal) =>
      patchConfiguration(kind, current, trustRecord, caBundle, signal),
    setTrustRecord: (kind, current, trustRecord, signal) =>
      patchConfiguration(kind, current, trustRecord, undefined, signal),
  };

  /** The record, and every webhook's caBundle unless `caBundle` is undefined, in one JSON patch. */
  async function patchConfiguration(
    kind: WebhookKind,
    current: WebhookCaBundles,
    trustRecord: string,
    caBundle: string | undefined,
    signal: AbortSignal,
  ): Promise<string> {
    const encoded = caBundle === undefined ? undefined : Buffer.from(caBundle, 'utf8').toString('base64');
    const body = [
      { op: 'test', path: '/metadata/resourceVersion', value: current.resourceVersion },
      ...(current.hasAnnotations ? [] : [{ op: 'add', path: '/metadata/annotations', value: {} }]),
      { op: 'add', path: `/metadata/annotations/${TRUST_ANNOTATION.replace('/', '~1')}`, value: trustRecord },
      ...(encoded === undefined
        ? []
        : current.caBundles.map((_bundle, index) => ({
            op: 'add',
            path: `/webhooks/${index}/clientConfig/caBundle`,
            value: encoded,
          }))),
    ];
    const request = { name: webhookName, body, fieldManager: FIELD_MANAGER };
    const patched =
      kind === 'MutatingWebhookConfiguration'
        ? await admission.patchMutatingWebhookConfiguration(request, jsonPatch(signal))
        : await admission.patchValidatingWebhookConfiguration(request, jsonPatch(signal));
    return patched.metadata?.resourceVersion ?? '';
  }
}
