// Why a hook failed or hangs, read from what Kubernetes itself wrote: the Job's conditions, its Pods' statuses and the
// Events about both. Pure: the CLI (`hookguard why`) and the hook watcher hand it what they read and render the answer.
// Every message format quoted here is cited where it is read; the golden tests (test/golden/why/) hold real shapes.
import { GUARD_CONTAINER_NAME } from './annotations.js';
import { isRecord } from './objects.js';

/**
 * Where a hook is. `Stuck` (a Pod that cannot start or finish) and `Blocked` (a Job whose Pods cannot be created) are
 * called so only once the evidence is `stuckAfterSeconds` old; before that the hook is `Running`, with the reason.
 */
export type HookState = 'Succeeded' | 'Running' | 'Failed' | 'Stuck' | 'Blocked' | 'Suspended';

/** The states a person must act on: `hookguard why` exits 1 on them, the watcher posts an Event for them. */
export const FAILING_STATES: ReadonlySet<HookState> = new Set<HookState>(['Failed', 'Stuck', 'Blocked']);

/**
 * What the explanation rests on: a bounded set (a metrics label can carry it). The component's own word is kept
 * beside it (`containerReason`, `jobCondition.reason`, `eventReason`).
 */
export type HookReason =
  | 'Completed'
  | 'Running'
  | 'Starting'
  | 'Suspended'
  | 'ContainerFailed'
  | 'OOMKilled'
  | 'BackoffLimitExceeded'
  | 'DeadlineExceeded'
  | 'JobFailed'
  | 'PodFailed'
  | 'ImagePullBackOff'
  | 'CreateContainerConfigError'
  | 'CrashLoopBackOff'
  | 'Waiting'
  | 'Unschedulable'
  | 'FailedCreate'
  | 'SidecarRunning'
  | 'NoPods'
  | 'Deleted';

/** Who refused a Job's Pod, read from the job controller's FailedCreate message. */
export type BlockedBy = 'ResourceQuota' | 'PodSecurity' | 'SecurityContextConstraints' | 'AdmissionWebhook' | 'Other';

/** `init`: an init container that runs to completion; `sidecar`: a native sidecar (init, restartPolicy Always). */
export type ContainerRole = 'init' | 'sidecar' | 'container';

export interface JobConditionSummary {
  type: string;
  reason?: string;
  message?: string;
}

export interface HookExplanation {
  kind: 'Job' | 'Pod';
  namespace?: string;
  name: string;
  state: HookState;
  reason: HookReason;
  /** One line for people: what happened, to which container of which Pod. */
  message: string;
  /** One line: what to do next. */
  nextStep: string;
  /** When the state's evidence began (RFC 3339, as Kubernetes wrote it). */
  since?: string;
  /** Whole seconds from `since` to `now`. */
  forSeconds?: number;
  /** The Pod the explanation comes from. */
  pod?: string;
  /** The container that failed or waits; never hookguard's guard init container. */
  container?: string;
  containerRole?: ContainerRole;
  image?: string;
  /** The container's own reason: `terminated.reason` or `waiting.reason` (Error, OOMKilled, ErrImagePull, …). */
  containerReason?: string;
  exitCode?: number;
  signal?: number;
  terminationMessage?: string;
  /** The component's own words, verbatim (a condition's message, an Event's note, a waiting message). */
  quoted?: string;
  /** Where `quoted` comes from, e.g. `Event FailedCreate (job-controller)`, `condition PodScheduled`. */
  quotedFrom?: string;
  /** The Job's Failed, FailureTarget, Complete or Suspended condition the state rests on. */
  jobCondition?: JobConditionSummary;
  blockedBy?: BlockedBy;
  /** What CreateContainerConfigError says is missing. */
  missing?: { kind: 'Secret' | 'ConfigMap'; name: string; key?: string };
}

export interface HookEvidence {
  /** The hook: a batch/v1 Job or a bare v1 Pod, as read from the API server. */
  hook: unknown;
  /** The Job's Pods (ignored for a Pod hook); Pods another Job owns are left out. */
  pods: readonly unknown[];
  /** Events about the hook and its Pods: core v1 (`involvedObject`) and events.k8s.io/v1 (`regarding`) alike. */
  events: readonly unknown[];
}

export interface ExplainOptions {
  /** Milliseconds since the epoch. */
  now: number;
  /** How long a Pod may wait, or a Job fail to create Pods, before it is called Stuck or Blocked. */
  stuckAfterSeconds: number;
}

/** At most this much of a component's text is kept (the kubelet keeps 4 KiB of a termination message). */
export const QUOTE_LIMIT = 4096;

export function explainHook(evidence: HookEvidence, options: ExplainOptions): HookExplanation {
  const hook = isRecord(evidence.hook) ? evidence.hook : {};
  const meta = record(hook.metadata);
  const events = readEvents(evidence.events);
  const base: Base = {
    kind: hook.kind === 'Pod' ? 'Pod' : 'Job',
    namespace: text(meta.namespace),
    name: text(meta.name) ?? '<unnamed>',
    options,
    events,
  };
  return ordered(base.kind === 'Pod' ? explainPodHook(base, hook) : explainJob(base, hook, evidence.pods));
}

/** The fields in one order, unset ones left out: the JSON a script reads and the watcher's Event carry the same. */
const FIELD_ORDER: readonly (keyof HookExplanation)[] = [
  'kind',
  'namespace',
  'name',
  'state',
  'reason',
  'message',
  'nextStep',
  'since',
  'forSeconds',
  'pod',
  'container',
  'containerRole',
  'image',
  'containerReason',
  'exitCode',
  'signal',
  'terminationMessage',
  'quoted',
  'quotedFrom',
  'jobCondition',
  'blockedBy',
  'missing',
];

function ordered(explanation: HookExplanation): HookExplanation {
  const out: Record<string, unknown> = {};
  for (const key of FIELD_ORDER) if (explanation[key] !== undefined) out[key] = explanation[key];
  return out as unknown as HookExplanation;
}

/** gitops-engine pkg/sync/common/types.go: the operation and hook phases after which nothing is waited for. */
const COMPLETED_PHASES = new Set(['Succeeded', 'Failed', 'Error']);

/**
 * A hook an Argo CD operation lists (`status.operationState.syncResult.resources[]`: group, kind, namespace, name,
 * hookType, hookPhase, message; argo-cd pkg/apis/application/v1alpha1 ResourceResult) whose object is gone, deleted by
 * its delete policy or TTL: what Argo CD recorded is all there is. An operation still running that waits for a hook
 * which no longer exists waits for ever (argo-cd#21055; from v3.4.0 it fails with "… is missing"): Stuck.
 */
export function explainRecordedHook(resource: unknown, operationPhase: string | undefined): HookExplanation {
  const entry = record(resource);
  const hookPhase = text(entry.hookPhase);
  const said = text(entry.message);
  const head: Pick<HookExplanation, 'kind' | 'namespace' | 'name'> = {
    kind: entry.kind === 'Pod' ? 'Pod' : 'Job',
    namespace: text(entry.namespace),
    name: text(entry.name) ?? '<unnamed>',
  };
  const recorded = `${head.kind} ${head.name} no longer exists; Argo CD recorded it as ${hookPhase ?? 'not started'}${said ? `: ${oneLine(said)}` : ''}`;
  const common = {
    ...head,
    reason: 'Deleted' as const,
    message: recorded,
    quoted: quote(said),
    quotedFrom: said ? 'Argo CD syncResult' : undefined,
  };
  if (hookPhase === 'Succeeded') return ordered({ ...common, state: 'Succeeded', nextStep: 'Nothing to do.' });
  if (hookPhase !== undefined && COMPLETED_PHASES.has(hookPhase))
    return ordered({
      ...common,
      state: 'Failed',
      nextStep:
        'Its Pods and Events went with it: to keep a failed hook for reading, leave HookFailed out of its delete policy (or raise its ttlSecondsAfterFinished), then sync again.',
    });
  const waiting = operationPhase !== undefined && !COMPLETED_PHASES.has(operationPhase);
  return ordered({
    ...common,
    state: waiting ? 'Stuck' : 'Failed',
    nextStep: waiting
      ? 'Argo CD waits for a hook that is gone: terminate the operation and sync again (argo-cd#21055).'
      : 'Sync again; keep the hook (its delete policy, ttlSecondsAfterFinished) if it fails once more.',
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The shapes read.

interface Base {
  kind: 'Job' | 'Pod';
  namespace: string | undefined;
  name: string;
  options: ExplainOptions;
  events: readonly HookEvent[];
}

/** One Event, either API's shape. */
interface HookEvent {
  uid?: string;
  kind?: string;
  name?: string;
  type?: string;
  reason: string;
  note: string;
  component?: string;
  /** When it was first and last seen (ms), and as written. */
  first?: number;
  firstText?: string;
  last?: number;
}

type Json = Record<string, unknown>;

function record(value: unknown): Json {
  return isRecord(value) ? value : {};
}
function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}
function records(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}
function time(value: unknown): number | undefined {
  const parsed = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(parsed) ? undefined : parsed;
}
function quote(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT)}…` : value;
}
/** A component's text on one line, for `message`. */
function oneLine(value: string): string {
  return value.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * core v1 Event: involvedObject, message, source.component or reportingComponent, firstTimestamp/lastTimestamp/count
 * or eventTime with series; events.k8s.io/v1: regarding, note, reportingController, deprecatedFirstTimestamp/
 * deprecatedLastTimestamp or eventTime with series (k8s.io/api events/v1 types.go, core/v1 types.go). Both APIs serve
 * the same objects, so an Event read through both is kept once (by uid).
 */
function readEvents(values: readonly unknown[]): HookEvent[] {
  const seen = new Set<string>();
  const events: HookEvent[] = [];
  for (const value of values) {
    if (!isRecord(value)) continue;
    const uid = text(record(value.metadata).uid);
    if (uid !== undefined) {
      if (seen.has(uid)) continue;
      seen.add(uid);
    }
    const v1 = isRecord(value.involvedObject);
    const about = record(v1 ? value.involvedObject : value.regarding);
    const series = record(value.series);
    const firstText =
      text(v1 ? value.firstTimestamp : value.deprecatedFirstTimestamp) ?? text(value.eventTime) ?? undefined;
    const lastText =
      text(series.lastObservedTime) ?? text(v1 ? value.lastTimestamp : value.deprecatedLastTimestamp) ?? firstText;
    events.push({
      uid,
      kind: text(about.kind),
      name: text(about.name),
      type: text(value.type),
      reason: text(value.reason) ?? '',
      note: text(v1 ? value.message : value.note) ?? '',
      component: v1
        ? (text(value.reportingComponent) ?? text(record(value.source).component))
        : (text(value.reportingController) ?? text(record(value.deprecatedSource).component)),
      first: time(firstText),
      firstText,
      last: time(lastText),
    });
  }
  return events;
}

function eventsAbout(base: Base, kind: string, name: string): HookEvent[] {
  return base.events.filter((event) => event.kind === kind && event.name === name);
}

function latest(events: readonly HookEvent[]): HookEvent | undefined {
  let found: HookEvent | undefined;
  for (const event of events) if (found === undefined || (event.last ?? 0) >= (found.last ?? 0)) found = event;
  return found;
}

function quotedEvent(event: HookEvent): string {
  return `Event ${event.reason}${event.component ? ` (${event.component})` : ''}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Timing.

interface Timed {
  since?: string;
  forSeconds?: number;
}

function timed(options: ExplainOptions, since: string | undefined): Timed {
  const at = time(since);
  if (since === undefined || at === undefined) return {};
  return { since, forSeconds: Math.max(0, Math.floor((options.now - at) / 1000)) };
}

/** Waiting long enough to be called Stuck (or Blocked); without a time, it is not. */
function overdue(options: ExplainOptions, timing: Timed): boolean {
  return timing.forSeconds !== undefined && timing.forSeconds >= options.stuckAfterSeconds;
}

function runningStep(options: ExplainOptions): string {
  return `Wait: it is called stuck after ${options.stuckAfterSeconds}s.`;
}

// ---------------------------------------------------------------------------------------------------------------
// Containers.

interface ContainerStatusRead {
  name: string;
  role: ContainerRole;
  image?: string;
  status: Json;
  /** The spec's resources.limits.memory, for OOMKilled. */
  memoryLimit?: string;
}

/**
 * A Pod's container statuses in the order the kubelet runs them: init containers (native sidecars marked, from the
 * spec's `restartPolicy: Always`), then containers. hookguard's guard is left out: it is never the cause people look
 * for (src/rules/min-runtime.ts).
 */
function containerStatuses(pod: Json): ContainerStatusRead[] {
  const spec = record(pod.spec);
  const status = record(pod.status);
  const specOf = (list: unknown): Map<string, Json> =>
    new Map(records(list).map((container) => [text(container.name) ?? '', container]));
  const initSpecs = specOf(spec.initContainers);
  const specs = specOf(spec.containers);
  const read = (list: unknown, specsByName: Map<string, Json>, init: boolean): ContainerStatusRead[] =>
    records(list)
      .filter((entry) => text(entry.name) !== undefined && entry.name !== GUARD_CONTAINER_NAME)
      .map((entry) => {
        const name = text(entry.name) ?? '';
        const containerSpec = specsByName.get(name) ?? {};
        const role: ContainerRole = !init ? 'container' : containerSpec.restartPolicy === 'Always' ? 'sidecar' : 'init';
        return {
          name,
          role,
          image: text(containerSpec.image) ?? text(entry.image),
          status: entry,
          memoryLimit: text(record(record(containerSpec.resources).limits).memory),
        };
      });
  return [...read(status.initContainerStatuses, initSpecs, true), ...read(status.containerStatuses, specs, false)];
}

interface Termination {
  container: ContainerStatusRead;
  terminated: Json;
  exitCode: number;
}

/** The first container that ended badly (init containers first, native sidecars last), from state or lastState. */
function failedTermination(pod: Json): Termination | undefined {
  const ordered = containerStatuses(pod).sort((a, b) => roleOrder(a.role) - roleOrder(b.role));
  for (const container of ordered) {
    for (const key of ['state', 'lastState'] as const) {
      const terminated = record(record(container.status[key]).terminated);
      const exitCode = integer(terminated.exitCode);
      if (exitCode === undefined) continue;
      if (exitCode !== 0 || terminated.reason === 'OOMKilled') return { container, terminated, exitCode };
    }
  }
  return undefined;
}

function roleOrder(role: ContainerRole): number {
  return role === 'sidecar' ? 1 : 0;
}

function containerFields(container: ContainerStatusRead): Partial<HookExplanation> {
  return { container: container.name, containerRole: container.role, image: container.image };
}

function containerWord(container: ContainerStatusRead): string {
  const word = { init: 'init container', sidecar: 'sidecar', container: 'container' }[container.role];
  return `${word} ${container.name}`;
}

function kubectlLogs(base: Base, pod: string, container: string, previous: boolean): string {
  const namespace = base.namespace ? ` -n ${base.namespace}` : '';
  return `kubectl logs${namespace} ${pod} -c ${container}${previous ? ' --previous' : ''}`;
}

function kubectlEvents(base: Base, kind: string, name: string): string {
  const namespace = base.namespace ? ` -n ${base.namespace}` : '';
  return `kubectl events${namespace} --for ${kind.toLowerCase()}/${name}`;
}

/** What a container that ended badly says: its exit, reason, termination message. */
function terminationFacts(
  base: Base,
  podName: string,
  found: Termination,
): Partial<HookExplanation> & {
  reason: HookReason;
  message: string;
  nextStep: string;
} {
  const { container, terminated, exitCode } = found;
  const reasonWord = text(terminated.reason);
  const oom = reasonWord === 'OOMKilled';
  const message =
    `${containerWord(container)} of Pod ${podName} exited with code ${exitCode}` +
    (reasonWord ? ` (${reasonWord})` : '');
  const nextStep = oom
    ? `Raise ${containerWord(container)}'s memory limit${container.memoryLimit ? ` (now ${container.memoryLimit})` : ''} or make it use less.`
    : `Read its log: ${kubectlLogs(base, podName, container.name, found.terminated !== record(container.status.state).terminated)}`;
  return {
    ...containerFields(container),
    reason: oom ? 'OOMKilled' : 'ContainerFailed',
    containerReason: reasonWord,
    exitCode,
    signal: integer(terminated.signal),
    terminationMessage: quote(text(terminated.message)),
    message,
    nextStep,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// A Pod that has not ended: what it waits for.

/** Waiting reasons of an image that cannot be pulled (k8s.io/kubernetes pkg/kubelet/images/types.go). */
const IMAGE_PULL_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
  'SignatureValidationFailed',
]);

type Finding = Omit<HookExplanation, 'kind' | 'namespace' | 'name'>;

/** A live Pod (Pending or Running), read as one finding; `undefined` when it runs as it should. */
function livePodFinding(base: Base, pod: Json): Finding {
  const podName = text(record(pod.metadata).name) ?? '<unnamed>';
  const status = record(pod.status);
  const conditions = records(status.conditions);
  const options = base.options;
  const podStart = text(status.startTime) ?? text(record(pod.metadata).creationTimestamp);

  // The scheduler's verdict: PodScheduled=False, reason Unschedulable, message "0/3 nodes are available: …"
  // (pkg/scheduler/schedule_one.go handleSchedulingFailure, framework/types.go FitError.Error).
  const scheduled = conditions.find((condition) => condition.type === 'PodScheduled');
  if (scheduled && scheduled.status === 'False' && scheduled.reason === 'Unschedulable') {
    const timing = timed(options, text(scheduled.lastTransitionTime) ?? podStart);
    const said = text(scheduled.message);
    return {
      state: overdue(options, timing) ? 'Stuck' : 'Running',
      reason: 'Unschedulable',
      ...timing,
      pod: podName,
      message: `Pod ${podName} cannot be scheduled${said ? `: ${oneLine(said)}` : ''}`,
      quoted: quote(said),
      quotedFrom: 'condition PodScheduled',
      nextStep:
        'Free or add capacity, or change the requests, node selector, affinity or tolerations the scheduler names.',
    };
  }

  const containers = containerStatuses(pod);
  for (const container of containers) {
    const waiting = record(record(container.status.state).waiting);
    const waitingReason = text(waiting.reason);
    if (waitingReason === undefined) continue;
    const waitingMessage = text(waiting.message);
    if (IMAGE_PULL_REASONS.has(waitingReason)) return imagePull(base, pod, podName, container, waiting);
    if (waitingReason === 'CreateContainerConfigError') {
      const missing = missingReference(waitingMessage);
      const timing = timed(options, readySince(conditions, container.role) ?? podStart);
      return {
        state: overdue(options, timing) ? 'Stuck' : 'Running',
        reason: 'CreateContainerConfigError',
        ...timing,
        pod: podName,
        ...containerFields(container),
        containerReason: waitingReason,
        missing,
        message:
          `${containerWord(container)} of Pod ${podName} cannot be created` +
          (waitingMessage ? `: ${oneLine(waitingMessage)}` : ''),
        quoted: quote(waitingMessage),
        quotedFrom: 'container status',
        nextStep: missing
          ? `Create ${missing.kind} ${missing.name}${missing.key ? ` with key ${missing.key}` : ''} in namespace ${base.namespace ?? 'of the hook'}, or fix the reference in ${containerWord(container)}.`
          : `Fix what the kubelet says about ${containerWord(container)}.`,
      };
    }
    if (waitingReason === 'CrashLoopBackOff') {
      const last = record(record(container.status.lastState).terminated);
      const exitCode = integer(last.exitCode);
      const timing = timed(options, readySince(conditions, container.role) ?? podStart);
      const restarts = integer(container.status.restartCount);
      return {
        state: overdue(options, timing) ? 'Stuck' : 'Running',
        reason: 'CrashLoopBackOff',
        ...timing,
        pod: podName,
        ...containerFields(container),
        containerReason: waitingReason,
        exitCode,
        signal: integer(last.signal),
        terminationMessage: quote(text(last.message)),
        message:
          `${containerWord(container)} of Pod ${podName} keeps crashing` +
          (restarts !== undefined ? ` (${restarts} restarts` : ' (') +
          (exitCode !== undefined ? `${restarts !== undefined ? '; ' : ''}last exit code ${exitCode}` : '') +
          (text(last.reason) ? `, ${text(last.reason)}` : '') +
          ')',
        nextStep: `Read the last run's log: ${kubectlLogs(base, podName, container.name, true)}`,
      };
    }
    if (container.role === 'sidecar' && waitingReason === 'PodInitializing') continue;
    return waitingFinding(base, pod, podName, container, waitingReason, waitingMessage);
  }

  // A mesh sidecar (istio-proxy, linkerd-proxy) keeps the Pod running after the hook's own container ended, so the Job
  // never completes (istio#11045, helm#5098).
  const ended = containers.filter(
    (container) =>
      container.role === 'container' && integer(record(record(container.status.state).terminated).exitCode) === 0,
  );
  const stillRunning = containers.filter(
    (container) => container.role === 'container' && isRecord(record(container.status.state).running),
  );
  if (ended.length > 0 && stillRunning.length > 0) {
    const finished = ended
      .map((container) => text(record(record(container.status.state).terminated).finishedAt))
      .filter((value) => value !== undefined)
      .sort()
      .at(-1);
    const timing = timed(options, finished);
    const keeper = stillRunning[0] as ContainerStatusRead;
    return {
      state: overdue(options, timing) ? 'Stuck' : 'Running',
      reason: 'SidecarRunning',
      ...timing,
      pod: podName,
      ...containerFields(keeper),
      message:
        `${ended.map(containerWord).join(', ')} of Pod ${podName} finished, but ${containerWord(keeper)} still runs, ` +
        'so the Pod never completes',
      nextStep:
        `Make ${keeper.name} a native sidecar (an init container with restartPolicy: Always) or keep it out of the hook ` +
        '(sidecar.istio.io/inject: "false", linkerd.io/inject: disabled).',
    };
  }

  if (status.phase === 'Running') {
    return {
      state: 'Running',
      reason: 'Running',
      ...timed(options, podStart),
      pod: podName,
      message: `Pod ${podName} is running`,
      nextStep: runningStep(options),
    };
  }
  return waitingFinding(base, pod, podName, undefined, undefined, undefined);
}

/** The Ready/ContainersReady (or Initialized, for init containers) condition went False when the waiting began. */
function readySince(conditions: readonly Json[], role: ContainerRole): string | undefined {
  const type = role === 'container' ? 'ContainersReady' : 'Initialized';
  const condition = conditions.find((entry) => entry.type === type && entry.status === 'False');
  return text(condition?.lastTransitionTime);
}

/**
 * The kubelet's waiting message for an image says `Back-off pulling image "…"` (pkg/kubelet/images/image_manager.go
 * EnsureImageExists); the registry's own answer is in its `Failed` Event: `Failed to pull image "…": …`
 * (pkg/kubelet/images/image_manager.go pullImage, events.FailedToPullImage). That Event is quoted when there is one.
 */
function imagePull(base: Base, pod: Json, podName: string, container: ContainerStatusRead, waiting: Json): Finding {
  const waitingReason = text(waiting.reason) ?? 'ImagePullBackOff';
  const conditions = records(record(pod.status).conditions);
  const podStart = text(record(pod.status).startTime) ?? text(record(pod.metadata).creationTimestamp);
  const pulls = eventsAbout(base, 'Pod', podName).filter(
    (event) =>
      event.reason === 'Failed' && container.image !== undefined && event.note.includes(`"${container.image}"`),
  );
  const pullEvent = latest(pulls);
  const firstFailure = pulls
    .map((event) => event.firstText)
    .filter((value) => value !== undefined)
    .sort()
    .at(0);
  const timing = timed(base.options, firstFailure ?? readySince(conditions, container.role) ?? podStart);
  const said = pullEvent?.note ?? text(waiting.message);
  return {
    state: overdue(base.options, timing) ? 'Stuck' : 'Running',
    reason: 'ImagePullBackOff',
    ...timing,
    pod: podName,
    ...containerFields(container),
    containerReason: waitingReason,
    message:
      `${containerWord(container)} of Pod ${podName} cannot pull image ${container.image ?? '(unknown)'} ` +
      `(${waitingReason})`,
    quoted: quote(said),
    quotedFrom: pullEvent ? quotedEvent(pullEvent) : said ? 'container status' : undefined,
    nextStep:
      `Check that image ${container.image ?? ''} exists and that the Pod may pull it ` +
      '(the tag, imagePullSecrets, registry access).',
  };
}

/**
 * CreateContainerConfigError's message names what is missing (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables):
 * `secret "db-credentials" not found`, `configmap "app-config" not found`, `couldn't find key password in Secret
 * ns/db-credentials`, `couldn't find key x in ConfigMap ns/app-config`.
 */
function missingReference(message: string | undefined): HookExplanation['missing'] {
  if (message === undefined) return undefined;
  const notFound = /\b(secret|configmap)s? "([^"]+)" not found/i.exec(message);
  if (notFound) return { kind: kindWord(notFound[1] ?? ''), name: notFound[2] ?? '' };
  const noKey = /couldn't find key (\S+) in (Secret|ConfigMap) (?:[^/\s]+\/)?(\S+)/.exec(message);
  if (noKey) return { kind: kindWord(noKey[2] ?? ''), name: noKey[3] ?? '', key: noKey[1] };
  return undefined;
}

function kindWord(word: string): 'Secret' | 'ConfigMap' {
  return word.toLowerCase() === 'secret' ? 'Secret' : 'ConfigMap';
}

/**
 * Any other wait (ContainerCreating, PodInitializing, …): the newest Warning Event about the Pod says why when one
 * does (FailedMount, FailedCreatePodSandBox, …).
 */
function waitingFinding(
  base: Base,
  pod: Json,
  podName: string,
  container: ContainerStatusRead | undefined,
  waitingReason: string | undefined,
  waitingMessage: string | undefined,
): Finding {
  const status = record(pod.status);
  const conditions = records(status.conditions);
  const podStart = text(status.startTime) ?? text(record(pod.metadata).creationTimestamp);
  const timing = timed(base.options, (container ? readySince(conditions, container.role) : undefined) ?? podStart);
  const warning = latest(eventsAbout(base, 'Pod', podName).filter((event) => event.type === 'Warning'));
  const said = warning?.note ?? waitingMessage;
  const stuck = overdue(base.options, timing);
  const what = container
    ? `${containerWord(container)} of Pod ${podName} waits${waitingReason ? ` (${waitingReason})` : ''}`
    : `Pod ${podName} has not started (phase ${text(status.phase) ?? 'unknown'})`;
  return {
    state: stuck ? 'Stuck' : 'Running',
    reason: stuck ? 'Waiting' : 'Starting',
    ...timing,
    pod: podName,
    ...(container ? containerFields(container) : {}),
    containerReason: waitingReason,
    message: said ? `${what}: ${oneLine(said)}` : what,
    quoted: quote(said),
    quotedFrom: warning ? quotedEvent(warning) : said ? 'container status' : undefined,
    nextStep: stuck ? `Read the Pod's Events: ${kubectlEvents(base, 'Pod', podName)}` : runningStep(base.options),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// A Pod that ended.

function podFailure(base: Base, pod: Json): Finding {
  const podName = text(record(pod.metadata).name) ?? '<unnamed>';
  const status = record(pod.status);
  const found = failedTermination(pod);
  if (found) {
    return {
      state: 'Failed',
      ...timed(base.options, text(found.terminated.finishedAt)),
      pod: podName,
      ...terminationFacts(base, podName, found),
    };
  }
  // A Pod failed as a whole: Evicted, DeadlineExceeded (its own activeDeadlineSeconds), a node shutdown.
  const said = text(status.message);
  const podReason = text(status.reason);
  return {
    state: 'Failed',
    reason: 'PodFailed',
    ...timed(base.options, lastTransition(records(status.conditions))),
    pod: podName,
    containerReason: podReason,
    message: `Pod ${podName} failed${podReason ? ` (${podReason})` : ''}${said ? `: ${oneLine(said)}` : ''}`,
    quoted: quote(said),
    quotedFrom: said ? 'Pod status' : undefined,
    nextStep: `Read the Pod's Events: ${kubectlEvents(base, 'Pod', podName)}`,
  };
}

function lastTransition(conditions: readonly Json[]): string | undefined {
  return conditions
    .map((condition) => text(condition.lastTransitionTime))
    .filter((value) => value !== undefined)
    .sort()
    .at(-1);
}

/** When a Pod ended: its latest container finish, else its latest condition change, else its creation. */
function podEnd(pod: Json): string {
  const finishes = containerStatuses(pod)
    .map((container) => text(record(record(container.status.state).terminated).finishedAt))
    .filter((value) => value !== undefined);
  return (
    [...finishes, lastTransition(records(record(pod.status).conditions))]
      .filter((value) => value !== undefined)
      .sort()
      .at(-1) ??
    text(record(pod.metadata).creationTimestamp) ??
    ''
  );
}

// ---------------------------------------------------------------------------------------------------------------
// A bare Pod hook.

function explainPodHook(base: Base, pod: Json): HookExplanation {
  const podName = base.name;
  const status = record(pod.status);
  const head = { kind: base.kind, namespace: base.namespace, name: base.name };
  if (status.phase === 'Succeeded') {
    return {
      ...head,
      state: 'Succeeded',
      reason: 'Completed',
      ...timed(base.options, podEnd(pod)),
      pod: podName,
      message: `Pod ${podName} succeeded`,
      nextStep: 'Nothing to do.',
    };
  }
  if (status.phase === 'Failed') return { ...head, ...podFailure(base, pod) };
  return { ...head, ...livePodFinding(base, pod) };
}

// ---------------------------------------------------------------------------------------------------------------
// A Job.

function condition(job: Json, type: string): Json | undefined {
  return records(record(job.status).conditions).find((entry) => entry.type === type && entry.status === 'True');
}

function conditionSummary(found: Json): JobConditionSummary {
  return { type: text(found.type) ?? '', reason: text(found.reason), message: text(found.message) };
}

function ownedPods(job: Json, pods: readonly unknown[]): Json[] {
  const uid = text(record(job.metadata).uid);
  return pods.filter(isRecord).filter((pod) => {
    const owners = records(record(pod.metadata).ownerReferences);
    return uid === undefined || owners.length === 0 || owners.some((owner) => owner.uid === uid);
  });
}

function explainJob(base: Base, job: Json, podValues: readonly unknown[]): HookExplanation {
  const head = { kind: base.kind, namespace: base.namespace, name: base.name };
  const options = base.options;
  const jobStatus = record(job.status);
  const pods = ownedPods(job, podValues);
  const failedPods = pods
    .filter((pod) => record(pod.status).phase === 'Failed')
    .sort((a, b) => podEnd(a).localeCompare(podEnd(b)));
  const lastFailed = failedPods.at(-1);

  // Complete (and, from 1.31, SuccessCriteriaMet) ends a Job well (pkg/controller/job/job_controller.go).
  const complete = condition(job, 'Complete') ?? condition(job, 'SuccessCriteriaMet');
  if (complete) {
    return {
      ...head,
      state: 'Succeeded',
      reason: 'Completed',
      ...timed(options, text(jobStatus.completionTime) ?? text(complete.lastTransitionTime)),
      jobCondition: conditionSummary(complete),
      message: `Job ${base.name} completed`,
      nextStep: 'Nothing to do.',
    };
  }

  // Failed, or FailureTarget while the controller ends the Pods (1.31+): reason BackoffLimitExceeded ("Job has reached
  // the specified backoff limit"), DeadlineExceeded ("Job was active longer than specified deadline"),
  // PodFailurePolicy, MaxFailedIndexesExceeded, FailedIndexes (pkg/controller/job/job_controller.go syncJob).
  const failed = condition(job, 'Failed') ?? condition(job, 'FailureTarget');
  if (failed) return { ...head, ...jobFailure(base, job, failed, pods, lastFailed) };

  // Suspended (spec.suspend, set by Kueue and its like): the controller runs no Pod, and Argo CD counts the Job as
  // Healthy meanwhile (gitops-engine pkg/health/health_job.go getJobHealth, v3.5.1).
  const suspended = condition(job, 'Suspended');
  if (suspended || record(job.spec).suspend === true) {
    const queue = text(record(record(job.metadata).labels)['kueue.x-k8s.io/queue-name']);
    return {
      ...head,
      state: 'Suspended',
      reason: 'Suspended',
      ...timed(options, text(suspended?.lastTransitionTime) ?? text(record(job.metadata).creationTimestamp)),
      jobCondition: suspended ? conditionSummary(suspended) : undefined,
      message:
        `Job ${base.name} is suspended${queue ? ` (Kueue queue ${queue})` : ''}: no Pod runs until it is resumed; ` +
        'Argo CD counts a suspended Job as Healthy',
      nextStep: queue
        ? `Look at the workload of queue ${queue} (kubectl get workloads -n ${base.namespace ?? ''}) to see why it is not admitted.`
        : 'Resume it (spec.suspend: false) or find the controller that suspends it.',
    };
  }

  const live = pods.filter((pod) => record(pod.status).phase !== 'Failed' && record(pod.status).phase !== 'Succeeded');
  if (live.length > 0) {
    const findings = live.map((pod) => livePodFinding(base, pod));
    const worst = findings.sort((a, b) => severity(b) - severity(a))[0] as Finding;
    const retried =
      lastFailed && worst.reason === 'Running' ? retryNote(base, job, lastFailed, failedPods.length) : undefined;
    return { ...head, ...worst, ...(retried ? { message: `${worst.message}; ${retried}` } : {}) };
  }

  // No Pod runs: the job controller could not create one (FailedCreate, "Error creating: …", pkg/controller/
  // controller_utils.go RealPodControl.CreatePodsWithGenerateName), or has not tried yet.
  const refusals = eventsAbout(base, 'Job', base.name).filter((event) => event.reason === 'FailedCreate');
  const refusal = latest(refusals);
  if (refusal) {
    const firstRefusal = refusals
      .map((event) => event.firstText)
      .filter((value) => value !== undefined)
      .sort()
      .at(0);
    const timing = timed(options, firstRefusal);
    const blockedBy = refuser(refusal.note);
    return {
      ...head,
      state: overdue(options, timing) ? 'Blocked' : 'Running',
      reason: 'FailedCreate',
      ...timing,
      blockedBy,
      message: `Job ${base.name} cannot create its Pod: ${oneLine(refusal.note)}`,
      quoted: quote(refusal.note),
      quotedFrom: quotedEvent(refusal),
      nextStep: overdue(options, timing) ? blockedStep(base, blockedBy, refusal.note) : runningStep(options),
    };
  }
  if (lastFailed) {
    // Between attempts: the controller waits out its backoff before the next Pod.
    return {
      ...head,
      state: 'Running',
      reason: 'Running',
      ...timed(options, podEnd(lastFailed)),
      message: `Job ${base.name} waits to retry; ${retryNote(base, job, lastFailed, failedPods.length)}`,
      nextStep: runningStep(options),
    };
  }
  const managedBy = text(record(job.spec).managedBy);
  const timing = timed(options, text(jobStatus.startTime) ?? text(record(job.metadata).creationTimestamp));
  const stuck = overdue(options, timing);
  const external = managedBy !== undefined && managedBy !== 'kubernetes.io/job-controller';
  return {
    ...head,
    state: stuck ? 'Stuck' : 'Running',
    reason: stuck ? 'NoPods' : 'Starting',
    ...timing,
    message: external
      ? `Job ${base.name} has no Pod: it is managed by ${managedBy}, not the built-in job controller`
      : `Job ${base.name} has no Pod${stuck ? ' and no Event says why' : ' yet'}`,
    nextStep: !stuck
      ? runningStep(options)
      : external
        ? `Check ${managedBy}, which runs this Job.`
        : `Read the Job's Events (${kubectlEvents(base, 'Job', base.name)}) and the job controller's log.`,
  };
}

/** Which finding of several live Pods to report: a Pod that cannot start before one that runs. */
function severity(finding: Finding): number {
  const byState: Record<HookState, number> = {
    Stuck: 4,
    Blocked: 4,
    Failed: 4,
    Running: 1,
    Suspended: 0,
    Succeeded: 0,
  };
  return byState[finding.state] * 10 + (finding.reason === 'Running' ? 0 : 1);
}

function retryNote(base: Base, job: Json, lastFailed: Json, failures: number): string {
  const podName = text(record(lastFailed.metadata).name) ?? '';
  const found = failedTermination(lastFailed);
  const limit = integer(record(job.spec).backoffLimit) ?? 6;
  const cause = found ? terminationFacts(base, podName, found).message : `Pod ${podName} failed`;
  return `earlier attempt failed: ${cause} (${failures} failed of backoffLimit ${limit})`;
}

function jobFailure(base: Base, job: Json, failed: Json, pods: readonly Json[], lastFailed: Json | undefined): Finding {
  const jobCondition = conditionSummary(failed);
  const timing = timed(base.options, text(failed.lastTransitionTime));
  const said = jobCondition.message;
  const ended = `Job ${base.name} failed: ${jobCondition.reason ?? 'Failed'}${said ? ` (${oneLine(said)})` : ''}`;
  const common = {
    state: 'Failed' as const,
    ...timing,
    jobCondition,
    quoted: quote(said),
    quotedFrom: `condition ${jobCondition.type}`,
  };

  if (jobCondition.reason === 'DeadlineExceeded') {
    // The controller deletes the Pods still running at the deadline (pastActiveDeadline); what they waited for, when a
    // Pod is left, says why the Job was slow.
    const deadline = integer(record(job.spec).activeDeadlineSeconds);
    const leftover = pods.find((pod) => record(pod.status).phase !== 'Succeeded');
    const slow = leftover
      ? record(leftover.status).phase === 'Failed'
        ? podFailure(base, leftover)
        : livePodFinding(base, leftover)
      : undefined;
    return {
      ...common,
      reason: 'DeadlineExceeded',
      ...(slow ? pick(slow) : {}),
      message: `${ended}${slow && slow.reason !== 'Running' ? `; ${slow.message}` : ''}`,
      nextStep:
        slow && slow.reason !== 'Running'
          ? `${slow.nextStep} Then rerun the hook.`
          : `Find why it ran past activeDeadlineSeconds${deadline !== undefined ? ` (${deadline}s)` : ''}, or raise it.`,
    };
  }
  if (lastFailed) {
    const cause = podFailure(base, lastFailed);
    return {
      ...common,
      ...pick(cause),
      reason: cause.reason,
      message: `${cause.message}; ${ended}`,
      nextStep: cause.nextStep,
    };
  }
  const reason: HookReason = jobCondition.reason === 'BackoffLimitExceeded' ? 'BackoffLimitExceeded' : 'JobFailed';
  return {
    ...common,
    reason,
    message: `${ended}; its Pods are gone`,
    nextStep: `Read the Job's Events: ${kubectlEvents(base, 'Job', base.name)}`,
  };
}

/** A Pod's facts carried into a Job's explanation (not its state, reason, message or next step). */
function pick(finding: Finding): Partial<Finding> {
  const { pod, container, containerRole, image, containerReason, exitCode, signal, terminationMessage, missing } =
    finding;
  const picked: Partial<Finding> = {
    pod,
    container,
    containerRole,
    image,
    containerReason,
    exitCode,
    signal,
    terminationMessage,
    missing,
  };
  return picked;
}

// ---------------------------------------------------------------------------------------------------------------
// FailedCreate: who refused the Pod.

/**
 * The job controller's note is "Error creating: " and the API server's error (pkg/controller/controller_utils.go).
 * A quota: `pods "x" is forbidden: exceeded quota: compute, requested: …, used: …, limited: …`
 * (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go). Pod Security: `… is forbidden:
 * violates PodSecurity "restricted:latest": …` (staging/src/k8s.io/pod-security-admission/admission/admission.go).
 * OpenShift: `… is forbidden: unable to validate against any security context constraint: …`
 * (openshift/apiserver-library-go pkg/securitycontextconstraints/sccadmission). A webhook:
 * `admission webhook "name" denied the request: …` (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors).
 */
function refuser(note: string): BlockedBy {
  if (note.includes('exceeded quota:') || note.includes('failed quota:')) return 'ResourceQuota';
  if (note.includes('violates PodSecurity')) return 'PodSecurity';
  if (note.includes('security context constraint')) return 'SecurityContextConstraints';
  if (/admission webhook "[^"]*" denied the request/.test(note)) return 'AdmissionWebhook';
  return 'Other';
}

function blockedStep(base: Base, blockedBy: BlockedBy, note: string): string {
  const namespace = base.namespace ?? "the hook's namespace";
  switch (blockedBy) {
    case 'ResourceQuota': {
      const quota = /exceeded quota: ([^,\s]+)/.exec(note)?.[1];
      return `Raise ResourceQuota ${quota ?? ''} in ${namespace} or lower the hook's requests and limits.`.replace(
        '  ',
        ' ',
      );
    }
    case 'PodSecurity':
      return `Make the hook's Pod meet ${namespace}'s Pod Security level (each field is named above).`;
    case 'SecurityContextConstraints':
      return "Let the hook's service account use a fitting SCC, or drop the securityContext fields named above (runAsUser).";
    case 'AdmissionWebhook': {
      const webhook = /admission webhook "([^"]*)" denied/.exec(note)?.[1] ?? '';
      return `Webhook ${webhook} refuses the hook's Pod: change the Pod as its message asks, or ask its owners.`;
    }
    case 'Other':
      return `Fix what the job controller says above; then it creates the Pod on its next try.`;
  }
}
