// The hook watcher: on the Lease holder, a list+watch of the hook Jobs and bare hook Pods hookguard admitted (rule
// hook-label's label selector), and for each one that fails or gets stuck one events.k8s.io/v1 Warning, HookFailed or
// HookStuck, regarding the hook and one regarding its Argo CD Application, carrying explainHook()'s explanation. A
// hook is explained (its Pods and Events read) only once it looks failed or has run longer than the stuck threshold,
// and again at most every recheckSeconds; each Event has a name fixed by hook, state and object, so a resync, a restart
// or another leader never posts it twice.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { HOOKGUARD_EVENT_LOGS } from '../../core/annotations.js';
import { explainHook, FAILING_STATES, type HookExplanation, type HookReason } from '../../core/explain/index.js';
import { fluxOwnerOf } from '../../core/flux.js';
import { annotation, metadataOf, namespacedName } from '../../core/objects.js';
import type { KubeObject } from '../../core/types.js';
import { namespaceTerminating } from '../../kube/api-failure.js';
import { describeError, Reflector, type ReflectorSettings } from '../../kube/reflector.js';
import { applicationsOf, type ApplicationLookup } from '../../sweep/qualify.js';
import { kubeEvent } from '../events.js';
import { HOOK_SELECTOR, type HookWatchClient } from './client.js';
import { redactLogLines } from './redact.js';
import { eventName, eventNote, eventReasonOf, triage } from './triage.js';

export const REPORTING_CONTROLLER = 'hookguard.io/hook-watcher';
export const EVENT_ACTION = 'ExplainHook';
/** At most this many hooks are explained per pass (each costs a few reads); the rest wait for the next pass. */
const EXPLAIN_PER_PASS = 20;
/** How often the watcher looks again without a change: a hook becomes overdue without any watch event. */
const PASS_INTERVAL_MS = 10_000;

export interface HookWatchSettings {
  stuckAfterSeconds: number;
  recheckSeconds: number;
  /** Log lines may go into an Event where the hook or its namespace says hookguard.io/event-logs: "true". */
  eventLogs: boolean;
  /** The Event goes on the Flux HelmRelease that owns the hook too. */
  helmReleaseEvents: boolean;
  reportingInstance: string;
  applicationLookup: ApplicationLookup;
  reflector: ReflectorSettings;
}

export interface HookWatchObserver {
  /** A hook newly found failing or stuck, by explainHook()'s bounded reason. */
  failure(reason: HookReason): void;
  /** How many watched hooks are failing or stuck now. */
  failing(count: number): void;
}

interface Tracked {
  /** Event reasons posted (or found posted) for this hook. */
  posted: Set<string>;
  nextCheckMs: number;
  failing: boolean;
}

/**
 * Waits until `woken` resolves, `ms` pass or `signal` aborts, whichever comes first, and clears its timer either way:
 * a wake must not leave a PASS_INTERVAL_MS timer behind (one per watch event, each holding its closure until it fires).
 */
export async function wakeOrAfter(ms: number, woken: Promise<void>, signal: AbortSignal): Promise<void> {
  const waited = new AbortController();
  try {
    await Promise.race([
      woken,
      sleep(ms, undefined, { signal: AbortSignal.any([signal, waited.signal]) }).catch(() => undefined),
    ]);
  } finally {
    waited.abort();
  }
}

function uidOf(object: KubeObject): string {
  const uid = metadataOf(object)?.uid;
  return typeof uid === 'string' ? uid : '';
}

export class HookWatcher {
  private readonly objects = { Job: [] as readonly KubeObject[], Pod: [] as readonly KubeObject[] };
  private readonly tracked = new Map<string, Tracked>();
  private wake: (() => void) | undefined;
  /** A list or watch change came in since the pass began: the next pass starts at once, not a PASS_INTERVAL_MS later. */
  private changedSincePass = false;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly client: HookWatchClient,
    private readonly settings: HookWatchSettings,
    private readonly logger: Logger,
    private readonly observer: HookWatchObserver,
    private readonly now: () => number = Date.now,
  ) {}

  /** Watches and explains until `signal` aborts (leadership lost, or stopping). */
  async run(signal: AbortSignal): Promise<void> {
    const reflectors = (['Job', 'Pod'] as const).map(
      (kind) =>
        new Reflector(
          this.kubeConfig,
          {
            description: `hook ${kind}s`,
            path: kind === 'Job' ? '/apis/batch/v1/jobs' : '/api/v1/pods',
            labelSelector: HOOK_SELECTOR,
            list: () => this.client.listHooks(kind),
            whileLost: 'no hook Events until it is back',
          },
          this.settings.reflector,
          this.logger,
          (objects) => {
            this.objects[kind] = objects;
            this.changedSincePass = true;
            this.wake?.();
          },
        ),
    );
    for (const reflector of reflectors) reflector.start();
    try {
      while (!signal.aborted) {
        this.changedSincePass = false;
        await this.pass(signal);
        if (this.changedSincePass) continue;
        await wakeOrAfter(PASS_INTERVAL_MS, new Promise<void>((resolve) => (this.wake = resolve)), signal);
      }
    } finally {
      await Promise.all(reflectors.map((reflector) => reflector.stop()));
    }
  }

  /** One look at every watched hook: explains those due, posts what is new, forgets those gone. */
  async pass(signal?: AbortSignal): Promise<void> {
    const now = this.now();
    const seen = new Set<string>();
    let explained = 0;
    for (const object of [...this.objects.Job, ...this.objects.Pod]) {
      if (signal?.aborted) return;
      const uid = uidOf(object);
      if (uid === '') continue;
      seen.add(uid);
      const state = triage(object, now, this.settings.stuckAfterSeconds);
      const tracked = this.tracked.get(uid) ?? { posted: new Set<string>(), nextCheckMs: 0, failing: false };
      this.tracked.set(uid, tracked);
      if (state === 'finished' || state === 'young') {
        tracked.failing = false;
        continue;
      }
      if (tracked.nextCheckMs > now || explained >= EXPLAIN_PER_PASS) continue;
      explained += 1;
      try {
        const explanation = await this.explain(object, now);
        tracked.failing = FAILING_STATES.has(explanation.state);
        if (tracked.failing) await this.post(object, explanation, tracked);
        // A failed hook stays failed: once its Event is out, it is not read again.
        tracked.nextCheckMs =
          state === 'failed' && tracked.posted.has('HookFailed') ? Infinity : now + this.settings.recheckSeconds * 1000;
      } catch (error) {
        if (namespaceTerminating(error)) {
          // Deleting a namespace stops its hooks' Pods, and the Jobs fail; nothing can be written there any more, and
          // the hooks go with it: no warning, no retry (the API server would refuse each one with 403).
          tracked.nextCheckMs = Infinity;
          tracked.failing = false;
          this.logger.debug(
            { hook: `${object.kind} ${metadataOf(object)?.namespace}/${metadataOf(object)?.name}` },
            "the hook's namespace is being deleted: no Event",
          );
          continue;
        }
        tracked.nextCheckMs = now + this.settings.recheckSeconds * 1000;
        this.logger.warn(
          {
            hook: `${object.kind} ${metadataOf(object)?.namespace}/${metadataOf(object)?.name}`,
            error: describeError(error),
          },
          'could not explain a hook or post its Event; trying again later',
        );
      }
    }
    for (const uid of this.tracked.keys()) if (!seen.has(uid)) this.tracked.delete(uid);
    this.observer.failing([...this.tracked.values()].filter((tracked) => tracked.failing).length);
  }

  private async explain(object: KubeObject, now: number): Promise<HookExplanation> {
    const evidence = await this.client.evidence(object);
    return explainHook(evidence, { now, stuckAfterSeconds: this.settings.stuckAfterSeconds });
  }

  private async post(object: KubeObject, explanation: HookExplanation, tracked: Tracked): Promise<void> {
    const reason = eventReasonOf(explanation);
    if (tracked.posted.has(reason)) return;
    const { namespace, name } = namespacedName(object);
    const uid = uidOf(object);
    const note = eventNote(explanation, await this.logLines(object, explanation));
    const common = {
      type: 'Warning' as const,
      reason,
      action: EVENT_ACTION,
      note,
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: this.settings.reportingInstance,
      now: new Date(this.now()),
    };
    const onHook = await this.client.createEvent(
      namespace,
      kubeEvent({
        ...common,
        regarding: object,
        apiVersion: object.kind === 'Job' ? 'batch/v1' : 'v1',
        kind: String(object.kind),
        name: eventName(name, uid, reason, 'hook'),
      }),
    );
    for (const ref of applicationsOf(object, this.settings.applicationLookup)) {
      const application = await this.client.getApplication(ref.namespace, ref.name);
      if (!application) continue;
      await this.client.createEvent(
        ref.namespace,
        kubeEvent({
          ...common,
          regarding: application,
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Application',
          name: eventName(ref.name, uid, reason, `${ref.namespace}/${ref.name}`),
        }),
      );
    }
    const owner = this.settings.helmReleaseEvents ? fluxOwnerOf(object) : undefined;
    const helmRelease = owner && (await this.client.getHelmRelease(owner.namespace, owner.name));
    if (owner && helmRelease)
      await this.client.createEvent(
        owner.namespace,
        kubeEvent({
          ...common,
          regarding: helmRelease,
          apiVersion: 'helm.toolkit.fluxcd.io/v2',
          kind: 'HelmRelease',
          name: eventName(owner.name, uid, reason, `HelmRelease ${owner.namespace}/${owner.name}`),
        }),
      );
    tracked.posted.add(reason);
    if (onHook === 'created') this.observer.failure(explanation.reason);
    this.logger.info(
      { hook: `${object.kind} ${namespace}/${name}`, reason, state: explanation.state, why: explanation.reason },
      'hook Event posted',
    );
  }

  /**
   * The failed container's last log lines, redacted, where the installation allows it and the hook or namespace asks.
   * Redacted whole, before eventNote() keeps the tail: a cut first could split `password=…` and leave its value bare.
   */
  private async logLines(object: KubeObject, explanation: HookExplanation): Promise<string | undefined> {
    if (!this.settings.eventLogs || explanation.container === undefined) return undefined;
    const { namespace } = namespacedName(object);
    const asked =
      annotation(object, HOOKGUARD_EVENT_LOGS) === 'true' ||
      (await this.client.namespaceAnnotations(namespace))[HOOKGUARD_EVENT_LOGS] === 'true';
    if (!asked) return undefined;
    const lines =
      explanation.terminationMessage ??
      (explanation.pod !== undefined
        ? await this.client.logTail(namespace, explanation.pod, explanation.container).catch(() => undefined)
        : undefined);
    return lines === undefined ? undefined : redactLogLines(lines);
  }
}
