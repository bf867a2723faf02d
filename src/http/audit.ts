import { computedPatch, type Decision } from '../core/decide.js';
import { isRecord, metadataOf } from '../core/objects.js';
import type { AdmissionRequest, Endpoint, KubeObject } from '../core/types.js';

/** The one audit log line every admission decision writes. */
export function auditRecord(
  request: AdmissionRequest,
  endpoint: Endpoint,
  decision: Decision | undefined,
  durationMs: number,
  // Wrapped, because a rule may throw anything, undefined included.
  failure?: { error: unknown },
) {
  const object = (
    isRecord(request.object) ? request.object : isRecord(request.oldObject) ? request.oldObject : {}
  ) as KubeObject;
  const metadata = metadataOf(object);
  // One literal with every key (JSON leaves out the undefined ones): conditional spreads cost a lot per request.
  return {
    uid: request.uid,
    endpoint,
    operation: request.operation,
    kind: request.kind?.kind ?? object.kind,
    namespace: request.namespace ?? metadata?.namespace,
    name: request.name ?? metadata?.name ?? metadata?.generateName,
    user: request.userInfo?.username,
    dryRun: request.dryRun === true,
    mode: decision?.mode,
    argocdVersion: decision?.argocdVersion ?? null,
    argocdVersionFrom: decision?.argocdVersionFrom,
    hook: decision?.hook,
    optOuts: decision?.optOuts,
    rules: decision?.rules ?? [],
    patch: decision ? computedPatch(decision) : [],
    patchApplied: (decision?.patch.length ?? 0) > 0,
    allowed: decision?.allowed ?? true,
    reason: failure ? 'internal error, allowed unchanged' : decision?.reason,
    denial: decision?.denial,
    findings: decision?.findings ?? [],
    error: failure ? (failure.error instanceof Error ? failure.error.message : String(failure.error)) : undefined,
    durationMs: Math.round(durationMs * 1000) / 1000,
  };
}
