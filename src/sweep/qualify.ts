// Pure: what the sweep's profiles share (ages, finished states, a finalizer taken out of a list), and the `argocd-hook`
// profile's judgement: does a hook Job or Pod hold Argo CD's hook finalizer that nothing will remove?
import { ARGOCD_HOOK, ARGOCD_HOOK_FINALIZER, HELM_HOOK } from '../core/annotations.js';
import { annotation, finalizersOf, isRecord, metadataOf } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';

export type SweptKind = 'Job' | 'Pod';

export type Qualification =
  | { qualifies: true; reasons: string[]; ageSeconds: number }
  | { qualifies: false; reason: string; ageSeconds?: number };

/** 75 → "1m15s": ages as people read them. */
export function formatAge(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const rest = whole % 60;
  return hours > 0 ? `${hours}h${minutes}m${rest}s` : minutes > 0 ? `${minutes}m${rest}s` : `${rest}s`;
}

/** Complete or Failed for a Job (its conditions), Succeeded or Failed for a Pod (its phase); undefined while it runs. */
export function finishedAs(kind: SweptKind, object: KubeObject): string | undefined {
  const status = isRecord(object.status) ? object.status : {};
  if (kind === 'Pod')
    return status.phase === 'Succeeded' || status.phase === 'Failed' ? `Pod ${status.phase}` : undefined;
  const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isRecord) : [];
  const final = conditions.find(
    (condition) => (condition.type === 'Complete' || condition.type === 'Failed') && condition.status === 'True',
  );
  return final ? `Job ${String(final.type)}` : undefined;
}

/**
 * How long the object has been deleting, in whole seconds (0 for a deletion timestamp in the future: clock skew), or
 * undefined when it is not being deleted (no deletionTimestamp, or one that is no date).
 */
export function deletingForSeconds(object: KubeObject, now: Date): number | undefined {
  const timestamp = metadataOf(object)?.deletionTimestamp;
  const deletion = typeof timestamp === 'string' ? Date.parse(timestamp) : Number.NaN;
  return Number.isNaN(deletion) ? undefined : Math.max(0, Math.floor((now.getTime() - deletion) / 1000));
}

/** The finalizers once `finalizer` is gone, every other one kept in order. */
export function withoutFinalizer(finalizers: readonly string[], finalizer: string): string[] {
  return finalizers.filter((other) => other !== finalizer);
}

/**
 * The `argocd-hook` profile. A stuck hook: being deleted, still holding `argocd.argoproj.io/hook-finalizer`, a hook,
 * and either finished or deleted longer than minAgeSeconds ago, so Argo CD, which removes the finalizer once it has
 * seen the result, will not. Anything else is left alone, with the reason.
 */
export function qualifyHook(kind: SweptKind, object: KubeObject, now: Date, minAgeSeconds: number): Qualification {
  const ageSeconds = deletingForSeconds(object, now);
  if (ageSeconds === undefined) return { qualifies: false, reason: 'not being deleted' };
  if (!finalizersOf(object).includes(ARGOCD_HOOK_FINALIZER))
    return { qualifies: false, reason: `no ${ARGOCD_HOOK_FINALIZER}`, ageSeconds };
  const argocdPhases = annotation(object, ARGOCD_HOOK);
  const helmPhases = annotation(object, HELM_HOOK);
  if (argocdPhases === undefined && helmPhases === undefined)
    return { qualifies: false, reason: 'not a hook: no Argo CD or Helm hook annotation', ageSeconds };

  const hook = argocdPhases !== undefined ? `Argo CD ${argocdPhases} hook` : `Helm ${helmPhases} hook`;
  const deleting = `deleting for ${formatAge(ageSeconds)}`;
  const finished = finishedAs(kind, object);
  if (finished !== undefined) return { qualifies: true, reasons: [hook, finished, deleting], ageSeconds };
  if (ageSeconds >= minAgeSeconds)
    return {
      qualifies: true,
      reasons: [hook, 'not finished', `${deleting}, at least ${formatAge(minAgeSeconds)}`],
      ageSeconds,
    };
  return {
    qualifies: false,
    reason: `still running and ${deleting}, under ${formatAge(minAgeSeconds)}: Argo CD may still remove it`,
    ageSeconds,
  };
}
