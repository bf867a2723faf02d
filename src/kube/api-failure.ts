// One reading of what went wrong talking to the API server, whatever client-node threw.
import { ApiException } from '@kubernetes/client-node';
import { isRecord } from '../core/objects.js';
import type { ApiFailure } from '../errors.js';

function parsedBody(body: unknown): Record<string, unknown> | undefined {
  if (isRecord(body)) return body;
  if (typeof body !== 'string') return undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export function apiFailure(error: unknown): ApiFailure {
  if (error instanceof ApiException) {
    const body = parsedBody(error.body);
    const details = isRecord(body?.details) ? body.details : {};
    const header = (error.headers as Record<string, string | undefined> | undefined)?.['retry-after'];
    const fromHeader = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
    const fromDetails = typeof details.retryAfterSeconds === 'number' ? details.retryAfterSeconds : undefined;
    const message = typeof body?.message === 'string' ? body.message : `HTTP ${error.code}`;
    return { status: error.code, message, retryAfterSeconds: fromHeader ?? fromDetails };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: undefined, message, retryAfterSeconds: undefined };
}

/**
 * One line for a log field or /readyz: `HTTP 503: <the Status message>` for an answer, the error's message for none.
 * (An ApiException's own message holds the whole body and every response header, over several lines.)
 */
export function apiFailureText(error: unknown): string {
  const failure = apiFailure(error);
  if (failure.status === undefined || failure.message.startsWith(`HTTP ${failure.status}`)) return failure.message;
  return `HTTP ${failure.status}: ${failure.message}`;
}

/**
 * A create the API server refused because its namespace is being deleted: 403 with the cause NamespaceTerminating
 * (k8s.io/apiserver v0.37.2 pkg/admission/plugin/namespace/lifecycle/admission.go), not a grant RBAC lacks.
 */
export function namespaceTerminating(error: unknown): boolean {
  if (!(error instanceof ApiException) || error.code !== 403) return false;
  const details = parsedBody(error.body)?.details;
  const causes = isRecord(details) && Array.isArray(details.causes) ? details.causes : [];
  return causes.some((cause) => isRecord(cause) && cause.reason === 'NamespaceTerminating');
}

/** Worth another try: throttled, a server-side failure, or no answer at all. */
export function isTransient(failure: ApiFailure): boolean {
  return failure.status === undefined || failure.status === 429 || failure.status >= 500;
}
