// Leader election over a coordination.k8s.io/v1 Lease, the protocol of client-go's leaderelection package
// (kubernetes/client-go v0.36.3 tools/leaderelection/leaderelection.go, resourcelock/leaselock.go), which
// @kubernetes/client-node (1.4.0 and 2.0.0) does not have. Among replicas sharing a Lease at most one leads:
// - a candidate takes the Lease when it is free, or when its record has not changed for leaseDurationSeconds of
//   the candidate's own clock (expiry is judged by when the record was last seen to change, never by comparing
//   renewTime with the local clock, so clock skew between nodes does not matter);
// - every write is a PUT of the Lease last read, so a concurrent writer makes it fail with 409 Conflict;
// - the leader renews every retryPeriodMs and stops leading when no renewal has succeeded for renewDeadlineMs,
//   which is shorter than leaseDurationSeconds: it has stopped before any other replica may take over. A renewal
//   counts from when its request started, the renewTime it wrote (client-go v0.36.3 tryAcquireOrRenew takes `now`
//   before any call), never from when it was answered: the API server stored it somewhere in between, and the
//   other replicas' leaseDuration starts no earlier than that, so a slowly answered renewal gains the leader nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { abortWith } from './abort.js';
import { apiFailure } from './api-failure.js';

/** What a Lease says about its holder (client-go's LeaderElectionRecord). Times are RFC 3339 with microseconds. */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: string;
  renewTime: string;
  leaseTransitions: number;
}

/** The Lease as a lock: get, create and a compare-and-swap update of the Lease last read or written. */
export interface LeaseLock {
  /** undefined when the Lease does not exist (404). */
  get(signal: AbortSignal): Promise<LeaseRecord | undefined>;
  create(record: LeaseRecord, signal: AbortSignal): Promise<void>;
  /** PUT of the Lease last read or written, with its resourceVersion: a concurrent write makes it fail (409). */
  update(record: LeaseRecord, signal: AbortSignal): Promise<void>;
  describe(): string;
}

export interface LeaderElectionSettings {
  leaseName: string;
  leaseNamespace: string;
  leaseDurationSeconds: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface Leadership {
  /** Called when this replica starts leading; `signal` aborts the moment it stops. */
  started(signal: AbortSignal): void;
  /** Called when this replica stops leading (lost the Lease, or stopping). */
  stopped(): void;
}

/** client-go's JitterFactor: a candidate waits retryPeriod plus up to 1.2 times that between tries. */
const JITTER_FACTOR = 1.2;

function microTime(ms: number): string {
  return new V1MicroTime(ms).toISOString();
}

function recordKey(record: LeaseRecord): string {
  return JSON.stringify([
    record.holderIdentity,
    record.leaseDurationSeconds,
    record.acquireTime,
    record.renewTime,
    record.leaseTransitions,
  ]);
}

export class LeaderElector {
  private observed: LeaseRecord | undefined;
  private observedKey = '';
  /** Local clock time at which the record was last seen to change (or written by us). */
  private observedAtMs = 0;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private leading: AbortController | undefined;

  constructor(
    private readonly lock: LeaseLock,
    readonly identity: string,
    private readonly settings: LeaderElectionSettings,
    private readonly logger: Logger,
    private readonly leadership: Leadership,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** True while this replica holds the Lease. */
  get isLeader(): boolean {
    return this.leading !== undefined;
  }

  /** The holder last seen in the Lease ('' when free or not read yet). */
  get leader(): string {
    return this.observed?.holderIdentity ?? '';
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops leading and campaigning; a held Lease is released, so another replica takes over at its next try. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const acquiredAtMs = await this.acquire();
      if (acquiredAtMs !== undefined) await this.lead(acquiredAtMs);
    }
  }

  private async pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  /**
   * Tries every retryPeriod (with jitter) until the Lease is ours: when the request that took it started, or
   * undefined when stopping.
   */
  private async acquire(): Promise<number | undefined> {
    const { retryPeriodMs } = this.settings;
    while (!this.stopped) {
      const acquiredAtMs = await this.tryAcquireOrRenew(retryPeriodMs);
      if (acquiredAtMs !== undefined) return acquiredAtMs;
      await this.pause(retryPeriodMs + this.random() * JITTER_FACTOR * retryPeriodMs);
    }
    return undefined;
  }

  /**
   * Leads until renewDeadlineMs passes after the start of the last renewal that succeeded (the first being the
   * acquisition at acquiredAtMs), or stop(); then releases when stopping.
   */
  private async lead(acquiredAtMs: number): Promise<void> {
    const leading = new AbortController();
    this.leading = leading;
    this.logger.info({ identity: this.identity, lease: this.lock.describe() }, 'leading: acquired the Lease');
    this.leadership.started(leading.signal);
    let renewedAtMs = acquiredAtMs;
    const { retryPeriodMs, renewDeadlineMs } = this.settings;
    while (!this.stopped) {
      await this.pause(retryPeriodMs);
      if (this.stopped) break;
      const remainingMs = renewedAtMs + renewDeadlineMs - this.now();
      const renewalStartedAtMs = remainingMs > 0 ? await this.tryAcquireOrRenew(remainingMs) : undefined;
      if (renewalStartedAtMs !== undefined) {
        renewedAtMs = renewalStartedAtMs;
        continue;
      }
      if (this.leader !== '' && this.leader !== this.identity) {
        this.logger.warn(
          { identity: this.identity, leader: this.leader, lease: this.lock.describe() },
          'stopped leading: another replica holds the Lease',
        );
        break;
      }
      if (this.now() - renewedAtMs >= renewDeadlineMs) {
        this.logger.warn(
          { identity: this.identity, lease: this.lock.describe(), renewDeadlineMs },
          'stopped leading: could not renew the Lease in time',
        );
        break;
      }
    }
    this.leading = undefined;
    leading.abort();
    this.leadership.stopped();
    if (this.stopped) await this.release();
  }

  /**
   * client-go's tryAcquireOrRenew. When this replica holds the Lease afterwards: the local time its request started,
   * which is the renewTime it wrote; otherwise undefined.
   */
  private async tryAcquireOrRenew(timeoutMs: number): Promise<number | undefined> {
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(Math.max(1, timeoutMs))]);
    const nowMs = this.now();
    const record: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.settings.leaseDurationSeconds,
      acquireTime: microTime(nowMs),
      renewTime: microTime(nowMs),
      leaseTransitions: 0,
    };
    try {
      // 1. Fast path: the leader updates the Lease it wrote last, assuming nobody else has.
      if (this.observed && this.holdsObserved() && this.observedValid(nowMs)) {
        const renewed = {
          ...record,
          acquireTime: this.observed.acquireTime,
          leaseTransitions: this.observed.leaseTransitions,
        };
        try {
          await this.lock.update(renewed, signal);
          this.observe(renewed);
          return nowMs;
        } catch (error) {
          if (signal.aborted) throw error;
          this.logger.debug({ error: apiFailure(error).message }, 'Lease renewal conflicted: reading it again');
        }
      }
      // 2. Read the Lease; create it when there is none.
      const current = await this.lock.get(signal);
      if (current === undefined) {
        await this.lock.create(record, signal);
        this.observe(record);
        return nowMs;
      }
      // 3. A record seen to change restarts its clock; a valid Lease held by another replica is left alone.
      if (recordKey(current) !== this.observedKey) this.observe(current);
      if (current.holderIdentity !== '' && this.observedValid(nowMs) && !this.holdsObserved()) return undefined;
      // 4. Take it over (or keep it), counting a change of holder.
      const next = this.holdsObserved()
        ? { ...record, acquireTime: current.acquireTime, leaseTransitions: current.leaseTransitions }
        : { ...record, leaseTransitions: current.leaseTransitions + 1 };
      await this.lock.update(next, signal);
      this.observe(next);
      return nowMs;
    } catch (error) {
      if (!this.stopped)
        this.logger.debug(
          { lease: this.lock.describe(), error: apiFailure(error).message },
          'Lease not acquired or renewed',
        );
      return undefined;
    }
  }

  /** client-go's release: an empty holder with a 1-second duration, so the next candidate need not wait. */
  private async release(): Promise<void> {
    const signal = AbortSignal.timeout(this.settings.renewDeadlineMs);
    try {
      const current = await this.lock.get(signal);
      if (current === undefined || current.holderIdentity !== this.identity) return;
      const nowMs = this.now();
      const released: LeaseRecord = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: microTime(nowMs),
        renewTime: microTime(nowMs),
        leaseTransitions: current.leaseTransitions,
      };
      await this.lock.update(released, signal);
      this.observe(released);
      this.logger.info({ identity: this.identity, lease: this.lock.describe() }, 'released the Lease');
    } catch (error) {
      this.logger.warn(
        { lease: this.lock.describe(), error: apiFailure(error).message },
        'could not release the Lease',
      );
    }
  }

  private observe(record: LeaseRecord): void {
    const previousHolder = this.observed?.holderIdentity;
    this.observed = record;
    this.observedKey = recordKey(record);
    this.observedAtMs = this.now();
    if (
      record.holderIdentity !== previousHolder &&
      record.holderIdentity !== '' &&
      record.holderIdentity !== this.identity
    )
      this.logger.info({ leader: record.holderIdentity, lease: this.lock.describe() }, 'another replica leads');
  }

  private holdsObserved(): boolean {
    return this.observed?.holderIdentity === this.identity;
  }

  private observedValid(nowMs: number): boolean {
    return this.observedAtMs + (this.observed?.leaseDurationSeconds ?? 0) * 1000 > nowMs;
  }
}

function recordOf(lease: V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  // client-node leaves V1MicroTime fields as the API's strings when it reads them.
  const time = (value: unknown) =>
    value instanceof Date ? microTime(value.getTime()) : typeof value === 'string' ? value : '';
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: time(spec.acquireTime),
    renewTime: time(spec.renewTime),
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

function specOf(record: LeaseRecord): V1Lease['spec'] {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: new V1MicroTime(record.acquireTime),
    renewTime: new V1MicroTime(record.renewTime),
    leaseTransitions: record.leaseTransitions,
  };
}

/** The Lease `namespace/name` through client-node's CoordinationV1Api, remembering the Lease last read or written. */
export function kubeLeaseLock(kubeConfig: KubeConfig, namespace: string, name: string): LeaseLock {
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  let last: V1Lease | undefined;
  return {
    describe: () => `${namespace}/${name}`,
    async get(signal) {
      try {
        last = await api.readNamespacedLease({ name, namespace }, abortWith(signal));
      } catch (error) {
        if (apiFailure(error).status === 404) return undefined;
        throw error;
      }
      return recordOf(last);
    },
    async create(record, signal) {
      const body: V1Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
        spec: specOf(record),
      };
      last = await api.createNamespacedLease({ namespace, body }, abortWith(signal));
    },
    async update(record, signal) {
      if (!last) throw new Error('the Lease was neither read nor created before its update');
      last = await api.replaceNamespacedLease(
        { name, namespace, body: { ...last, spec: specOf(record) } },
        abortWith(signal),
      );
    },
  };
}
