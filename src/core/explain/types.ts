// The shapes of an explanation: what explainHook() is handed and what it answers, and what its readers share.
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
  /** The container that failed or waits; hookguard's guard init container only when the guard cannot start. */
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

/** The hook being explained, and what every part of the explanation reads. */
export interface Base {
  kind: 'Job' | 'Pod';
  namespace: string | undefined;
  name: string;
  options: ExplainOptions;
  events: readonly HookEvent[];
}

/** One Event, either API's shape. */
export interface HookEvent {
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

export type Json = Record<string, unknown>;

/** What one Pod, or a Job through it, says: an explanation without the hook it belongs to. */
export type Finding = Omit<HookExplanation, 'kind' | 'namespace' | 'name'>;
