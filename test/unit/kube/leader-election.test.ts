// LeaderElector (src/kube/leader-election.ts) on a clock the test moves: a renewal counts from when its request
// started, the renewTime it wrote (client-go v0.36.3 tools/leaderelection/leaderelection.go tryAcquireOrRenew), not
// from when the API server answered it. The Lease lives in memory; only the test's clock says what time it is.
import { describe, expect, it } from 'vitest';
import { LeaderElector, type LeaseLock, type LeaseRecord } from '../../../src/kube/leader-election.js';
import { capturedLogger, eventually } from '../../support/log-sink.js';

const SETTINGS = {
  leaseName: 'hookguard',
  leaseNamespace: 'hookguard',
  leaseDurationSeconds: 15,
  renewDeadlineMs: 10_000,
  // Real pauses between tries; they move no clock of the test's.
  retryPeriodMs: 1,
};

/** Each call takes callMs of the test's clock; a renewal the test marks slow is stored at once and answered late. */
class SlowLease implements LeaseLock {
  clockMs = 1_000_000;
  stored: LeaseRecord | undefined;
  /** Local times at which each stored renewal's request started (its renewTime) and was answered. */
  renewals: Array<{ renewTime: string; answeredAtMs: number }> = [];
  answerDelayMs = 0;
  unreachable = false;

  constructor(private readonly callMs = 100) {}

  describe(): string {
    return 'hookguard/hookguard';
  }

  private call(): void {
    this.clockMs += this.callMs;
    if (this.unreachable) throw new Error('503 Service Unavailable');
  }

  get(): Promise<LeaseRecord | undefined> {
    this.call();
    return Promise.resolve(this.stored);
  }

  create(record: LeaseRecord): Promise<void> {
    this.call();
    this.stored = record;
    return Promise.resolve();
  }

  update(record: LeaseRecord): Promise<void> {
    this.call();
    this.stored = record;
    this.clockMs += this.answerDelayMs;
    this.renewals.push({ renewTime: record.renewTime, answeredAtMs: this.clockMs });
    return Promise.resolve();
  }
}

describe('LeaderElector renewals', () => {
  it('a slowly answered renewal counts from when it started: the leader stops renewDeadlineMs after that', async () => {
    const lock = new SlowLease();
    const { logger, lines } = capturedLogger();
    let stoppedAtMs: number | undefined;
    const elector = new LeaderElector(
      lock,
      'a',
      SETTINGS,
      logger,
      { started: () => undefined, stopped: () => (stoppedAtMs = lock.clockMs) },
      () => lock.clockMs,
      () => 0,
    );
    elector.start();
    try {
      await eventually(() => lock.renewals.length >= 2, 'a renews');
      // One renewal is stored at once and answered 8 s later (a slow API server); then a partition.
      lock.answerDelayMs = 8_000;
      const before = lock.renewals.length;
      await eventually(() => lock.renewals.length > before, 'the slow renewal');
      lock.answerDelayMs = 0;
      lock.unreachable = true;
      await eventually(() => stoppedAtMs, 'a stops leading');
    } finally {
      await elector.stop();
    }
    const slow = lock.renewals.at(-1)!;
    const startedAtMs = Date.parse(slow.renewTime);
    expect(slow.answeredAtMs - startedAtMs).toBe(8_100);
    // Each try that fails takes two calls (the optimistic PUT, then the GET): 200 ms of the clock.
    // The other replicas saw the Lease change no earlier than startedAtMs and may take over leaseDuration after it.
    expect(stoppedAtMs! - startedAtMs).toBeGreaterThanOrEqual(SETTINGS.renewDeadlineMs);
    expect(stoppedAtMs! - startedAtMs).toBeLessThanOrEqual(SETTINGS.renewDeadlineMs + 200);
    expect(stoppedAtMs! - startedAtMs).toBeLessThan(SETTINGS.leaseDurationSeconds * 1000);
    expect(lines.map((line) => line.msg)).toContain('stopped leading: could not renew the Lease in time');
  });
});
