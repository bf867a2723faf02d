// Every AdmissionReview answer is built here, and every one carries the request's uid.
import type { Decision } from '../core/decide.js';
import type { Operation } from '../core/types.js';
import { truncate, MAX_WARNING_CHARS } from '../core/warnings.js';

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
  status?: { code: number; reason: string; message: string };
}

export interface AdmissionReviewResponse {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

function review(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

// No warnings means no key at all (JSON drops an undefined one), not an empty list.
const someOrNone = (warnings: string[]) => (warnings.length > 0 ? warnings : undefined);

export function allowed(uid: string, warnings: string[] = []): AdmissionReviewResponse {
  return review({ uid, allowed: true, warnings: someOrNone(warnings) });
}

export function denied(uid: string, message: string, warnings: string[] = []): AdmissionReviewResponse {
  return review({
    uid,
    allowed: false,
    warnings: someOrNone(warnings),
    status: { code: 403, reason: 'Forbidden', message },
  });
}

export function patched(uid: string, patch: readonly Operation[], warnings: string[] = []): AdmissionReviewResponse {
  const encoded = Buffer.from(JSON.stringify(patch)).toString('base64');
  return review({ uid, allowed: true, patchType: 'JSONPatch', patch: encoded, warnings: someOrNone(warnings) });
}

/** A failure inside hookguard never blocks the cluster: the request goes through unchanged, and says so. */
export function errored(uid: string, error: unknown): AdmissionReviewResponse {
  return allowed(uid, [
    truncate(`hookguard internal error, request allowed unchanged: ${failureText(error)}`, MAX_WARNING_CHARS),
  ]);
}

/** What was thrown, as text, whatever it is: the answer to a failure must not fail in turn. */
function failureText(error: unknown): string {
  try {
    return String(error instanceof Error ? error.message : error);
  } catch {
    // An object with no prototype, or a toString or message getter that throws.
    return 'a value that cannot be shown';
  }
}

export function fromDecision(uid: string, decision: Decision): AdmissionReviewResponse {
  if (!decision.allowed) return denied(uid, decision.denial ?? 'denied by hookguard', decision.warnings);
  if (decision.patch.length > 0) return patched(uid, decision.patch, decision.warnings);
  return allowed(uid, decision.warnings);
}
