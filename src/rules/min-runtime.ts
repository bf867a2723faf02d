import { GUARD_CONTAINER_NAME, HOOKGUARD_MIN_RUNTIME_SECONDS } from '../core/annotations.js';
import { imageRepository } from '../core/image.js';
import { annotation, isRecord, jobSpecOf, podSpecOf } from '../core/objects.js';
import { parseQuantity } from '../core/quantity.js';
import { report, type MutationRule, type RuleSettings } from '../core/rule.js';
import type { Container, PodSpec } from '../core/types.js';

export { GUARD_CONTAINER_NAME };

/**
 * The annotation OpenShift's namespace controller gives every namespace: the UID range its `restricted-v2` SCC
 * (MustRunAsRange) holds Pods to. A runAsUser outside it is refused, and one left unset is assigned the range's first
 * id (openshift/apiserver-library-go pkg/securitycontextconstraints/user/mustrunasrange.go, Generate and Validate,
 * read at a8019f39f): so in such a namespace the guard sets no user or group of its own.
 */
export const OPENSHIFT_UID_RANGE = 'openshift.io/sa.scc.uid-range';

/** What min-runtime reads of a namespace, kept by the server's namespace watch. */
export const MIN_RUNTIME_NAMESPACE_KEYS = { labels: [], annotations: [OPENSHIFT_UID_RANGE] } as const;

type GuardSettings = RuleSettings['minRuntime'];

/** A quantity with its text as written, so the guard repeats the chart's own spelling. */
interface Quantity {
  text: string;
  nano: bigint;
}

/** What the guard takes from the config, prepared once per config (the loaded config is frozen). */
interface GuardTemplate {
  image: string;
  /** The image's repository, which an existing guard must run (any tag or digest). */
  repository: string;
  command: readonly string[];
  runAsUser: number | null;
  /** Upper bounds of the guard's request and limit, per resource; resources without one are copied uncapped. */
  caps: ReadonlyMap<string, { request: Quantity; limit: Quantity }>;
}

/**
 * The resources the guard sizes itself by. cpu and memory decide the QoS class; ephemeral-storage is the other one a
 * LimitRange commonly constrains per container (extended resources are never copied onto a sleep).
 */
const GUARD_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;

const templates = new WeakMap<GuardSettings, GuardTemplate>();

function configuredQuantity(text: string, key: string): Quantity {
  const nano = parseQuantity(text);
  // The config module refuses these; only a settings object built by hand gets here.
  if (nano === undefined) throw new Error(`rules.minRuntime.${key} "${text}" is not a Kubernetes quantity`);
  return { text, nano };
}

function templateOf(settings: GuardSettings): GuardTemplate {
  let template = templates.get(settings);
  if (!template) {
    const caps = new Map(
      (['cpu', 'memory'] as const).map((resource) => [
        resource,
        {
          request: configuredQuantity(settings.requests[resource], `requests.${resource}`),
          limit: configuredQuantity(settings.limits[resource], `limits.${resource}`),
        },
      ]),
    );
    template = {
      image: settings.image,
      repository: imageRepository(settings.image),
      command: settings.command,
      runAsUser: settings.runAsUser,
      caps,
    };
    templates.set(settings, template);
  }
  return template;
}

/** A quantity as a pod spec holds it: a string, or a number in a manifest read from YAML. */
function quantityOf(value: unknown): Quantity | undefined {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string') return undefined;
  const nano = parseQuantity(text);
  return nano === undefined ? undefined : { text, nano };
}

function resourceList(container: Container, list: 'requests' | 'limits'): Record<string, unknown> | undefined {
  const resources = container.resources;
  if (!isRecord(resources)) return undefined;
  const values = resources[list];
  return isRecord(values) ? values : undefined;
}

/** The container of the Pod asking least of one resource; its request is its limit when it sets only a limit. */
interface Smallest {
  request: Quantity;
  limit: Quantity | undefined;
}

function smallestAsk(containers: readonly Container[], resource: string): Smallest | undefined {
  let smallest: Smallest | undefined;
  for (const container of containers) {
    const limit = quantityOf(resourceList(container, 'limits')?.[resource]);
    // What the API server's Pod defaulting does (SetDefaults_Pod): a limit without a request is also the request.
    const request = quantityOf(resourceList(container, 'requests')?.[resource]) ?? limit;
    if (request !== undefined && (smallest === undefined || request.nano < smallest.request.nano)) {
      smallest = { request, limit };
    }
  }
  return smallest;
}

const atMost = (value: Quantity, cap: Quantity | undefined) =>
  cap !== undefined && cap.nano < value.nano ? cap : value;

/**
 * The guard's requests and limits follow the Pod's own containers, one resource at a time, so the guard can neither
 * keep the Pod from being admitted nor change its QoS class:
 * - Where none of the Pod's containers sets a resource, the guard sets none either: a LimitRange's defaults then
 *   reach it exactly as they reach them (LimitRanger defaults init containers too; a bare Pod reaches the webhook
 *   after them, and then there is none for that resource), and a BestEffort Pod stays BestEffort.
 * - Otherwise the guard asks what the container asking least asks, at most the configured size. With a limit there,
 *   the guard's limit equals its request (any maxLimitRequestRatio passes, a Guaranteed Pod stays Guaranteed); without
 *   one, it copies that request alone, so a LimitRange's default limit gives both the same ratio.
 * Each value is at most one app container's, so the Pod's effective request and limit, the larger of the sum of its
 * containers (with sidecars) and each init step, is what it was (LimitRanger podRequests/podLimits, the scheduler
 * and ResourceQuota all count it so), and every per-container LimitRange check the guard meets, one of those
 * containers already passes, as long as the configured size is above the LimitRange's minimum.
 */
function guardResources(podSpec: PodSpec, template: GuardTemplate): Container['resources'] {
  const containers = Array.isArray(podSpec.containers) ? podSpec.containers.filter(isRecord) : [];
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  for (const resource of GUARD_RESOURCES) {
    const smallest = smallestAsk(containers, resource);
    if (smallest === undefined) continue;
    const cap = template.caps.get(resource);
    if (smallest.limit === undefined) {
      requests[resource] = smallest.request.text;
      continue;
    }
    requests[resource] = atMost(smallest.request, cap?.request).text;
    limits[resource] = atMost(smallest.request, cap?.limit).text;
  }
  // A limit is only ever set beside its request.
  if (Object.keys(requests).length === 0) return undefined;
  return Object.keys(limits).length > 0 ? { requests, limits } : { requests };
}

/** A user or group id the Pod sets for all its containers; root (0) is never taken over. */
function podId(podSpec: PodSpec, field: 'runAsUser' | 'runAsGroup'): number | undefined {
  const context = podSpec.securityContext;
  const id = isRecord(context) ? context[field] : undefined;
  return typeof id === 'number' && Number.isInteger(id) && id > 0 ? id : undefined;
}

/** Pod Security "restricted" holds the Pod to runAsNonRoot: true, set for the Pod or by each of its containers. */
function podRunsAsNonRoot(podSpec: PodSpec): boolean {
  const context = podSpec.securityContext;
  if (isRecord(context) && context.runAsNonRoot === true) return true;
  const all = [podSpec.initContainers, podSpec.containers].flatMap((list) => (Array.isArray(list) ? list : []));
  return (
    all.length > 0 &&
    all.every(
      (container) =>
        isRecord(container) && isRecord(container.securityContext) && container.securityContext.runAsNonRoot === true,
    )
  );
}

/**
 * Passes Pod Security "restricted" (kubernetes/pod-security-admission v0.36.2 policy/check_*.go) wherever the Pod
 * does. It runs as the Pod's user and group when the Pod sets non-root ones, else as `runAsUser` (both). With
 * `runAsUser: null`, or where the platform assigns ids (`platformAssignsIds`: an OpenShift namespace, see
 * OPENSHIFT_UID_RANGE, or `rules.minRuntime.openshift`), and no id from the Pod, the
 * image's user runs it: then it says runAsNonRoot only where the Pod itself must, because the kubelet refuses to
 * start a container that says runAsNonRoot but would run as root (busybox's user is root) unless the platform
 * assigns it a non-root id (kubernetes/kubernetes pkg/kubelet/kuberuntime/security_context_others.go
 * verifyRunAsNonRoot: "container has runAsNonRoot and image will run as root").
 */
function guardSecurityContext(
  podSpec: PodSpec,
  template: GuardTemplate,
  platformAssignsIds: boolean,
): Record<string, unknown> {
  const fallback = platformAssignsIds ? undefined : (template.runAsUser ?? undefined);
  const runAsUser = podId(podSpec, 'runAsUser') ?? fallback;
  const runAsGroup = podId(podSpec, 'runAsGroup') ?? fallback;
  const runAsNonRoot = runAsUser !== undefined || podRunsAsNonRoot(podSpec);
  return {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    privileged: false,
    readOnlyRootFilesystem: true,
    ...(runAsNonRoot ? { runAsNonRoot: true } : {}),
    ...(runAsUser !== undefined ? { runAsUser } : {}),
    ...(runAsGroup !== undefined ? { runAsGroup } : {}),
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/**
 * The wait runs in an init container of our own image, so the user's image needs no shell or sleep binary. Its
 * resources and ids are read off the Pod it joins (see guardResources and guardSecurityContext).
 */
export function guardContainer(
  seconds: number,
  settings: GuardSettings,
  podSpec: PodSpec,
  platformAssignsIds = false,
): Container {
  const template = templateOf(settings);
  const resources = guardResources(podSpec, template);
  return {
    name: GUARD_CONTAINER_NAME,
    image: template.image,
    imagePullPolicy: 'IfNotPresent',
    command: [...template.command, String(seconds)],
    ...(resources ? { resources } : {}),
    securityContext: guardSecurityContext(podSpec, template, platformAssignsIds),
  };
}

/**
 * A Windows Pod (spec.os.name, kubernetes/kubernetes v1.34.1 pkg/apis/core/validation/validation.go validateWindows:
 * the API server refuses runAsUser, capabilities, seccompProfile... on its containers, in a Job's template too), or
 * one pinned to Windows nodes, where a Linux guard image could not run anyway.
 */
function runsOnWindows(podSpec: PodSpec): boolean {
  const os = podSpec.os;
  const nodeSelector = podSpec.nodeSelector;
  return (
    (isRecord(os) && os.name === 'windows') ||
    (isRecord(nodeSelector) && nodeSelector['kubernetes.io/os'] === 'windows')
  );
}

interface RuntimeRequest {
  seconds: number;
  warning?: string;
}

function requestedSeconds(raw: string | undefined, settings: GuardSettings): RuntimeRequest {
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

export const WINDOWS_NOT_GUARDED =
  'no guard for a Windows Pod (the API server refuses its Linux securityContext there): the hook may still race';

/**
 * A Job that finishes before Argo CD observes it keeps the hook finalizer forever (kyverno#13149, argo-cd#23226).
 * Only sync-phase hooks carry that finalizer (gitops-engine pkg/sync/sync_context.go getSyncTasks, argo-cd v3.3.0
 * gitops-engine/); Argo CD creates PreDelete/PostDelete hooks with a plain create (argo-cd controller/hook.go
 * executeHooks, v3.0.0, v3.3.0, v3.5.1), so the rule's gate leaves them alone (gateOpen, HookInfo.argoSyncPhase).
 */
export const minRuntime: MutationRule = {
  id: 'min-runtime',
  doc: 'Adds an init container that waits minRuntimeSeconds (default 10) to Argo CD-applied sync-phase hooks, so they cannot finish before Argo CD sees them run; sized and run like the Pod, never on Windows Pods.',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'argocd',
  mutate(object, { settings, namespace }) {
    const podSpec = podSpecOf(object);
    if (!podSpec) return report({ unmet: 'the object has no pod spec to add the guard to' });
    const requested = requestedSeconds(annotation(object, HOOKGUARD_MIN_RUNTIME_SECONDS), settings.minRuntime);
    const warnings = requested.warning ? [requested.warning] : [];
    if (requested.seconds === 0) return report({ warnings, unmet: `${HOOKGUARD_MIN_RUNTIME_SECONDS} is 0` });

    const initContainers = podSpec.initContainers;
    if (initContainers !== undefined && initContainers !== null && !Array.isArray(initContainers)) {
      return report({ warnings, unmet: 'spec initContainers is not a list' });
    }
    const existing = existingGuard(initContainers ?? [], requested.seconds, settings.minRuntime);
    if (existing?.kind === 'guard') return report({ warnings });
    if (existing?.kind === 'lookAlike') return report({ warnings, unmet: existing.reason });
    if (runsOnWindows(podSpec)) return report({ warnings: [...warnings, WINDOWS_NOT_GUARDED] });
    const deadlines = [jobSpecOf(object)?.activeDeadlineSeconds, podSpec.activeDeadlineSeconds];
    const tooShort = deadlines.find((deadline) => typeof deadline === 'number' && deadline <= requested.seconds);
    if (tooShort !== undefined) {
      return report({
        warnings,
        unmet: `activeDeadlineSeconds ${tooShort} leaves no time after a ${requested.seconds}s guard; raise it or lower ${HOOKGUARD_MIN_RUNTIME_SECONDS}`,
      });
    }
    const platformAssignsIds =
      settings.minRuntime.openshift || namespace?.annotations[OPENSHIFT_UID_RANGE] !== undefined;
    const guard = guardContainer(requested.seconds, settings.minRuntime, podSpec, platformAssignsIds);
    if (Array.isArray(initContainers)) initContainers.push(guard);
    else podSpec.initContainers = [guard];
    return report({
      warnings,
      mutations: [`added init container ${GUARD_CONTAINER_NAME} waiting ${requested.seconds}s`],
    });
  },
};

/**
 * Whether the Pod already holds the guard, judged by what an init container does, not by its name: the configured
 * image's repository (any tag or digest: an earlier hookguard or a render-time `check --fix` may have pinned another),
 * exactly the configured command and a whole number of seconds at least `seconds`, no args, and not a restartable
 * sidecar (`restartPolicy: Always` runs beside the Pod's containers instead of before them). 'guard' when one does;
 * otherwise, for an init container that takes the guard's name without doing its job (`command: [true]`), why it is
 * not the guard: an unmet mitigation, which version-race denies where the race is known (hookguard never overwrites
 * a container it did not write, and a second one cannot share the name); undefined when there is neither.
 */
export function existingGuard(
  initContainers: readonly unknown[],
  seconds: number,
  settings: GuardSettings,
): { kind: 'guard' } | { kind: 'lookAlike'; reason: string } | undefined {
  const template = templateOf(settings);
  let lookAlike: string | undefined;
  for (const container of initContainers) {
    if (!isRecord(container)) continue;
    const lacks = guardLacks(container, seconds, template);
    if (lacks === undefined) return { kind: 'guard' };
    if (container.name === GUARD_CONTAINER_NAME) lookAlike ??= lacks;
  }
  if (lookAlike === undefined) return undefined;
  return {
    kind: 'lookAlike',
    reason: `init container ${GUARD_CONTAINER_NAME} is not hookguard's guard (${lookAlike}); rename or remove it`,
  };
}

/** What keeps an init container from waiting `seconds` as the guard does; undefined when nothing does. */
function guardLacks(container: Container, seconds: number, template: GuardTemplate): string | undefined {
  const image = container.image;
  if (typeof image !== 'string' || imageRepository(image) !== template.repository) {
    return `its image is not ${template.repository}`;
  }
  const command = container.command;
  const prefix = template.command;
  const waits = Array.isArray(command) ? command[prefix.length] : undefined;
  const asConfigured =
    Array.isArray(command) && command.length === prefix.length + 1 && prefix.every((word, i) => command[i] === word);
  if (!asConfigured || typeof waits !== 'string' || !/^\d+$/.test(waits)) {
    return `its command is not ${[...prefix, '<seconds>'].join(' ')}`;
  }
  if (Number(waits) < seconds) return `it waits ${waits}s, not ${seconds}s`;
  if (Array.isArray(container.args) && container.args.length > 0) return 'it has args';
  if (container.restartPolicy === 'Always') return 'it is a sidecar, restartPolicy Always';
  return undefined;
}

/** How long the guard in this pod spec waits (the last word of its command), or 0 when it has none. */
export function guardWaitSeconds(podSpec: PodSpec | undefined): number {
  const initContainers = podSpec?.initContainers;
  if (!Array.isArray(initContainers)) return 0;
  const guard = initContainers.find((container) => isRecord(container) && container.name === GUARD_CONTAINER_NAME);
  const seconds = Number(Array.isArray(guard?.command) ? guard.command.at(-1) : undefined);
  return Number.isSafeInteger(seconds) && seconds > 0 ? seconds : 0;
}
