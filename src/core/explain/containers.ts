// A Pod's containers: their statuses in the kubelet's order (hookguard's guard only when it cannot start), the one
// that ended badly,// and what a container that cannot start waits for (an image, a Secret or ConfigMap).
import { GUARD_CONTAINER_NAME } from '../annotations.js';
import {
  eventsAbout,
  integer,
  kubectlLogs,
  latest,
  overdue,
  quote,
  quotedEvent,
  record,
  records,
  text,
  timed,
} from './readers.js';
import type { Base, ContainerRole, Finding, HookExplanation, HookReason, Json } from './types.js';

export interface ContainerStatusRead {
  name: string;
  role: ContainerRole;
  image?: string;
  status: Json;
  /** The spec's resources.limits.memory, for OOMKilled. */
  memoryLimit?: string;
  /** hookguard's own guard init container (src/rules/min-runtime.ts), not the hook's. */
  guard: boolean;
}

/**
 * Why a container never started: `StartError` (containerd, kubelet pkg/kubelet/kuberuntime: the runtime could not run
 * its command) and `ContainerCannotRun` (dockershim's word).
 */
const START_FAILURES = new Set(['StartError', 'ContainerCannotRun']);

/**
 * hookguard's guard is what stops the hook when it cannot start: it waits for anything but its turn (an image that
 * cannot be pulled, one not mirrored; a crash loop), or the runtime could not run its command. Otherwise it is never
 * the cause people look for, and is left out.
 */
function guardCannotStart(entry: Json): boolean {
  for (const key of ['state', 'lastState'] as const) {
    const state = record(entry[key]);
    const waitingReason = text(record(state.waiting).reason);
    if (key === 'state' && waitingReason !== undefined && waitingReason !== 'PodInitializing') return true;
    const terminatedReason = text(record(state.terminated).reason);
    if (terminatedReason !== undefined && START_FAILURES.has(terminatedReason)) return true;
  }
  return false;
}

/**
 * A Pod's container statuses in the order the kubelet runs them: init containers (native sidecars marked, from the
 * spec's `restartPolicy: Always`), then containers. hookguard's guard is left out unless it cannot start.
 */
export function containerStatuses(pod: Json): ContainerStatusRead[] {
  const spec = record(pod.spec);
  const status = record(pod.status);
  const specOf = (list: unknown): Map<string, Json> =>
    new Map(records(list).map((container) => [text(container.name) ?? '', container]));
  const initSpecs = specOf(spec.initContainers);
  const specs = specOf(spec.containers);
  const read = (list: unknown, specsByName: Map<string, Json>, init: boolean): ContainerStatusRead[] =>
    records(list)
      .filter(
        (entry) => text(entry.name) !== undefined && (entry.name !== GUARD_CONTAINER_NAME || guardCannotStart(entry)),
      )
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
          guard: init && name === GUARD_CONTAINER_NAME,
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
export function failedTermination(pod: Json): Termination | undefined {
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

export function containerFields(container: ContainerStatusRead): Partial<HookExplanation> {
  return { container: container.name, containerRole: container.role, image: container.image };
}

export function containerWord(container: ContainerStatusRead): string {
  if (container.guard) return `hookguard's guard init container ${container.name}`;
  const word = { init: 'init container', sidecar: 'sidecar', container: 'container' }[container.role];
  return `${word} ${container.name}`;
}

/** Where the guard's image and command are set: hookguard's configuration, not the hook's manifest. */
const GUARD_SETTINGS = 'hookguard adds it (rule min-runtime), so the hook has not started';

/** What a container that ended badly says: its exit, reason, termination message. */
export function terminationFacts(
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
  const nextStep = container.guard
    ? `${GUARD_SETTINGS}: set rules.minRuntime.command to a sleep that rules.minRuntime.image (${container.image ?? 'unknown'}) has, as the default image has /busybox/sleep.`
    : oom
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

/** Waiting reasons of an image that cannot be pulled (k8s.io/kubernetes pkg/kubelet/images/types.go). */
export const IMAGE_PULL_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
  'SignatureValidationFailed',
]);

/** The Ready/ContainersReady (or Initialized, for init containers) condition went False when the waiting began. */
export function readySince(conditions: readonly Json[], role: ContainerRole): string | undefined {
  const type = role === 'container' ? 'ContainersReady' : 'Initialized';
  const condition = conditions.find((entry) => entry.type === type && entry.status === 'False');
  return text(condition?.lastTransitionTime);
}

/**
 * The kubelet's waiting message for an image says `Back-off pulling image "…"` (pkg/kubelet/images/image_manager.go
 * EnsureImageExists); the registry's own answer is in its `Failed` Event: `Failed to pull image "…": …`
 * (pkg/kubelet/images/image_manager.go pullImage, events.FailedToPullImage). That Event is quoted when there is one.
 */
export function imagePull(
  base: Base,
  pod: Json,
  podName: string,
  container: ContainerStatusRead,
  waiting: Json,
): Finding {
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
    nextStep: container.guard
      ? `${GUARD_SETTINGS}: mirror image ${container.image ?? ''} into a registry the nodes can pull from and set ` +
        'rules.minRuntime.image to it (docs/image.md, the guard image).'
      : `Check that image ${container.image ?? ''} exists and that the Pod may pull it ` +
        '(the tag, imagePullSecrets, registry access).',
  };
}

/**
 * CreateContainerConfigError's message names what is missing (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables):
 * `secret "db-credentials" not found`, `configmap "app-config" not found`, `couldn't find key password in Secret
 * ns/db-credentials`, `couldn't find key x in ConfigMap ns/app-config`.
 */
export function missingReference(message: string | undefined): HookExplanation['missing'] {
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
