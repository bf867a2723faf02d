import { isRecord } from '../core/objects.js';
import type { AdmissionRequest } from '../core/types.js';

export type ReviewParse = { ok: true; request: AdmissionRequest } | { ok: false; message: string };

/** Checks the envelope; the object inside is the core's to judge, defensively. */
export function parseAdmissionReview(body: unknown): ReviewParse {
  if (!isRecord(body)) return { ok: false, message: 'expected an AdmissionReview JSON object' };
  if (body.kind !== 'AdmissionReview') return { ok: false, message: `expected kind AdmissionReview, got ${JSON.stringify(body.kind ?? null)}` };
  if (body.apiVersion !== 'admission.k8s.io/v1') {
    return { ok: false, message: `expected apiVersion admission.k8s.io/v1, got ${JSON.stringify(body.apiVersion ?? null)}` };
  }
  const request = body.request;
  if (!isRecord(request)) return { ok: false, message: 'AdmissionReview has no request object' };
  if (typeof request.uid !== 'string' || request.uid === '') return { ok: false, message: 'AdmissionReview request.uid must be a non-empty string' };
  return { ok: true, request: request as unknown as AdmissionRequest };
}
