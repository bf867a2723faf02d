import { isRecord } from '../core/objects.js';
import type { AdmissionRequest } from '../core/types.js';

export type ReviewParse = { ok: true; request: AdmissionRequest } | { ok: false; message: string };

/** Checks the envelope; the object inside is the core's to judge, defensively. */
export function parseAdmissionReview(body: unknown): ReviewParse {
  if (!isRecord(body)) return { ok: false, message: 'expected an AdmissionReview JSON object' };
  if (body.kind !== 'AdmissionReview')
    return { ok: false, message: `expected kind AdmissionReview, got ${describeValue(body.kind)}` };
  if (body.apiVersion !== 'admission.k8s.io/v1') {
    return { ok: false, message: `expected apiVersion admission.k8s.io/v1, got ${describeValue(body.apiVersion)}` };
  }
  const request = body.request;
  if (!isRecord(request)) return { ok: false, message: 'AdmissionReview has no request object' };
  if (typeof request.uid !== 'string' || request.uid === '')
    return { ok: false, message: 'AdmissionReview request.uid must be a non-empty string' };
  return { ok: true, request: request as unknown as AdmissionRequest };
}

const MAX_QUOTED_CHARS = 100;

/** A wrong value named in an error: scalars quoted (cut short), structures by their type, whatever their size or depth. */
function describeValue(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  const quoted = JSON.stringify(value);
  return quoted.length > MAX_QUOTED_CHARS ? `${quoted.slice(0, MAX_QUOTED_CHARS)}…` : quoted;
}
