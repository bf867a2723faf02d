import { HOOKGUARD_MIN_RUNTIME_SECONDS } from '../core/annotations.js';
import { annotation, isRecord, jobSpecOf, podSpecOf } from '../core/objects.js';
import { report, type MutationRule, type RuleSettings } from '../core/rule.js';
import type { Container } from '../core/types.js';

export const GUARD_CONTAINER_NAME = 'hookguard-min-runtime';

/** The wait runs in an init container of our own image, so the user's image needs no shell or sleep binary. */
export function guardContainer(seconds: number, settings: RuleSettings['minRuntime']): Container {
  return {
    name: GUARD_CONTAINER_NAME,
    image: settings.image,
    imagePullPolicy: 'IfNotPresent',
    command: [...settings.command, String(seconds)],
    // Small requests and limits: namespaces with a ResourceQuota on limits still admit the Pod, and the Pod's
    // effective request (max of init containers and the sum of containers) does not grow in practice.
    resources: { requests: { ...settings.requests }, limits: { ...settings.limits } },
    // Passes the Pod Security "restricted" profile whatever the Pod sets.
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: settings.runAsUser,
      runAsGroup: settings.runAsUser,
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
}

interface RuntimeRequest {
  seconds: number;
  warning?: string;
}

function requestedSeconds(raw: string | undefined, settings: RuleSettings['minRuntime']): RuntimeRequest {
  const fallback = settings.minRuntimeSeconds;
  if (raw === undefined) return { seconds: fallback };
  const seconds = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(seconds) || seconds > settings.maxRuntimeSeconds) {
    return {
      seconds: fallback,
      warning: `${HOOKGUARD_MIN_RUNTIME_SECONDS}="${raw}" is not an integer 0..${settings.maxRuntimeSeconds}; using ${fallback}`,
    };
  }
  return { seconds };
}

/** A Job that finishes before Argo CD observes it keeps the hook finalizer forever (kyverno#13149, argo-cd#23226). */
export const minRuntime: MutationRule = {
  id: 'min-runtime',
  doc: 'Adds an init container that waits minRuntimeSeconds (default 10) to Argo CD-applied hooks, so they cannot finish before Argo CD sees them run.',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'argocd',
  mutate(object, { settings }) {
    const podSpec = podSpecOf(object);
    if (!podSpec) return report({ unmet: 'the object has no pod spec to add the guard to' });
    const requested = requestedSeconds(annotation(object, HOOKGUARD_MIN_RUNTIME_SECONDS), settings.minRuntime);
    const warnings = requested.warning ? [requested.warning] : [];
    if (requested.seconds === 0) return report({ warnings, unmet: `${HOOKGUARD_MIN_RUNTIME_SECONDS} is 0` });

    const initContainers = podSpec.initContainers;
    if (initContainers !== undefined && initContainers !== null && !Array.isArray(initContainers)) {
      return report({ warnings, unmet: 'spec initContainers is not a list' });
    }
    if (initContainers?.some((container) => isRecord(container) && container.name === GUARD_CONTAINER_NAME)) {
      return report({ warnings });
    }
    const deadlines = [jobSpecOf(object)?.activeDeadlineSeconds, podSpec.activeDeadlineSeconds];
    const tooShort = deadlines.find((deadline) => typeof deadline === 'number' && deadline <= requested.seconds);
    if (tooShort !== undefined) {
      return report({
        warnings,
        unmet: `activeDeadlineSeconds ${tooShort} leaves no time after a ${requested.seconds}s guard; raise it or lower ${HOOKGUARD_MIN_RUNTIME_SECONDS}`,
      });
    }
    const guard = guardContainer(requested.seconds, settings.minRuntime);
    if (Array.isArray(initContainers)) initContainers.push(guard);
    else podSpec.initContainers = [guard];
    return report({
      warnings,
      mutations: [`added init container ${GUARD_CONTAINER_NAME} waiting ${requested.seconds}s`],
    });
  },
};
