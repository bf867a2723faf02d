import { GUARD_CONTAINER_NAME, HOOKGUARD_MIN_RUNTIME_SECONDS } from '../core/annotations.js';
import { isOpenShift } from '../core/cluster.js';
import { imageRepository } from '../core/image.js';
import { annotation, isRecord, jobSpecOf, podSpecOf } from '../core/objects.js';
import { parseQuantity } from '../core/quantity.js';
import { report, type MutationRule, type RuleSettings } from '../core/rule.js';
import type { Container, KubeObject, PodSpec } from '../core/types.js';

export { GUARD_CONTAINER_NAME };

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
  /** The image's own USER is a numeric non-root uid: the guard can say runAsNonRoot without a runAsUser. */
  imageRunsAsNonRoot: boolean;
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
      imageRunsAsNonRoot: settings.imageRunsAsNonRoot,
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
  const podLevel = podLevelResources(podSpec);
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  let requested = false;
  let limited = false;
  for (const resource of GUARD_RESOURCES) {
    const smallest = smallestAsk(containers, resource);
    if (smallest === undefined) continue;
    const cap = template.caps.get(resource);
    // Pod-level resources bound every container of the Pod: the guard stays within them too.
    const podRequest = podLevel.requests.get(resource) ?? podLevel.limits.get(resource);
    const podLimit = podLevel.limits.get(resource);
    requested = true;
    if (smallest.limit === undefined) {
      requests[resource] = atMost(smallest.request, podRequest).text;
      continue;
    }
    limited = true;
    requests[resource] = atMost(atMost(smallest.request, cap?.request), podRequest).text;
    limits[resource] = atMost(atMost(smallest.request, cap?.limit), podLimit).text;
  }
  // A limit is only ever set beside its request.
  if (!requested) return undefined;
  return limited ? { requests, limits } : { requests };
}

/**
 * The Pod's own `spec.resources` (PodLevelResources: beta and on by default from Kubernetes 1.34, cpu and memory):
 * the Pod's budget, which its containers share. Validation holds the containers' aggregate request (the larger of
 * the sum of the containers with sidecars and each init step, as podRequests counts it) to at most the pod-level
 * request, and each container's limit to at most the pod-level limit (kubernetes v1.34 pkg/apis/core/validation
 * validatePodResourceConsistency); and the QoS class is then read from the pod-level values (pkg/apis/core/helper/qos
 * ComputePodQOS). The guard already asks at most what one container asks, which those bounds allow; it reads them
 * anyway and never asks more, and where no container sets a resource it sets none, sharing the Pod's budget.
 */
function podLevelResources(podSpec: PodSpec): PodLevelResources {
  const resources = podSpec.resources;
  // Most Pods set none: they share one empty budget, which nothing writes to.
  if (!isRecord(resources)) return NO_POD_LEVEL_RESOURCES;
  return { requests: quantitiesOf(resources.requests), limits: quantitiesOf(resources.limits) };
}

interface PodLevelResources {
  requests: ReadonlyMap<string, Quantity>;
  limits: ReadonlyMap<string, Quantity>;
}

const NO_POD_LEVEL_RESOURCES: PodLevelResources = Object.freeze({ requests: new Map(), limits: new Map() });

/** A resource list's quantities; a value the API server would refuse is left out. */
function quantitiesOf(list: unknown): Map<string, Quantity> {
  const quantities = new Map<string, Quantity>();
  if (!isRecord(list)) return quantities;
  for (const [resource, value] of Object.entries(list)) {
    const quantity = quantityOf(value);
    if (quantity !== undefined) quantities.set(resource, quantity);
  }
  return quantities;
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
  let containers = 0;
  for (const list of [podSpec.initContainers, podSpec.containers]) {
    if (!Array.isArray(list)) continue;
    for (const container of list) {
      containers++;
      if (!isRecord(container) || !isRecord(container.securityContext)) return false;
      if (container.securityContext.runAsNonRoot !== true) return false;
    }
  }
  return containers > 0;
}

/**
 * Admissible wherever the Pod is: under Pod Security "restricted" (kubernetes/pod-security-admission v0.36.2
 * policy/check_*.go) and OpenShift's restricted-v2, nonroot-v2 and anyuid SCCs alike, without knowing which applies.
 * It runs as the Pod's user and group when the Pod sets non-root ones, else as `runAsUser` (both) when one is
 * configured and the cluster is not OpenShift. On OpenShift (`platformAssignsIds`) an id of our own would have to lie
 * in the namespace's `openshift.io/sa.scc.uid-range`, which restricted-v2 (MustRunAsRange) holds Pods to and which a
 * namespace just created does not have yet; one left unset is assigned the range's first id
 * (openshift/apiserver-library-go pkg/securitycontextconstraints/user/mustrunasrange.go Generate and Validate, read
 * at a8019f39f). With no id from the Pod or the config the image's user runs it: the default image's is 65532, so the
 * guard says runAsNonRoot: true (`imageRunsAsNonRoot`), which restricted PSA and nonroot-v2 (user/nonroot.go
 * Validate) want and anyuid (user/runasany.go) lets pass, unless the Pod itself runs as root (runAsUser 0: then only
 * an SCC or level that admits root admits the Pod, and the guard runs as the Pod does). For an image whose user is
 * root (busybox) it says runAsNonRoot only where the Pod itself must, because the kubelet refuses to start a container
 * that says runAsNonRoot but would run as root (kubernetes/kubernetes pkg/kubelet/kuberuntime/security_context_others.go
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
  const podRunsAsRoot = isRecord(podSpec.securityContext) && podSpec.securityContext.runAsUser === 0;
  const runAsNonRoot =
    runAsUser !== undefined || podRunsAsNonRoot(podSpec) || (template.imageRunsAsNonRoot && !podRunsAsRoot);
  // Assigned in the order the patch writes them (the goldens'), with no key at all where there is no value.
  const securityContext: Record<string, unknown> = {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    privileged: false,
    readOnlyRootFilesystem: true,
  };
  if (runAsNonRoot) securityContext.runAsNonRoot = true;
  if (runAsUser !== undefined) securityContext.runAsUser = runAsUser;
  if (runAsGroup !== undefined) securityContext.runAsGroup = runAsGroup;
  securityContext.seccompProfile = { type: 'RuntimeDefault' };
  return securityContext;
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
  const guard: Container = {
    name: GUARD_CONTAINER_NAME,
    image: template.image,
    imagePullPolicy: 'IfNotPresent',
    command: [...template.command, String(seconds)],
  };
  if (resources) guard.resources = resources;
  guard.securityContext = guardSecurityContext(podSpec, template, platformAssignsIds);
  return guard;
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

/**
 * The guard's wait counts against every deadline the chart set: a Job's activeDeadlineSeconds runs from the Job's
 * start, Pending time and init containers included, and a Pod's from the Pod's (kubernetes pkg/controller/job
 * job_controller.go pastActiveDeadline; pkg/kubelet/active_deadline.go). So each is raised by exactly the wait, and
 * the hook keeps all the time its author gave it: a Job with 60 that runs 55 s still finishes. Only a positive whole
 * number is a deadline the API server accepts; anything else is left for it to refuse.
 */
function extendDeadlines(object: KubeObject, podSpec: PodSpec, seconds: number): string[] {
  const raised: string[] = [];
  const extend = (spec: { activeDeadlineSeconds?: unknown } | undefined, path: string) => {
    const deadline = spec?.activeDeadlineSeconds;
    if (spec === undefined || typeof deadline !== 'number' || !Number.isSafeInteger(deadline) || deadline <= 0) return;
    spec.activeDeadlineSeconds = deadline + seconds;
    raised.push(
      `raised ${path}.activeDeadlineSeconds from ${deadline} to ${deadline + seconds}: the guard's ${seconds}s wait counts against it, and the hook keeps all its own time`,
    );
  };
  const jobSpec = object.kind === 'Job' ? jobSpecOf(object) : undefined;
  extend(jobSpec, 'spec');
  extend(podSpec, jobSpec ? 'spec.template.spec' : 'spec');
  return raised;
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
  mutate(object, { settings, cluster }) {
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
    const platformAssignsIds = isOpenShift(settings.minRuntime.openshift, cluster);
    const guard = guardContainer(requested.seconds, settings.minRuntime, podSpec, platformAssignsIds);
    if (Array.isArray(initContainers)) initContainers.push(guard);
    else podSpec.initContainers = [guard];
    return report({
      warnings,
      mutations: [
        `added init container ${GUARD_CONTAINER_NAME} waiting ${requested.seconds}s: a hook that ends before Argo CD sees it run keeps Argo CD's hook finalizer, and the sync waits on it`,
        ...extendDeadlines(object, podSpec, requested.seconds),
      ],
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

/** What a guard runs: an image repository and the command the seconds are appended to. */
type GuardShape = Pick<GuardTemplate, 'repository' | 'command'>;

/**
 * The guard earlier hookguards wrote by default (`busybox:1.37.0`, `sleep`), still a guard: a manifest rendered with
 * `check --fix` before the default image changed keeps its guard, and is neither guarded twice nor a look-alike.
 */
const EARLIER_DEFAULT_GUARDS: readonly GuardShape[] = [{ repository: 'busybox', command: ['sleep'] }];

/** What keeps an init container from waiting `seconds` as the guard does (the configured one first); undefined when nothing does. */
function guardLacks(container: Container, seconds: number, template: GuardTemplate): string | undefined {
  const lacks = shapeLacks(container, seconds, template);
  if (lacks === undefined || EARLIER_DEFAULT_GUARDS.some((shape) => !shapeLacks(container, seconds, shape)))
    return undefined;
  return lacks;
}

function shapeLacks(container: Container, seconds: number, template: GuardShape): string | undefined {
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
