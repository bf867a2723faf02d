// `hookguard sweep`: finds hook Jobs and Pods stuck on Argo CD's hook finalizer and, with --apply, removes that
// one finalizer with a JSON patch whose `test` op makes any concurrent change fail it rather than be undone.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ARGOCD_HOOK_FINALIZER } from '../core/annotations.js';
import { finalizersOf, metadataOf } from '../core/objects.js';
import type { KubeObject, Operation } from '../core/types.js';
import { backoffDelayMs, type BackoffSettings } from '../kube/backoff.js';
import { ApiCallError, type ApiFailure } from '../errors.js';
import { apiFailure, isTransient } from '../kube/api-failure.js';
import type { SweepClient } from './client.js';
import { qualify, withoutHookFinalizer, type SweptKind } from './qualify.js';

export interface SweepOptions {
  /** Only this namespace; undefined sweeps the cluster. */
  namespace: string | undefined;
  apply: boolean;
  minAgeSeconds: number;
  retry: { maxAttempts: number; backoff: BackoffSettings };
  /** Who runs the sweep, for the audit lines. */
  actor: string;
  now?: () => Date;
}

/**
 * - `would-remove`: qualifies; a dry run left it alone.
 * - `removed`: the finalizer is gone (the API server then deletes the object if it was the last one).
 * - `gone`: the object was deleted before the patch reached it: nothing to do.
 * - `skipped`: holds the hook finalizer but does not qualify (or no longer does, after a concurrent change).
 * - `failed`: qualifies, and the patch did not go through.
 */
export type SweepAction = 'would-remove' | 'removed' | 'gone' | 'skipped' | 'failed';

export interface SweepResult {
  kind: SweptKind;
  namespace: string;
  name: string;
  action: SweepAction;
  /** Why it qualifies, or why it was skipped or failed. */
  reasons: string[];
  ageSeconds?: number;
  finalizersBefore: string[];
  finalizersAfter: string[];
}

export interface SweepReport {
  dryRun: boolean;
  actor: string;
  namespace: string | null;
  results: SweepResult[];
}

const MAX_RETRY_AFTER_MS = 60_000;

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

/** Removes only the hook finalizer, and only if the list is still exactly what was judged. */
export function removalPatch(before: readonly string[]): Operation[] {
  return [
    { op: 'test', path: '/metadata/finalizers', value: [...before] },
    { op: 'replace', path: '/metadata/finalizers', value: withoutHookFinalizer(before) },
  ];
}

async function listAll(
  client: SweepClient,
  kind: SweptKind,
  options: SweepOptions,
  logger: Logger,
): Promise<KubeObject[]> {
  const items: KubeObject[] = [];
  let continueToken: string | undefined;
  do {
    const page = await withRetries(
      `list ${kind}s`,
      () => client.list(kind, options.namespace, continueToken),
      options,
      logger,
    );
    items.push(...page.items);
    continueToken = page.continueToken;
  } while (continueToken !== undefined);
  return items;
}

async function removeFinalizer(
  client: SweepClient,
  kind: SweptKind,
  object: KubeObject,
  options: SweepOptions,
  logger: Logger,
  secondLook = false,
): Promise<SweepResult> {
  const metadata = metadataOf(object);
  const namespace = String(metadata?.namespace ?? '');
  const name = String(metadata?.name ?? '');
  const before = finalizersOf(object);
  const judged = qualify(kind, object, options.now?.() ?? new Date(), options.minAgeSeconds);
  const base = {
    kind,
    namespace,
    name,
    finalizersBefore: before,
    ...(judged.ageSeconds !== undefined ? { ageSeconds: judged.ageSeconds } : {}),
  };
  if (!judged.qualifies) {
    return {
      ...base,
      action: 'skipped',
      reasons: [secondLook ? `changed meanwhile: ${judged.reason}` : judged.reason],
      finalizersAfter: before,
    };
  }
  const after = withoutHookFinalizer(before);
  if (!options.apply) return { ...base, action: 'would-remove', reasons: judged.reasons, finalizersAfter: after };
  try {
    await withRetries(
      `patch ${kind} ${namespace}/${name}`,
      () => client.patch(kind, namespace, name, removalPatch(before)),
      options,
      logger,
    );
  } catch (error) {
    const failure = failureOf(error);
    if (failure.status === 404)
      return {
        ...base,
        action: 'gone',
        reasons: [...judged.reasons, 'deleted before the patch reached it'],
        finalizersAfter: [],
      };
    // 422: the test op failed (the finalizers changed); 409: a conflicting write. Judge the object again, once.
    if ((failure.status === 409 || failure.status === 422) && !secondLook) {
      logger.info(
        { kind, namespace, name, status: failure.status, error: failure.message },
        'object changed since it was listed: judging it again',
      );
      try {
        const fresh = await withRetries(
          `get ${kind} ${namespace}/${name}`,
          () => client.get(kind, namespace, name),
          options,
          logger,
        );
        return await removeFinalizer(client, kind, fresh, options, logger, true);
      } catch (getError) {
        const getFailure = failureOf(getError);
        if (getFailure.status === 404)
          return { ...base, action: 'gone', reasons: [...judged.reasons, 'deleted meanwhile'], finalizersAfter: [] };
        return failed(base, judged.reasons, `re-reading it failed: ${describe(getFailure)}`, logger);
      }
    }
    return failed(base, judged.reasons, describe(failure), logger);
  }
  logger.info(
    {
      audit: {
        action: 'hook-finalizer-removed',
        kind,
        namespace,
        name,
        uid: metadata?.uid,
        ageSeconds: judged.ageSeconds,
        reasons: judged.reasons,
        finalizersBefore: before,
        finalizersAfter: after,
        actor: options.actor,
      },
    },
    `removed ${ARGOCD_HOOK_FINALIZER}`,
  );
  return { ...base, action: 'removed', reasons: judged.reasons, finalizersAfter: after };
}

function describe(failure: ApiFailure): string {
  return failure.status === undefined
    ? `no answer from the API server: ${failure.message}`
    : `HTTP ${failure.status}: ${failure.message}`;
}

function failed(
  base: Omit<SweepResult, 'action' | 'reasons' | 'finalizersAfter'>,
  reasons: string[],
  why: string,
  logger: Logger,
): SweepResult {
  logger.error(
    { kind: base.kind, namespace: base.namespace, name: base.name, error: why },
    `could not remove ${ARGOCD_HOOK_FINALIZER}`,
  );
  return {
    ...base,
    action: 'failed',
    reasons: [...reasons, `patch failed: ${why}`],
    finalizersAfter: base.finalizersBefore,
  };
}

/** One pass over Jobs and Pods. Throws ApiCallError when the cluster cannot be listed. */
export async function sweep(client: SweepClient, options: SweepOptions, logger: Logger): Promise<SweepReport> {
  const results: SweepResult[] = [];
  for (const kind of ['Job', 'Pod'] as const) {
    const candidates = (await listAll(client, kind, options, logger)).filter(
      (object) =>
        metadataOf(object)?.deletionTimestamp !== undefined && finalizersOf(object).includes(ARGOCD_HOOK_FINALIZER),
    );
    // One at a time: a sweep is rare and small, and the API server is spared a burst.
    for (const object of candidates) results.push(await removeFinalizer(client, kind, object, options, logger));
  }
  return { dryRun: !options.apply, actor: options.actor, namespace: options.namespace ?? null, results };
}
