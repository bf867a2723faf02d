// A Pod: one that has not ended (what it waits for), one that ended badly, and a bare Pod hook.
import { isRecord } from '../objects.js';
import {
  containerFields,
  containerStatuses,
  containerWord,
  failedTermination,
  IMAGE_PULL_REASONS,
  imagePull,
  missingReference,
  readySince,
  terminationFacts,
  type ContainerStatusRead,
} from './containers.js';
import {
  eventsAbout,
  integer,
  kubectlEvents,
  kubectlLogs,
  latest,
  oneLine,
  overdue,
  quote,
  quotedEvent,
  record,
  records,
  runningStep,
  text,
  timed,
} from './readers.js';
import type { Base, Finding, HookExplanation, Json } from './types.js';

/** A live Pod (Pending or Running), read as one finding; `undefined` when it runs as it should. */
export function livePodFinding(base: Base, pod: Json): Finding {
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

export function podFailure(base: Base, pod: Json): Finding {
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
export function podEnd(pod: Json): string {
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

export function explainPodHook(base: Base, pod: Json): HookExplanation {
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
