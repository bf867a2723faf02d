// A Job: complete, failed (and by which Pod), suspended, running through its Pods, or without a Pod (refused, between
// attempts, not yet created).
import { conditionTrue, isRecord } from '../objects.js';
import { failedTermination, terminationFacts } from './containers.js';
import { livePodFinding, podEnd, podFailure } from './pod.js';
import {
  eventsAbout,
  integer,
  kubectlEvents,
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
  uncombined,
} from './readers.js';
import { blockedStep, refuser } from './refusals.js';
import type { Base, Finding, HookExplanation, HookReason, HookState, JobConditionSummary, Json } from './types.js';

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

export function explainJob(base: Base, job: Json, podValues: readonly unknown[]): HookExplanation {
  const head = { kind: base.kind, namespace: base.namespace, name: base.name };
  const options = base.options;
  const jobStatus = record(job.status);
  const pods = ownedPods(job, podValues);
  const failedPods = pods
    .filter((pod) => record(pod.status).phase === 'Failed')
    .sort((a, b) => podEnd(a).localeCompare(podEnd(b)));
  const lastFailed = failedPods.at(-1);

  // Complete (and, from 1.31, SuccessCriteriaMet) ends a Job well (pkg/controller/job/job_controller.go).
  const complete = conditionTrue(job, ['Complete', 'SuccessCriteriaMet']);
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
  const failed = conditionTrue(job, ['Failed', 'FailureTarget']);
  if (failed) return { ...head, ...jobFailure(base, job, failed, pods, lastFailed) };

  // Suspended (spec.suspend, set by Kueue and its like): the controller runs no Pod. Argo CD v3.3 to v3.5 (the same
  // code at each; the engines of 2.14.3, 2.14.21, 3.0.0, 3.1.16 and 3.2.12 say the same of real Jobs in
  // test/cluster/argo-sync.test.ts):
  // gitops-engine pkg/health/health_job.go getBatchv1JobHealth calls a Job with a Suspended=True
  // condition Suspended, and one with spec.suspend but no condition yet Progressing; getOperationPhase
  // (pkg/sync/sync_context.go) makes both a Running hook, so the sync waits. A hook that has not run for
  // stuckAfterSeconds is stuck, whatever that health says.
  const suspended = conditionTrue(job, ['Suspended']);
  if (suspended || record(job.spec).suspend === true) {
    const queue = text(record(record(job.metadata).labels)['kueue.x-k8s.io/queue-name']);
    const timing = timed(options, text(suspended?.lastTransitionTime) ?? text(record(job.metadata).creationTimestamp));
    return {
      ...head,
      state: overdue(options, timing) ? 'Stuck' : 'Suspended',
      reason: 'Suspended',
      ...timing,
      jobCondition: suspended ? conditionSummary(suspended) : undefined,
      message:
        `Job ${base.name} is suspended${queue ? ` (Kueue queue ${queue})` : ''}: no Pod runs until it is resumed; ` +
        `Argo CD's health calls it ${suspended ? 'Suspended' : 'Progressing'} and a sync waits for it`,
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
    // What the latest try was told, without the event recorder's "(combined from similar events): ".
    const note = uncombined(refusal.note);
    const blockedBy = refuser(note);
    return {
      ...head,
      state: overdue(options, timing) ? 'Blocked' : 'Running',
      reason: 'FailedCreate',
      ...timing,
      blockedBy,
      message: `Job ${base.name} cannot create its Pod: ${oneLine(note)}`,
      quoted: quote(note),
      quotedFrom: quotedEvent(refusal),
      nextStep: overdue(options, timing) ? blockedStep(base, blockedBy, note) : runningStep(options),
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
