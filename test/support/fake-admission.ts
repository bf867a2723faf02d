// The admission part of the stand-in API server (fake-apiserver.ts): what kube-apiserver does with a CREATE of a
// Job or Pod when hookguard's two webhooks are registered (k8s.io/apiserver v0.36.2: endpoints/handlers/create.go
// runs mutating admission on the object as sent, with no name yet when it has a generateName; the store then
// generates the name and runs validating admission; webhook/mutating/dispatcher.go applies a JSON patch and, with
// failurePolicy Ignore, fails open on any error calling the webhook, silently for the client; a denial becomes
// `admission webhook "<name>" denied the request: <message>` (403); warnings are collected for Warning headers).
// It calls the webhook over real TLS, trusting only the configured caBundle, as the API server does.
import { randomUUID } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { Ajv } from 'ajv';
import { applyPatch, type Operation } from '../../src/core/json-patch.js';
import { admissionReview } from './reviews.js';

type Json = Record<string, unknown>;

/** Where the webhooks are served, and the CA the API server trusts for them (the webhooks' caBundle). */
export interface WebhookEndpoint {
  /** https://127.0.0.1:PORT */
  url: string;
  caBundle: string;
}

export interface Admission {
  /**
   * Asked at each call, as the API server asks the Service for an endpoint; the caBundle is the one the named
   * webhook's configuration holds (the Mutating- and ValidatingWebhookConfiguration each have their own).
   */
  endpoint(webhook: WebhookCall['webhook']): WebhookEndpoint;
  /** The webhooks' timeoutSeconds, in ms (5 s by default: the chart's webhook.timeoutSeconds). */
  timeoutMs?: number;
}

export interface WebhookCall {
  webhook: 'mutate.hookguard.io' | 'validate.hookguard.io';
  /** `called`: it answered; `failed open`: the call failed and failurePolicy Ignore let the object through. */
  outcome: 'called' | 'failed open';
  error?: string;
}

export interface AdmissionResult {
  object: unknown;
  warnings: string[];
  denied?: string;
  calls: WebhookCall[];
}

interface AdmissionRequestOf {
  resource: { kind: string };
  namespace: string;
  user: string;
  object: Json;
  dryRun: boolean;
  /** The store's BeforeCreate: names an object that has only a generateName. */
  generateName(object: never): void;
}

interface ReviewResponse {
  allowed?: boolean;
  patch?: string;
  patchType?: string;
  warnings?: string[];
  status?: { message?: string };
}

function post(endpoint: WebhookEndpoint, path: string, body: Json, timeoutMs: number): Promise<ReviewResponse> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, endpoint.url);
    const payload = JSON.stringify(body);
    const call = httpsRequest(
      url,
      {
        method: 'POST',
        ca: endpoint.caBundle,
        agent: false,
        timeout: timeoutMs,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        response.on('end', () => {
          if (response.statusCode !== 200) return reject(new Error(`HTTP ${response.statusCode}: ${text}`));
          try {
            const parsed = JSON.parse(text) as { response?: ReviewResponse };
            resolve(parsed.response ?? {});
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
      },
    );
    call.on('timeout', () => call.destroy(new Error(`context deadline exceeded (timeout ${timeoutMs} ms)`)));
    call.on('error', reject);
    call.end(payload);
  });
}

function review(request: AdmissionRequestOf): Json {
  const built = admissionReview({
    uid: randomUUID(),
    operation: 'CREATE',
    object: request.object,
    username: request.user,
    namespace: request.namespace,
    dryRun: request.dryRun,
  });
  const inner = built.request as Json;
  inner.options = { ...(inner.options as Json), ...(request.dryRun ? { dryRun: ['All'] } : {}) };
  return built;
}

/** Mutating webhook, name generation, validating webhook: what a CREATE of a Job or Pod goes through. */
export async function admit(admission: Admission, request: AdmissionRequestOf): Promise<AdmissionResult> {
  const timeoutMs = admission.timeoutMs ?? 5000;
  const calls: WebhookCall[] = [];
  const warnings: string[] = [];
  let object = structuredClone(request.object);
  const hooks = [
    { webhook: 'mutate.hookguard.io', path: '/mutate' },
    { webhook: 'validate.hookguard.io', path: '/validate' },
  ] as const;
  for (const { webhook, path } of hooks) {
    if (path === '/validate') request.generateName(object as never);
    let answer: ReviewResponse;
    try {
      answer = await post(admission.endpoint(webhook), path, review({ ...request, object }), timeoutMs);
    } catch (error) {
      // failurePolicy Ignore: the API server logs "failed calling webhook, failing open" and goes on.
      calls.push({ webhook, outcome: 'failed open', error: (error as Error).message });
      continue;
    }
    calls.push({ webhook, outcome: 'called' });
    warnings.push(...(answer.warnings ?? []));
    if (answer.allowed !== true)
      return {
        object,
        warnings,
        calls,
        denied: `admission webhook "${webhook}" denied the request: ${answer.status?.message ?? ''}`,
      };
    if (answer.patch !== undefined && path === '/mutate') {
      const patch = JSON.parse(Buffer.from(answer.patch, 'base64').toString('utf8')) as Operation[];
      object = applyPatch(structuredClone(object), patch, true, false).newDocument;
    }
  }
  return { object, warnings, calls };
}

/**
 * The errors of an object against a CRD's openAPIV3Schema (JSON Schema with OpenAPI's and Kubernetes' own
 * keywords, which only annotate here), as `<path>: <message>`.
 */
export function schemaValidator(schema: Json): (object: unknown) => string[] {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const validate = ajv.compile(schema);
  return (object) =>
    validate(object)
      ? []
      : (validate.errors ?? []).map((error) => `${error.instancePath || '/'}: ${error.message ?? error.keyword}`);
}
