// Pure: the HookGuard object's status conditions, following the Kubernetes API conventions (metav1.Condition:
// type, status True/False/Unknown, a CamelCase reason, a message, lastTransitionTime changed only when the status
// changes, observedGeneration). Ready is True only when every other condition is.
import { advisoryAffects, normalizeArgoVersion } from '../../core/argocd-version.js';
import { isRecord } from '../../core/objects.js';
import type { Advisory } from '../../core/types.js';
import type { DiscoveryStatus } from '../../discovery/discovery.js';
import type { FluxDiscoveryStatus } from '../../discovery/helm-controllers.js';
import type { ProbeVerdict } from './probe.js';

export type ConditionType = 'WebhookCalled' | 'CertificateValid' | 'ArgoCDKnown' | 'Ready' | 'HelmControllerKnown';
export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** What a condition says now, before it is merged with what the object held. */
export interface Observation {
  type: ConditionType;
  status: ConditionStatus;
  reason: string;
  message: string;
}

export interface Condition extends Observation {
  lastTransitionTime: string;
  observedGeneration: number;
}

export interface Transition {
  type: ConditionType;
  from: ConditionStatus | undefined;
  to: ConditionStatus;
  reason: string;
  message: string;
}

const DAY_MS = 86_400_000;

/**
 * The last self-test's outcome: True only when the API server called both webhooks, False naming the one it did not
 * call (or NotCalled for neither); an API call that failed says nothing about the webhooks (Unknown).
 */
export function webhookCalled(verdict: ProbeVerdict): Observation {
  const status = verdict.outcome === 'Called' ? 'True' : verdict.outcome === 'NotCalled' ? 'False' : 'Unknown';
  return { type: 'WebhookCalled', status, reason: verdict.reason, message: verdict.message };
}

/** False from `warningDays` before the serving certificate expires, with the date. */
export function certificateValid(notAfterMs: number, nowMs: number, warningDays: number): Observation {
  const date = new Date(notAfterMs).toISOString();
  if (notAfterMs <= nowMs)
    return {
      type: 'CertificateValid',
      status: 'False',
      reason: 'Expired',
      message: `the serving certificate expired at ${date}: renew it (certificates.mode self: hookguard renews it, look at its log; cert-manager: the Certificate hookguard-serving; secret: replace the Secret, e.g. with certs/hookguard-certs.sh)`,
    };
  const days = Math.floor((notAfterMs - nowMs) / DAY_MS);
  if (notAfterMs - nowMs <= warningDays * DAY_MS)
    return {
      type: 'CertificateValid',
      status: 'False',
      reason: 'ExpiresSoon',
      message: `the serving certificate expires at ${date}, in ${days} days (within selfTest.certificateWarningDays, ${warningDays}): renew it`,
    };
  return {
    type: 'CertificateValid',
    status: 'True',
    reason: 'Valid',
    message: `the serving certificate is valid until ${date} (${days} days)`,
  };
}

/**
 * Which Argo CD versions hookguard decides with: the pinned one, or those discovery found (none found is an
 * answer too: no Argo CD runs here). False while discovery is off, has not listed yet, or knows an instance
 * whose version it cannot tell.
 */
export function argoCdKnown(pinned: string | null, discovery: DiscoveryStatus): Observation {
  const type = 'ArgoCDKnown';
  if (pinned !== null)
    return { type, status: 'True', reason: 'Pinned', message: `argocd.version pins Argo CD ${pinned} for every hook` };
  if (!discovery.enabled)
    return {
      type,
      status: 'False',
      reason: 'DiscoveryOff',
      message: `Argo CD discovery is off (${discovery.reason}): hooks Argo CD applies get mutations only; set argocd.version`,
    };
  if (!discovery.synced)
    return {
      type,
      status: 'False',
      reason: 'NotSynced',
      message: `Argo CD discovery has not listed the controllers yet${discovery.lastError ? `: ${discovery.lastError}` : ''}`,
    };
  const instances = discovery.instances;
  if (instances.length === 0)
    return {
      type,
      status: 'True',
      reason: 'NoneFound',
      message:
        'no Argo CD application controller in the cluster: hooks are judged without an Argo CD version (set argocd.version if Argo CD deploys here from another cluster)',
    };
  const listed = instances.map((instance) => `${instance.namespace}: ${instance.version ?? 'unknown'}`).join(', ');
  const unknown = instances.filter((instance) => instance.version === null);
  if (unknown.length > 0)
    return {
      type,
      status: 'False',
      reason: 'VersionUnknown',
      message: `Argo CD ${listed}; unknown: ${unknown.map((instance) => `${instance.namespace} (${instance.source})`).join('; ')}`,
    };
  return { type, status: 'True', reason: 'Discovered', message: `Argo CD ${listed}` };
}

/**
 * Which Flux helm-controllers hookguard knows of (the configured one, or those discovery found), each with its
 * version: the rule flux-hook-output-crash warns by them. Informational: not part of Ready, since Flux is optional
 * and an unknown version only makes hookguard warn more.
 */
export function helmControllerKnown(flux: FluxDiscoveryStatus): Observation {
  const type = 'HelmControllerKnown';
  const listed = flux.helmControllers
    .map((controller) =>
      controller.name === ''
        ? `${controller.version} (${controller.source})`
        : `${controller.namespace}/${controller.name}: ${controller.version ?? `unknown (${controller.source})`}`,
    )
    .join(', ');
  if (!flux.enabled)
    return flux.helmControllers.length > 0
      ? { type, status: 'True', reason: 'Pinned', message: `Flux helm-controller ${listed}` }
      : {
          type,
          status: 'False',
          reason: 'DiscoveryOff',
          message: `Flux helm-controller discovery is off (${flux.reason}): set flux.helmControllerVersion if Flux deploys here`,
        };
  if (!flux.synced)
    return {
      type,
      status: 'False',
      reason: 'NotSynced',
      message: `Flux helm-controller discovery has not listed the Deployments yet${flux.lastError ? `: ${flux.lastError}` : ''}`,
    };
  if (flux.helmControllers.length === 0)
    return {
      type,
      status: 'True',
      reason: 'NoneFound',
      message: 'no Flux helm-controller in the namespaces looked in',
    };
  if (flux.helmControllers.some((controller) => controller.version === null))
    return { type, status: 'False', reason: 'VersionUnknown', message: `Flux helm-controller ${listed}` };
  return { type, status: 'True', reason: 'Discovered', message: `Flux helm-controller ${listed}` };
}

/** True only when every other condition is; otherwise the first that is not, by its reason. */
export function ready(others: readonly Observation[]): Observation {
  const failing = others.filter((observation) => observation.status !== 'True');
  if (failing.length === 0)
    return {
      type: 'Ready',
      status: 'True',
      reason: 'Ready',
      message: 'both webhooks are called, the certificate is valid and the Argo CD versions are known',
    };
  return {
    type: 'Ready',
    status: 'False',
    reason: failing[0]!.reason,
    message: failing
      .map((observation) => `${observation.type}=${observation.status} (${observation.reason}): ${observation.message}`)
      .join('; '),
  };
}

/** Conditions as an object holds them, read defensively: anything malformed counts as absent. */
export function conditionsOf(status: unknown): Condition[] {
  const conditions = isRecord(status) ? status.conditions : undefined;
  if (!Array.isArray(conditions)) return [];
  return conditions.filter(
    (condition): condition is Condition =>
      isRecord(condition) && typeof condition.type === 'string' && typeof condition.status === 'string',
  );
}

/**
 * The new conditions: each observation with the lastTransitionTime it had when its status is unchanged, `now`
 * when it changed, and the transitions that happened.
 */
export function mergeConditions(
  previous: readonly Condition[],
  observations: readonly Observation[],
  now: string,
  generation: number,
): { conditions: Condition[]; transitions: Transition[] } {
  const transitions: Transition[] = [];
  const conditions = observations.map((observation) => {
    const before = previous.find((condition) => condition.type === observation.type);
    const unchanged = before?.status === observation.status && typeof before.lastTransitionTime === 'string';
    if (!unchanged)
      transitions.push({
        type: observation.type,
        from: before?.status,
        to: observation.status,
        reason: observation.reason,
        message: observation.message,
      });
    return {
      ...observation,
      lastTransitionTime: unchanged ? before.lastTransitionTime : now,
      observedGeneration: generation,
    };
  });
  return { conditions, transitions };
}

export interface InstanceVersion {
  /** Empty for the version `argocd.version` pins. */
  namespace: string;
  version: string | null;
}

export interface AdvisoryInEffect {
  id: string;
  summary: string;
  fixed?: string;
  instances: InstanceVersion[];
}

/** The Argo CD instances hookguard decides with: the pinned version alone, or what discovery knows. */
export function knownInstances(pinned: string | null, discovery: DiscoveryStatus): InstanceVersion[] {
  if (pinned !== null) return [{ namespace: '', version: pinned }];
  return discovery.enabled ? discovery.instances.map(({ namespace, version }) => ({ namespace, version })) : [];
}

/** The advisories that affect a known Argo CD instance: the races hookguard mitigates in this cluster now. */
export function advisoriesInEffect(
  advisories: readonly Advisory[],
  instances: readonly InstanceVersion[],
): AdvisoryInEffect[] {
  return advisories.flatMap((advisory) => {
    const affected = instances.filter((instance) => {
      const version = normalizeArgoVersion(instance.version ?? undefined);
      return version !== undefined && advisoryAffects(advisory, version);
    });
    if (affected.length === 0) return [];
    return [
      {
        id: advisory.id,
        summary: advisory.summary,
        ...(advisory.fixed !== undefined ? { fixed: advisory.fixed } : {}),
        instances: affected,
      },
    ];
  });
}
