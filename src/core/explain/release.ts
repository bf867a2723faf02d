// Why a Helm release is failed or hangs, from its record (src/core/release.ts reads it) and the hook objects that
// still exist. Pure: `hookguard why --release` and `--helmrelease` hand it what they read and render the answer.
//
// What Helm records, and when (helm v4.3.2 and v3.21.4 alike, pkg/action/):
// - install.go and upgrade.go store the new revision as pending-install / pending-upgrade, info.last_deployed set to
//   the start, before any hook runs; failRelease writes it failed with "<event> hooks failed: …" as info.description.
// - hooks.go execHook (execHookWithDelayedShutdown in v4) runs an event's hooks by weight, then name (hookByWeight),
//   and writes the record (recordRelease) as each one starts: its last_run phase Running, the earlier ones' final
//   phases. A hook without a delete policy gets before-hook-creation (hookSetDeletePolicy). hook-succeeded deletes
//   only once every hook of the event succeeded, or, when one fails, the ones before it; hook-failed deletes the one
//   that failed.
// - action.go errPending: any other install, upgrade or rollback of a pending-* release is refused with
//   "another operation (install/upgrade/rollback) is in progress", so a release whose Helm is gone stays stuck.
import type { HelmRelease, ReleaseHook } from '../release.js';
import { oneLine, timed } from './readers.js';
import { FAILING_STATES, type ExplainOptions, type HookExplanation, type HookState } from './types.js';

/** pkg/release/common/status.go (v4.3.2; v3.21.4 pkg/release/status.go): the states an operation is under way in. */
const PENDING = new Set(['pending-install', 'pending-upgrade', 'pending-rollback', 'uninstalling']);
/** The hook events each pending status runs (pkg/release/v1/hook.go HookEvent). */
const EVENTS_OF_PENDING: Readonly<Record<string, readonly string[]>> = {
  'pending-install': ['pre-install', 'post-install'],
  'pending-upgrade': ['pre-upgrade', 'post-upgrade'],
  'pending-rollback': ['pre-rollback', 'post-rollback'],
  uninstalling: ['pre-delete', 'post-delete'],
};
/** The kinds hookguard explains from their objects; a hook of another kind (a ConfigMap, a ServiceAccount) is listed. */
const EXPLAINED_KINDS = new Set(['Job', 'Pod']);

/** One hook the release declares, with what exists of it now. */
export interface ReleaseHookEvidence {
  hook: ReleaseHook;
  /** The namespace Helm deploys it to: its manifest's, else the release's. */
  namespace: string;
  /** For a Job or Pod hook: its object's explanation when it exists, null when it does not. Undefined: not read. */
  live: HookExplanation | null | undefined;
  /** The object's creationTimestamp, when it exists. */
  created?: string;
}

/** The Flux HelmRelease the release was asked about through: its conditions, quoted. */
export interface FluxReleaseOwner {
  namespace: string;
  name: string;
  conditions: readonly { type: string; status: string; reason?: string; message?: string }[];
}

export interface ReleaseEvidence {
  release: HelmRelease;
  /** Where the record was read: `Secret shop/sh.helm.release.v1.web.v3`. */
  storedIn: string;
  hooks: readonly ReleaseHookEvidence[];
  helmRelease?: FluxReleaseOwner;
}

/** One declared hook, as Helm recorded it and as it is now. */
export interface ReleaseHookExplanation {
  kind: string;
  namespace: string;
  name: string;
  events: string[];
  deletePolicies: string[];
  weight: number;
  /** `last_run.phase` as Helm wrote it; '' when this revision's record says it never ran. */
  lastRunPhase: string;
  lastRunStartedAt?: string;
  lastRunCompletedAt?: string;
  /** What hookguard makes of the record and the object together, in one line. */
  summary: string;
  /** The object's own explanation (explainHook()), when it exists and this revision ran the hook. */
  live?: HookExplanation;
}

export interface ReleaseExplanation {
  namespace: string;
  name: string;
  revision: number;
  chart: string;
  /** info.status as Helm wrote it. */
  status: string;
  /** info.description, Helm's own words (for a failed release, the error). */
  description?: string;
  storedIn: string;
  /** What the release as a whole is: Succeeded (deployed …), Running, Failed, Stuck. */
  state: HookState;
  message: string;
  nextStep: string;
  since?: string;
  forSeconds?: number;
  hooks: ReleaseHookExplanation[];
  helmRelease?: FluxReleaseOwner;
}

/** Whether the hook is one of the events the pending operation runs. */
function ofPendingOperation(hook: ReleaseHook, release: HelmRelease): boolean {
  return (EVENTS_OF_PENDING[release.status] ?? []).some((event) => hook.events.includes(event));
}

/** One declared hook: the record's phase read with the object's existence (one judgement per pair). */
export function summarizeReleaseHook(evidence: ReleaseHookEvidence, release: HelmRelease): string {
  const { hook, live } = evidence;
  const phase = hook.lastRunPhase;
  const kind = hook.kind;
  // Helm writes a hook's phase as it starts it (recordRelease): none means it has not started it in this revision.
  const notRun = ofPendingOperation(hook, release) ? 'not started' : `not run in revision ${release.version}`;
  if (!EXPLAINED_KINDS.has(kind) || live === undefined) return phase === '' ? notRun : `Helm recorded it as ${phase}`;
  if (live !== null)
    // Helm writes a hook's phase before it creates the object: an object of a hook this revision never started is
    // another run's (an earlier revision's, kept by before-hook-creation, or a later one's), and judges nothing here.
    return phase === ''
      ? `${notRun}; a ${kind} of this name exists from another run${evidence.created !== undefined ? ` (created ${evidence.created})` : ''}: ${live.state}`
      : `Helm recorded it as ${phase}; its ${kind} is ${live.state}`;
  // The object is gone.
  if (phase === '') return ofPendingOperation(hook, release) ? `${notRun}: no ${kind} exists` : notRun;
  if (phase === 'Succeeded')
    return hook.deletePolicies.includes('hook-succeeded')
      ? `Succeeded, then deleted by its delete policy hook-succeeded, as Helm does`
      : `Succeeded; its ${kind} is gone since (deleted by hand, a TTL, or the next run's before-hook-creation)`;
  if (phase === 'Failed')
    return hook.deletePolicies.includes('hook-failed')
      ? `Failed, then deleted by its delete policy hook-failed: its Pods and Events went with it`
      : `Failed; its ${kind} is gone since (deleted by hand or a TTL)`;
  return `Helm recorded it as ${phase}, and its ${kind} is gone: deleted before Helm saw it end`;
}

function quoted(description: string | undefined): string {
  return description ? `: ${oneLine(description)}` : '';
}

/** What to run to end a pending-* release whose Helm is gone: Helm's own way, and Flux's when it owns the release. */
function unlockStep(release: HelmRelease, owner: FluxReleaseOwner | undefined): string {
  const where = `-n ${release.namespace}`;
  const helm =
    release.status === 'pending-install'
      ? `helm uninstall ${release.name} ${where} (a first install has no revision to roll back to), then install again`
      : release.status === 'uninstalling'
        ? `helm uninstall ${release.name} ${where} again`
        : `helm rollback ${release.name} ${where} (back to revision ${release.version - 1}; it ends the pending state), then upgrade again`;
  if (owner === undefined) return `If no helm is still at work on it: ${helm}.`;
  // fluxcd/helm-controller v1.6.2 internal/reconcile (v1.6.3 alike): unlock.go marks a release stuck pending-* failed
  // ("Release unlocked from stale '<status>' state"); the HelmRelease's history does not hold a revision left pending
  // (the process writes it once an action returns), so state.go finds the release Unmanaged and atomic_release.go upgrades it,
  // which runs the upgrade's hooks, not spec.*.remediation (seen in test/cluster/flux.test.ts).
  return `helm-controller marks a pending release failed on its next reconcile, then upgrades it (its history does not hold the pending revision), running the upgrade's hooks: flux reconcile helmrelease ${owner.name} -n ${owner.namespace}; by hand: ${helm}.`;
}

/**
 * A hook of the pending operation whose object ended as its output log policy names (failed under `hook-failed`,
 * succeeded under `hook-succeeded`) while Helm's record still says Running, in a release a Flux HelmRelease owns: Helm
 * records the outcome as soon as it has written the hook's logs (pkg/action/hooks.go execHookWithDelayedShutdown →
 * outputLogsByPolicy), and helm-controller 1.4.0 and later crash right there (fluxcd/helm-controller#1562: Helm's
 * HookOutputFunc never set, called through nil; seen with v1.6.2 in test/cluster/flux.test.ts).
 */
function crashedOnLogPolicy(
  hooks: readonly ReleaseHookExplanation[],
  evidence: ReleaseEvidence,
  status: string,
): { hook: ReleaseHookExplanation; policy: string } | undefined {
  if (evidence.helmRelease === undefined) return undefined;
  const events = EVENTS_OF_PENDING[status] ?? [];
  for (const hook of hooks) {
    if (hook.lastRunPhase !== 'Running' || !hook.events.some((event) => events.includes(event))) continue;
    const record = evidence.hooks.find((item) => item.hook.name === hook.name && item.hook.kind === hook.kind);
    const policies = record?.hook.outputLogPolicies ?? [];
    const state = hook.live?.state;
    if (state === 'Failed' && policies.includes('hook-failed')) return { hook, policy: 'hook-failed' };
    if (state === 'Succeeded' && policies.includes('hook-succeeded')) return { hook, policy: 'hook-succeeded' };
  }
  return undefined;
}

/** The hooks of the running operation whose objects are not done: what a pending release waits on. */
function waitingOn(hooks: readonly ReleaseHookExplanation[], status: string): ReleaseHookExplanation[] {
  const events = EVENTS_OF_PENDING[status] ?? [];
  return hooks.filter(
    (hook) =>
      hook.live !== undefined && hook.live.state !== 'Succeeded' && hook.events.some((event) => events.includes(event)),
  );
}

/** The release as a whole, from its status, its description and the hooks. */
export function explainRelease(evidence: ReleaseEvidence, options: ExplainOptions): ReleaseExplanation {
  const { release } = evidence;
  const hooks: ReleaseHookExplanation[] = [...evidence.hooks]
    // Helm's order (hookByWeight): by weight, then by name as Go compares strings, byte by byte.
    .sort(
      (a, b) => a.hook.weight - b.hook.weight || (a.hook.name < b.hook.name ? -1 : a.hook.name > b.hook.name ? 1 : 0),
    )
    .map((item) => ({
      kind: item.hook.kind,
      namespace: item.namespace,
      name: item.hook.name,
      events: item.hook.events,
      deletePolicies: item.hook.deletePolicies,
      weight: item.hook.weight,
      lastRunPhase: item.hook.lastRunPhase,
      ...(item.hook.lastRunStartedAt !== undefined ? { lastRunStartedAt: item.hook.lastRunStartedAt } : {}),
      ...(item.hook.lastRunCompletedAt !== undefined ? { lastRunCompletedAt: item.hook.lastRunCompletedAt } : {}),
      summary: summarizeReleaseHook(item, release),
      ...(item.live && item.hook.lastRunPhase !== '' ? { live: item.live } : {}),
    }));
  const timing = timed(options, release.lastDeployed);
  const head = {
    namespace: release.namespace,
    name: release.name,
    revision: release.version,
    chart: release.chart,
    status: release.status,
    ...(release.description !== '' ? { description: release.description } : {}),
    storedIn: evidence.storedIn,
    ...timing,
    hooks,
    ...(evidence.helmRelease ? { helmRelease: evidence.helmRelease } : {}),
  };
  // The hooks this revision ran are those with a recorded phase (a later `helm test` records its own); only they
  // carry their object's explanation.
  const failingHook = hooks.find(
    (hook) =>
      hook.lastRunPhase === 'Failed' ||
      hook.lastRunPhase === 'Unknown' ||
      (hook.live !== undefined && FAILING_STATES.has(hook.live.state)),
  );
  if (release.status === 'failed') {
    return {
      ...head,
      state: 'Failed',
      message: `revision ${release.version} failed${quoted(release.description)}`,
      nextStep: failingHook?.live
        ? `Fix hook ${failingHook.kind} ${failingHook.name} (below: ${failingHook.live.nextStep.replace(/\.$/, '')}), then upgrade again; or go back: helm rollback ${release.name} -n ${release.namespace}.`
        : failingHook
          ? `Hook ${failingHook.kind} ${failingHook.name} left nothing to read (${failingHook.summary}): run the operation again with a delete policy that keeps a failed hook (leave out hook-failed) to read why; or go back: helm rollback ${release.name} -n ${release.namespace}.`
          : `Read Helm's error above, fix it and upgrade again; or go back: helm rollback ${release.name} -n ${release.namespace}.`,
    };
  }
  if (PENDING.has(release.status)) {
    const crash = crashedOnLogPolicy(hooks, evidence, release.status);
    if (crash?.hook.live) {
      const { hook, policy } = crash;
      const live = crash.hook.live;
      const fix =
        live.state === 'Failed'
          ? `, fix hook ${hook.kind} ${hook.name} (below: ${live.nextStep.replace(/\.$/, '')})`
          : '';
      // fluxcd/helm-controller v1.6.2 internal/reconcile: restarted, it unlocks the release (unlock.go: failed,
      // "Release unlocked from stale '<status>' state"); its HelmRelease's history, never written by the process that
      // crashed, does not hold it (state.go: Unmanaged), so it upgrades (atomic_release.go): the upgrade's hooks run
      // again, and one carrying the policy whose outcome matches crashes it again.
      return {
        ...head,
        state: 'Failed',
        message: `${release.status}: hook ${hook.kind} ${hook.name} ${live.state === 'Failed' ? 'failed' : 'succeeded'}, and Helm never recorded it: helm-controller most likely crashed (SIGSEGV) writing its logs for helm.sh/hook-output-log-policy: ${policy} (fluxcd/helm-controller#1562)`,
        nextStep: `Take helm.sh/hook-output-log-policy off the chart's hooks (hookguard check --fix --flux-version with the helm-controller's version adds none)${fix}, then publish the chart again: restarted, helm-controller marks the release failed and upgrades it, and crashes again on any upgrade hook that still carries the policy and ends as it names.`,
      };
    }
    const waited = waitingOn(hooks, release.status);
    const stuck = waited.find((hook) => hook.live !== undefined && FAILING_STATES.has(hook.live.state));
    if (stuck?.live)
      return {
        ...head,
        state: stuck.live.state,
        message: `${release.status}: Helm waits on hook ${stuck.kind} ${stuck.name}, which is ${stuck.live.state} (${stuck.live.reason})`,
        nextStep: `${stuck.live.nextStep.replace(/\.$/, '')}; Helm fails the release at its --timeout, or ${unlockStep(release, evidence.helmRelease).replace(/^./, (c) => c.toLowerCase())}`,
      };
    const running = waited[0];
    if (running?.live)
      return {
        ...head,
        state: 'Running',
        message: `${release.status}: Helm waits on hook ${running.kind} ${running.name}, which is ${running.live.state} (${running.live.reason})`,
        nextStep: running.live.nextStep,
      };
    if (timing.forSeconds !== undefined && timing.forSeconds >= options.stuckAfterSeconds)
      return {
        ...head,
        state: 'Stuck',
        message: `${release.status} with no hook running: the Helm that started it has not finished it, and Helm refuses any other install, upgrade or rollback ("another operation (install/upgrade/rollback) is in progress") until it ends`,
        nextStep: unlockStep(release, evidence.helmRelease),
      };
    return {
      ...head,
      state: 'Running',
      message: `${release.status} with no hook running: Helm may be applying or waiting for the release's resources`,
      nextStep: `Wait: it is called stuck after ${options.stuckAfterSeconds}s.`,
    };
  }
  // deployed, superseded, uninstalled: the operation ended well; a hook failed since (`helm test`) is still said.
  if (failingHook !== undefined)
    return {
      ...head,
      state: 'Failed',
      message: `revision ${release.version} ${release.status}${quoted(release.description)}, but hook ${failingHook.kind} ${failingHook.name} failed (${failingHook.summary})`,
      nextStep:
        failingHook.live?.nextStep ??
        `Run it again with a delete policy that keeps a failed hook (leave out hook-failed) to read why.`,
    };
  return {
    ...head,
    state: 'Succeeded',
    message: `revision ${release.version} ${release.status}${quoted(release.description)}`,
    nextStep: 'Nothing to do.',
  };
}
