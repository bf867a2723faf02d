// The leader's loop: every selfTest.intervalSeconds, dry-run the probe through the API server, judge the answer,
// and write the HookGuard object's status (through the status subresource) with the conditions it implies.
import { X509Certificate } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Advisory, KubeObject, Mode } from '../../core/types.js';
import type { DiscoveryStatus } from '../../discovery/discovery.js';
import type { FluxDiscoveryStatus } from '../../discovery/helm-controllers.js';
import { callSignal } from '../../kube/abort.js';
import { apiFailure } from '../../kube/api-failure.js';
import type { SelfTestClient } from './client.js';
import {
  advisoriesInEffect,
  argoCdKnown,
  helmControllerKnown,
  certificateValid,
  conditionsOf,
  knownInstances,
  mergeConditions,
  ready,
  webhookCalled,
  type Condition,
  type Transition,
} from './conditions.js';
import { judgeProbe, probeJob, type ProbeVerdict, type SelfTestOutcome } from './probe.js';

export interface SelfTestSettings {
  mode: Mode;
  namespace: string;
  intervalSeconds: number;
  requestTimeoutMs: number;
  certificateWarningDays: number;
  pinnedArgocdVersion: string | null;
  advisories: readonly Advisory[];
  /** The HookGuard object's name (selfTest.statusObject), for the log line when it is missing; `hookguard` unless given. */
  statusObject?: string;
}

/** What the self-test reads from the running server at each run. */
export interface SelfTestSources {
  /** The serving certificate in use (PEM): it changes with every reload. */
  certificate(): string;
  discovery(): DiscoveryStatus;
  /** What is known of Flux's helm-controllers (absent: not reported). */
  flux?(): FluxDiscoveryStatus;
}

/** Told of every outcome, for the metrics. */
export type OutcomeObserver = (outcome: SelfTestOutcome, atMs: number) => void;

export interface SelfTestRun extends ProbeVerdict {
  /** When it ran, as a Kubernetes timestamp (RFC 3339, seconds). */
  at: string;
  atMs: number;
  durationMs: number;
}

/** A timestamp as metav1.Time writes it: RFC 3339 in UTC, whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * One probe: the dry-run create of the probe Job and what its answer says about each webhook. The leader's loop and
 * `hookguard self-test` (the chart's `helm test`) both run it.
 */
export async function probeOnce(
  client: Pick<SelfTestClient, 'dryRunCreate'>,
  settings: Pick<SelfTestSettings, 'namespace' | 'mode' | 'requestTimeoutMs'>,
  signal: AbortSignal,
): Promise<ProbeVerdict> {
  try {
    const answer = await client.dryRunCreate(
      probeJob(settings.namespace),
      callSignal(signal, settings.requestTimeoutMs),
    );
    return judgeProbe(settings.mode, answer.object, answer.warnings);
  } catch (error) {
    const failure = apiFailure(error);
    const status = failure.status === undefined ? 'no answer' : `HTTP ${failure.status}`;
    return {
      outcome: 'Error',
      reason: 'Error',
      message: `the dry run of the probe Job in namespace ${settings.namespace} failed (${status}): ${failure.message}`,
    };
  }
}

export class SelfTest {
  /** The conditions last computed, for the transitions when the object cannot be read. */
  private lastConditions: Condition[] = [];
  last: SelfTestRun | undefined;

  constructor(
    private readonly client: SelfTestClient,
    private readonly settings: SelfTestSettings,
    private readonly sources: SelfTestSources,
    private readonly observe: OutcomeObserver,
    private readonly logger: Logger,
    private readonly identity: string,
  ) {}

  /** Runs once at once, then every intervalSeconds, until `signal` aborts (leadership lost, or shutting down). */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const started = performance.now();
      await this.once(signal);
      const waitMs = this.settings.intervalSeconds * 1000 - (performance.now() - started);
      await sleep(Math.max(0, waitMs), undefined, { signal }).catch(() => undefined);
    }
  }

  /** One self-test and one status write; never throws. */
  async once(signal: AbortSignal): Promise<void> {
    const verdict = await this.probe(signal);
    if (signal.aborted) return;
    this.observe(verdict.outcome, verdict.atMs);
    this.last = verdict;
    const level = verdict.outcome === 'Called' ? 'debug' : 'warn';
    this.logger[level](
      { outcome: verdict.outcome, message: verdict.message, durationMs: verdict.durationMs },
      'self-test',
    );
    await this.writeStatus(verdict, signal);
  }

  private async probe(signal: AbortSignal): Promise<SelfTestRun> {
    const atMs = Date.now();
    const started = performance.now();
    const done = (verdict: ProbeVerdict) => ({
      ...verdict,
      at: kubeTime(atMs),
      atMs,
      durationMs: Math.round(performance.now() - started),
    });
    return done(await probeOnce(this.client, this.settings, signal));
  }

  private async writeStatus(verdict: SelfTestRun, signal: AbortSignal): Promise<void> {
    let object: KubeObject | undefined;
    try {
      object = await this.client.readStatusObject(callSignal(signal, this.settings.requestTimeoutMs));
    } catch (error) {
      this.logger.warn({ error: apiFailure(error).message }, 'cannot read the HookGuard object: status not written');
    }
    const previous = object ? conditionsOf(object.status) : this.lastConditions;
    const generation = typeof object?.metadata?.generation === 'number' ? object.metadata.generation : 0;
    const { status, conditions, transitions } = this.status(verdict, previous, generation);
    this.lastConditions = conditions;
    this.logTransitions(transitions);
    if (object === undefined) {
      // helm upgrade creates a rendered object that is missing from the cluster (helm v3.21.4 and v4.3.2
      // pkg/kube/client.go Update); Helm installs crds/ on first install only.
      this.logger.warn(
        `the HookGuard object "${this.settings.statusObject ?? 'hookguard'}" does not exist or cannot be read: the Helm ` +
          'chart creates it (helm upgrade ' +
          'the release to recreate it); if its CRD hookguards.hookguard.io is missing too, first kubectl apply -f ' +
          'charts/hookguard/crds/ (Helm installs crds/ on first install only)',
      );
      return;
    }
    if (signal.aborted) return;
    try {
      await this.client.writeStatus({ ...object, status }, callSignal(signal, this.settings.requestTimeoutMs));
    } catch (error) {
      // A 409 means someone wrote meanwhile: the next run reads it again.
      this.logger.warn({ error: apiFailure(error).message }, 'cannot write the HookGuard status');
    }
  }

  private status(verdict: SelfTestRun, previous: readonly Condition[], generation: number) {
    const { settings, sources } = this;
    const notAfterMs = Date.parse(new X509Certificate(sources.certificate()).validTo);
    const discovery = sources.discovery();
    const others = [
      webhookCalled(verdict),
      certificateValid(notAfterMs, Date.now(), settings.certificateWarningDays),
      argoCdKnown(settings.pinnedArgocdVersion, discovery),
    ];
    // HelmControllerKnown is told, not required: Ready does not wait on Flux, which may not be there at all.
    const told = sources.flux ? [helmControllerKnown(sources.flux())] : [];
    const { conditions, transitions } = mergeConditions(
      previous,
      [...others, ready(others), ...told],
      verdict.at,
      generation,
    );
    const status = {
      observedGeneration: generation,
      mode: settings.mode,
      leader: this.identity,
      certificateNotAfter: kubeTime(notAfterMs),
      lastSelfTest: { time: verdict.at, outcome: verdict.outcome, durationMs: verdict.durationMs },
      advisoriesInEffect: advisoriesInEffect(
        settings.advisories,
        knownInstances(settings.pinnedArgocdVersion, discovery),
      ),
      conditions,
    };
    return { status, conditions, transitions };
  }

  private logTransitions(transitions: readonly Transition[]): void {
    for (const transition of transitions)
      this.logger.warn(
        {
          condition: transition.type,
          from: transition.from ?? null,
          to: transition.to,
          reason: transition.reason,
          message: transition.message,
        },
        `HookGuard condition ${transition.type} is now ${transition.to}`,
      );
  }
}
