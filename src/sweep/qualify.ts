// Pure: what the sweep's profiles share (ages, finished states, a finalizer taken out of a list), and the `argocd-hook`
// profile's judgement: does a hook Job or Pod hold Argo CD's hook finalizer that nothing will remove?
import { ARGOCD_HOOK, ARGOCD_HOOK_FINALIZER, ARGOCD_TRACKING_ID, HELM_HOOK } from '../core/annotations.js';
import { annotation, conditionTrue, finalizersOf, isRecord, metadataOf } from '../core/objects.js';
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
  if (kind === 'Pod') {
    const status = isRecord(object.status) ? object.status : {};
    return status.phase === 'Succeeded' || status.phase === 'Failed' ? `Pod ${status.phase}` : undefined;
  }
  const final = conditionTrue(object, ['Complete', 'Failed']);
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

export interface HookTiming {
  /** An unfinished hook qualifies once deleting this long. */
  minAgeSeconds: number;
  /**
   * A finished hook qualifies only once deleting this long: its deletion may have begun (its TTL, hookguard's floor)
   * before a busy or restarting application controller recorded its result, and a running task whose object vanished
   * loses it: before Argo CD 3.4.0 the task never completes and the sync waits forever (argo-cd#21055); from 3.4.0 the
   * sync fails, "Resource … is missing, it might have been deleted" (argo-cd#26286; v3.4.0 gitops-engine
   * sync_context.go Sync).
   */
  finishedGraceSeconds: number;
}

/**
 * The `argocd-hook` profile, from the object alone. A stuck hook: being deleted, still holding
 * `argocd.argoproj.io/hook-finalizer`, a hook, and either finished and deleted at least finishedGraceSeconds ago, or
 * deleted at least minAgeSeconds ago, so Argo CD, which removes the finalizer once it has seen the result, will not.
 * Anything else is left alone, with the reason. Where its Application can be read, judgeByApplications has the last
 * word.
 */
export function qualifyHook(kind: SweptKind, object: KubeObject, now: Date, timing: HookTiming): Qualification {
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
  const { minAgeSeconds, finishedGraceSeconds } = timing;
  if (finished !== undefined) {
    if (ageSeconds >= finishedGraceSeconds)
      return {
        qualifies: true,
        reasons: [hook, finished, `${deleting}, at least ${formatAge(finishedGraceSeconds)}`],
        ageSeconds,
      };
    return {
      qualifies: false,
      reason: `${finished} and ${deleting}, under ${formatAge(finishedGraceSeconds)}: Argo CD may not have recorded its result yet`,
      ageSeconds,
    };
  }
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

/** An Argo CD Application (argoproj.io/v1alpha1) by namespace and name. */
export interface ApplicationRef {
  namespace: string;
  name: string;
}

/** Where to look for a hook's Application: the label Argo CD tracks with (besides its tracking id annotation). */
export interface ApplicationLookup {
  /** Argo CD's instance label key (argocd-cm application.instanceLabelKey, by default app.kubernetes.io/instance). */
  instanceLabels: readonly string[];
  /** Where Argo CD keeps the Applications whose instance name names no namespace: its own namespace. */
  controlPlaneNamespaces: readonly string[];
}

/**
 * The Applications a hook may belong to. Argo CD marks what it applies with its instance name, in the tracking id
 * annotation (`<instance>:<group>/<kind>:<namespace>/<name>`) or the instance label (argo-cd v3.5.1
 * util/argo/resource_tracking.go BuildAppInstanceValue); the instance name is `<namespace>_<name>` for an Application
 * outside Argo CD's own namespace, else the bare name (util/argo/argo.go AppInstanceName). A label Helm set to its
 * release name names no Application, or one that does not list the hook: reading it costs a GET and decides nothing.
 */
export function applicationsOf(object: KubeObject, lookup: ApplicationLookup): ApplicationRef[] {
  const metadata = metadataOf(object);
  const instances = new Set<string>();
  const trackingId = annotation(object, ARGOCD_TRACKING_ID);
  if (trackingId !== undefined && trackingId.indexOf(':') > 0)
    instances.add(trackingId.slice(0, trackingId.indexOf(':')));
  const labels = isRecord(metadata?.labels) ? metadata.labels : {};
  for (const key of lookup.instanceLabels) {
    const value = labels[key];
    if (typeof value === 'string' && value !== '') instances.add(value);
  }
  const refs: ApplicationRef[] = [];
  for (const instance of instances) {
    const separator = instance.indexOf('_');
    if (separator > 0) refs.push({ namespace: instance.slice(0, separator), name: instance.slice(separator + 1) });
    else for (const namespace of lookup.controlPlaneNamespaces) refs.push({ namespace, name: instance });
  }
  return refs;
}

/** An Application as read: the object, null when there is none (404), or forbidden (403: RBAC does not allow it). */
export type ApplicationRead = { ref: ApplicationRef; application: KubeObject | null | 'forbidden' };

/** gitops-engine pkg/sync/common/types.go OperationPhase.Completed: the phases after which nothing is waited for. */
const COMPLETED_PHASES = ['Succeeded', 'Failed', 'Error'];
const GROUP_OF: Readonly<Record<SweptKind, string>> = { Job: 'batch', Pod: '' };

/**
 * Whether the Application's operation still waits for this hook: its phase is not completed (Running, or
 * Terminating) and its syncResult.resources lists the hook (group, kind, namespace, name) with a hookPhase that is
 * not completed either. gitops-engine (argo-cd v3.5.1 gitops-engine/pkg/sync/sync_context.go Sync) records a running
 * hook's result only while its live object exists, and removes the hook finalizer after it has recorded it.
 */
function waitingOperation(kind: SweptKind, object: KubeObject, application: KubeObject): string | undefined {
  const status = isRecord(application.status) ? application.status : {};
  const operation = isRecord(status.operationState) ? status.operationState : undefined;
  const phase = typeof operation?.phase === 'string' ? operation.phase : undefined;
  if (operation === undefined || phase === undefined || COMPLETED_PHASES.includes(phase)) return undefined;
  const metadata = metadataOf(object);
  const syncResult = isRecord(operation.syncResult) ? operation.syncResult : {};
  const resources = Array.isArray(syncResult.resources) ? syncResult.resources.filter(isRecord) : [];
  const listed = resources.find(
    (resource) =>
      resource.kind === kind &&
      (resource.group ?? '') === GROUP_OF[kind] &&
      resource.namespace === metadata?.namespace &&
      resource.name === metadata?.name,
  );
  if (listed === undefined) return undefined;
  const hookPhase = typeof listed.hookPhase === 'string' && listed.hookPhase !== '' ? listed.hookPhase : undefined;
  if (hookPhase !== undefined && COMPLETED_PHASES.includes(hookPhase)) return undefined;
  return `its ${phase} operation lists the hook as ${hookPhase ?? 'not started'}`;
}

/**
 * The last word on a hook that qualifies from the object alone, from its Applications as read: left alone while any
 * of them still waits for the hook's result; otherwise it qualifies, with what was read (an Application that is gone,
 * unreadable or done with the hook leaves the grace period as the only guard).
 */
export function judgeByApplications(
  kind: SweptKind,
  object: KubeObject,
  qualification: Qualification,
  reads: readonly ApplicationRead[],
): Qualification {
  if (!qualification.qualifies || reads.length === 0) return qualification;
  const seen: string[] = [];
  for (const { ref, application } of reads) {
    const name = `Application ${ref.namespace}/${ref.name}`;
    if (application === null) continue;
    if (application === 'forbidden') {
      seen.push(`${name} unreadable (403)`);
      continue;
    }
    const waiting = waitingOperation(kind, object, application);
    if (waiting !== undefined)
      return {
        qualifies: false,
        reason: `${name}: ${waiting}; Argo CD has not recorded its result`,
        ...(qualification.ageSeconds !== undefined ? { ageSeconds: qualification.ageSeconds } : {}),
      };
    seen.push(`${name} does not wait for it`);
  }
  const found =
    seen.length > 0
      ? seen
      : [`no Application found (${reads.map(({ ref }) => `${ref.namespace}/${ref.name}`).join(', ')})`];
  return { ...qualification, reasons: [...qualification.reasons, ...found] };
}
