// `hookguard sweep`: finds Jobs and Pods stuck on a finalizer one of its profiles handles (Argo CD's hook finalizer,
// Argo Workflows' pod finalizer) and, with --apply, removes that one finalizer with a JSON patch whose `test` op makes
// any concurrent change fail it rather than be undone. Memory stays flat however large the cluster: lists carry
// metadata only, each page is dropped once its candidates (being deleted, holding a handled finalizer) are noted,
// and only those are read in full.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { SweepProfileId } from '../config/keys.js';
import { finalizersOf, metadataOf, namespacedName } from '../core/objects.js';
import type { KubeObject, ObjectMeta, Operation } from '../core/types.js';
import { backoffDelayMs, type BackoffSettings } from '../kube/backoff.js';
import { ApiCallError, type ApiFailure } from '../errors.js';
import { apiFailure, isTransient } from '../kube/api-failure.js';
import type { SweepClient } from './client.js';
import { finalizerEvent } from './finalizer-event.js';
import { PROFILES, type JudgeContext, type Profile } from './profiles.js';
import { withoutFinalizer, type ApplicationLookup, type Qualification, type SweptKind } from './qualify.js';

export interface SweepOptions {
  /** Only this namespace; undefined sweeps the cluster. */
  namespace: string | undefined;
  apply: boolean;
  profiles: readonly SweepProfileId[];
  /** argocd-hook: an unfinished hook qualifies once deleting this long. */
  minAgeSeconds: number;
  /** argocd-hook: a finished hook qualifies only once deleting this long. */
  finishedGraceSeconds: number;
  /** argocd-hook: where a hook's Application is looked for. */
  applicationLookup: ApplicationLookup;
  /** argo-workflows: a workflow pod qualifies only once deleting this long. */
  argoWorkflowsGraceSeconds: number;
  retry: { maxAttempts: number; backoff: BackoffSettings };
  /** Who runs the sweep, for the audit lines and Events. */
  actor: string;
  /** Which sweep reports the Events (reportingInstance): its pod's name in a cluster. */
  reportingInstance: string;
  now?: () => Date;
}

/**
 * - `would-remove`: qualifies; a dry run left it alone.
 * - `removed`: the finalizer is gone (the API server then deletes the object if it was the last one).
 * - `gone`: the object was deleted before the patch reached it: nothing to do.
 * - `skipped`: holds the finalizer but does not qualify (or no longer does, after a concurrent change).
 * - `failed`: qualifies and the patch did not go through, or it could not be judged (its Workflow unreadable).
 */
export type SweepAction = 'would-remove' | 'removed' | 'gone' | 'skipped' | 'failed';
export const SWEEP_ACTIONS: readonly SweepAction[] = ['would-remove', 'removed', 'gone', 'skipped', 'failed'];

export interface SweepResult {
  kind: SweptKind;
  namespace: string;
  name: string;
  profile: SweepProfileId;
  finalizer: string;
  action: SweepAction;
  /** Why it qualifies, or why it was skipped or failed. */
  reasons: string[];
  ageSeconds?: number;
  finalizersBefore: string[];
  finalizersAfter: string[];
}

/** Per profile: the objects being deleted that hold its finalizer, and what became of them. */
export type ProfileTally = { candidates: number } & Record<SweepAction, number>;

export interface ListingTally {
  objects: number;
  pages: number;
  bytes: number;
  /** Listings begun again after the continue token expired. */
  restarts: number;
}

export interface SweepSummary {
  dryRun: boolean;
  namespace: string | null;
  profiles: Partial<Record<SweepProfileId, ProfileTally>>;
  listed: Partial<Record<SweptKind, ListingTally>>;
  /** Events that could not be written (the removal itself stands). */
  eventsFailed: number;
  durationMs: number;
}

export interface SweepReport {
  dryRun: boolean;
  actor: string;
  namespace: string | null;
  results: SweepResult[];
  summary: SweepSummary;
}

const MAX_RETRY_AFTER_MS = 60_000;
/**
 * How many times a listing whose continue token expired (410 Gone, reason Expired) begins again. A token expires
 * when etcd compacts past the list's resourceVersion, every 5 minutes by default (kube-apiserver
 * --etcd-compaction-interval), and a listing of 100,000 objects takes seconds: one restart covers the compaction
 * that fell inside a listing, a second the rare listing slow enough to meet the next one too. A listing that keeps
 * expiring takes longer than the compaction interval, and beginning again would not help: the sweep then fails,
 * saying why, rather than fall back to one unpaged list of the whole cluster as client-go's pager does.
 */
export const MAX_LIST_RESTARTS = 2;

/** The failure behind an error from withRetries (already read), or from anything else (read now). */
function failureOf(error: unknown): ApiFailure {
  return error instanceof ApiCallError ? error.failure : apiFailure(error);
}

/** Retries throttling (429, honouring Retry-After), 5xx and lost connections with backoff; anything else at once. */
async function withRetries<T>(what: string, call: () => Promise<T>, options: SweepOptions, logger: Logger): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const failure = apiFailure(error);
      if (!isTransient(failure) || attempt + 1 >= options.retry.maxAttempts) throw new ApiCallError(failure);
      // The server's Retry-After wins, within reason: a one-shot CronJob must not sleep for an hour.
      const delayMs =
        failure.retryAfterSeconds !== undefined
          ? Math.min(failure.retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS)
          : backoffDelayMs(attempt, options.retry.backoff);
      logger.warn(
        {
          call: what,
          status: failure.status ?? null,
          error: failure.message,
          retryInMs: delayMs,
          attempt: attempt + 1,
        },
        'API call failed; retrying',
      );
      await sleep(delayMs);
    }
  }
}

/** Removes only `finalizer`, and only if the list is still exactly what was judged. */
export function removalPatch(before: readonly string[], finalizer: string): Operation[] {
  return [
    { op: 'test', path: '/metadata/finalizers', value: [...before] },
    { op: 'replace', path: '/metadata/finalizers', value: withoutFinalizer(before, finalizer) },
  ];
}

/** An object worth reading in full: being deleted, holding the finalizer of at least one profile. */
interface Candidate {
  namespace: string;
  name: string;
  profiles: Profile[];
}

function candidateOf(metadata: ObjectMeta, profiles: readonly Profile[]): Candidate | undefined {
  if (typeof metadata.deletionTimestamp !== 'string' || !Array.isArray(metadata.finalizers)) return undefined;
  const finalizers = metadata.finalizers;
  const held = profiles.filter((profile) => finalizers.includes(profile.finalizer));
  if (held.length === 0) return undefined;
  return { namespace: String(metadata.namespace ?? ''), name: String(metadata.name ?? ''), profiles: held };
}

/** Every page of one kind, metadata only; keeps the candidates and drops the rest of each page. */
async function listCandidates(
  client: SweepClient,
  kind: SweptKind,
  profiles: readonly Profile[],
  run: Run,
): Promise<Candidate[]> {
  const tally: ListingTally = { objects: 0, pages: 0, bytes: 0, restarts: 0 };
  run.summary.listed[kind] = tally;
  for (;;) {
    const candidates: Candidate[] = [];
    let continueToken: string | undefined;
    try {
      do {
        const token = continueToken;
        const page = await withRetries(
          `list ${kind}s`,
          () => client.listMetadata(kind, run.options.namespace, token),
          run.options,
          run.logger,
        );
        tally.pages += 1;
        tally.bytes += page.bytes;
        tally.objects += page.objects;
        for (const metadata of page.items) {
          const candidate = candidateOf(metadata, profiles);
          if (candidate) candidates.push(candidate);
        }
        continueToken = page.continueToken;
      } while (continueToken !== undefined);
      return candidates;
    } catch (error) {
      const expired = continueToken !== undefined && failureOf(error).status === 410;
      if (!expired || tally.restarts >= MAX_LIST_RESTARTS) throw error;
      tally.restarts += 1;
      run.logger.warn(
        { kind, restart: tally.restarts, maxRestarts: MAX_LIST_RESTARTS, listedSoFar: tally.objects },
        `the continue token of the ${kind} list expired (410 Gone): listing again from the start`,
      );
      tally.objects = 0;
    }
  }
}

/** What one pass needs at hand. */
interface Run {
  client: SweepClient;
  options: SweepOptions;
  logger: Logger;
  summary: SweepSummary;
}

function now(options: SweepOptions): Date {
  return options.now?.() ?? new Date();
}

function judgeContext(run: Run): JudgeContext {
  return {
    now: now(run.options),
    hookTiming: { minAgeSeconds: run.options.minAgeSeconds, finishedGraceSeconds: run.options.finishedGraceSeconds },
    applicationLookup: run.options.applicationLookup,
    argoWorkflowsGraceSeconds: run.options.argoWorkflowsGraceSeconds,
    readApplication: async (namespace, name) => {
      try {
        return await withRetries(
          `get Application ${namespace}/${name}`,
          () => run.client.getApplication(namespace, name),
          run.options,
          run.logger,
        );
      } catch (error) {
        const status = failureOf(error).status;
        // None there, or RBAC without Applications: the grace period alone guards the hook, and the reasons say so.
        if (status === 404) return null;
        if (status === 403) return 'forbidden';
        throw error;
      }
    },
    readWorkflow: async (namespace, name) => {
      try {
        return await withRetries(
          `get Workflow ${namespace}/${name}`,
          () => run.client.getWorkflow(namespace, name),
          run.options,
          run.logger,
        );
      } catch (error) {
        if (failureOf(error).status === 404) return null;
        throw error;
      }
    },
  };
}

function describe(failure: ApiFailure): string {
  return failure.status === undefined
    ? `no answer from the API server: ${failure.message}`
    : `HTTP ${failure.status}: ${failure.message}`;
}

type ResultBase = Omit<SweepResult, 'action' | 'reasons' | 'finalizersAfter'>;

/** The result, and the object as it is after it (undefined when that is unknown or gone). */
interface Outcome {
  result: SweepResult;
  object: KubeObject | undefined;
}

async function recordEvent(
  run: Run,
  base: ResultBase,
  object: KubeObject,
  outcome: 'removed' | 'failed',
  reasons: string[],
  finalizersAfter: string[],
): Promise<void> {
  const event = finalizerEvent({
    kind: base.kind,
    object,
    finalizer: base.finalizer,
    outcome,
    reasons,
    finalizersBefore: base.finalizersBefore,
    finalizersAfter,
    actor: run.options.actor,
    reportingInstance: run.options.reportingInstance,
    now: now(run.options),
  });
  try {
    await withRetries(
      `create Event for ${base.kind} ${base.namespace}/${base.name}`,
      () => run.client.createEvent(base.namespace, event),
      run.options,
      run.logger,
    );
  } catch (error) {
    // The removal stands either way; the audit line on stderr is the record of last resort.
    run.summary.eventsFailed += 1;
    run.logger.warn(
      {
        kind: base.kind,
        namespace: base.namespace,
        name: base.name,
        reason: event.reason,
        error: describe(failureOf(error)),
      },
      'could not write the Event',
    );
  }
}

async function failed(
  run: Run,
  base: ResultBase,
  object: KubeObject,
  reasons: string[],
  why: string,
): Promise<Outcome> {
  run.logger.error(
    { kind: base.kind, namespace: base.namespace, name: base.name, error: why },
    `could not remove ${base.finalizer}`,
  );
  const all = [...reasons, `patch failed: ${why}`];
  await recordEvent(run, base, object, 'failed', all, base.finalizersBefore);
  return { result: { ...base, action: 'failed', reasons: all, finalizersAfter: base.finalizersBefore }, object };
}

/** Judges one object for one profile and, with --apply, removes the profile's finalizer from it. */
async function removeFinalizer(
  run: Run,
  kind: SweptKind,
  profile: Profile,
  object: KubeObject,
  secondLook = false,
): Promise<Outcome> {
  const { client, options, logger } = run;
  const { namespace, name } = namespacedName(object);
  const before = finalizersOf(object);
  const where = { kind, namespace, name, profile: profile.id, finalizer: profile.finalizer };
  let judged: Qualification;
  try {
    judged = await profile.judge(kind, object, judgeContext(run));
  } catch (error) {
    const why = `could not be judged: ${describe(failureOf(error))}`;
    logger.error({ ...where, error: why }, `could not judge ${profile.finalizer}`);
    const result: SweepResult = {
      ...where,
      action: 'failed',
      reasons: [why],
      finalizersBefore: before,
      finalizersAfter: before,
    };
    return { result, object };
  }
  const base: ResultBase = {
    ...where,
    finalizersBefore: before,
    ...(judged.ageSeconds !== undefined ? { ageSeconds: judged.ageSeconds } : {}),
  };
  if (!judged.qualifies) {
    const reason = secondLook ? `changed meanwhile: ${judged.reason}` : judged.reason;
    return { result: { ...base, action: 'skipped', reasons: [reason], finalizersAfter: before }, object };
  }
  const after = withoutFinalizer(before, profile.finalizer);
  if (!options.apply)
    return { result: { ...base, action: 'would-remove', reasons: judged.reasons, finalizersAfter: after }, object };
  let patched: KubeObject;
  try {
    patched = await withRetries(
      `patch ${kind} ${namespace}/${name}`,
      () => client.patch(kind, namespace, name, removalPatch(before, profile.finalizer)),
      options,
      logger,
    );
  } catch (error) {
    const failure = failureOf(error);
    if (failure.status === 404) {
      const reasons = [...judged.reasons, 'deleted before the patch reached it'];
      return { result: { ...base, action: 'gone', reasons, finalizersAfter: [] }, object: undefined };
    }
    // 422: the test op failed (the finalizers changed); 409: a conflicting write. Judge the object again, once.
    if ((failure.status === 409 || failure.status === 422) && !secondLook) {
      logger.info(
        { kind, namespace, name, status: failure.status, error: failure.message },
        'object changed since it was read: judging it again',
      );
      try {
        const fresh = await withRetries(
          `get ${kind} ${namespace}/${name}`,
          () => client.get(kind, namespace, name),
          options,
          logger,
        );
        return await removeFinalizer(run, kind, profile, fresh, true);
      } catch (getError) {
        const getFailure = failureOf(getError);
        if (getFailure.status === 404) {
          const reasons = [...judged.reasons, 'deleted meanwhile'];
          return { result: { ...base, action: 'gone', reasons, finalizersAfter: [] }, object: undefined };
        }
        return failed(run, base, object, judged.reasons, `re-reading it failed: ${describe(getFailure)}`);
      }
    }
    return failed(run, base, object, judged.reasons, describe(failure));
  }
  logger.info(
    {
      audit: {
        action: 'finalizer-removed',
        profile: profile.id,
        finalizer: profile.finalizer,
        kind,
        namespace,
        name,
        uid: metadataOf(object)?.uid,
        ageSeconds: judged.ageSeconds,
        reasons: judged.reasons,
        finalizersBefore: before,
        finalizersAfter: after,
        actor: options.actor,
      },
    },
    `removed ${profile.finalizer}`,
  );
  await recordEvent(run, base, object, 'removed', judged.reasons, after);
  return { result: { ...base, action: 'removed', reasons: judged.reasons, finalizersAfter: after }, object: patched };
}

/** Reads a candidate in full and runs each of its profiles on it, each on the object the one before left. */
async function sweepCandidate(run: Run, kind: SweptKind, candidate: Candidate): Promise<SweepResult[]> {
  const { namespace, name } = candidate;
  let object: KubeObject | undefined;
  try {
    object = await withRetries(
      `get ${kind} ${namespace}/${name}`,
      () => run.client.get(kind, namespace, name),
      run.options,
      run.logger,
    );
  } catch (error) {
    const failure = failureOf(error);
    const gone = failure.status === 404;
    return candidate.profiles.map((profile) => ({
      kind,
      namespace,
      name,
      profile: profile.id,
      finalizer: profile.finalizer,
      action: gone ? 'gone' : 'failed',
      reasons: [gone ? 'deleted before it was read' : `reading it failed: ${describe(failure)}`],
      finalizersBefore: [],
      finalizersAfter: [],
    }));
  }
  const results: SweepResult[] = [];
  for (const profile of candidate.profiles) {
    if (object === undefined) break;
    const outcome = await removeFinalizer(run, kind, profile, object);
    results.push(outcome.result);
    object = outcome.object;
  }
  return results;
}

function emptyTally(): ProfileTally {
  return { candidates: 0, 'would-remove': 0, removed: 0, gone: 0, skipped: 0, failed: 0 };
}

/**
 * One pass over Jobs and Pods for the chosen profiles; ends with one summary log line. Throws ApiCallError when the
 * cluster cannot be listed.
 */
export async function sweep(client: SweepClient, options: SweepOptions, logger: Logger): Promise<SweepReport> {
  const started = Date.now();
  const profiles = options.profiles.map((id) => PROFILES[id]);
  const summary: SweepSummary = {
    dryRun: !options.apply,
    namespace: options.namespace ?? null,
    profiles: Object.fromEntries(profiles.map((profile) => [profile.id, emptyTally()])),
    listed: {},
    eventsFailed: 0,
    durationMs: 0,
  };
  const run: Run = { client, options, logger, summary };
  const results: SweepResult[] = [];
  try {
    for (const kind of ['Job', 'Pod'] as const) {
      const handling = profiles.filter((profile) => profile.kinds.includes(kind));
      if (handling.length === 0) continue;
      const candidates = await listCandidates(client, kind, handling, run);
      // One at a time: a sweep is rare and small, and the API server is spared a burst.
      for (const candidate of candidates) {
        for (const result of await sweepCandidate(run, kind, candidate)) {
          const tally = summary.profiles[result.profile] as ProfileTally;
          tally.candidates += 1;
          tally[result.action] += 1;
          results.push(result);
        }
      }
    }
  } catch (error) {
    summary.durationMs = Date.now() - started;
    logger.error({ summary, error: describe(failureOf(error)) }, 'sweep stopped before the end');
    throw error;
  }
  summary.durationMs = Date.now() - started;
  logger.info({ summary }, 'sweep finished');
  return { dryRun: !options.apply, actor: options.actor, namespace: options.namespace ?? null, results, summary };
}
