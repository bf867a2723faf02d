// The hook watcher's CallBudget (issue 37 item 6): a concurrency cap and a token bucket, on a clock the test moves.
import { describe, expect, it } from 'vitest';
import { CallBudget, type CallClock } from '../../../src/kube/call-budget.js';

/** A clock whose sleeps end only as the test advances it. */
function manualClock(): CallClock & { advance(ms: number): Promise<void> } {
  let now = 0;
  const sleepers: Array<{ at: number; wake: () => void }> = [];
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    now: () => now,
    sleep: (ms) => new Promise<void>((wake) => sleepers.push({ at: now + ms, wake })),
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        await settle();
        sleepers.sort((a, b) => a.at - b.at);
        const next = sleepers[0];
        if (!next || next.at > end) break;
        sleepers.shift();
        now = next.at;
        next.wake();
      }
      now = end;
      await settle();
    },
  };
}

describe('CallBudget', () => {
  it('lets at most maxConcurrent calls run at once, the rest in order, whatever the caller asks at once', async () => {
    const budget = new CallBudget({ maxConcurrent: 3, perSecond: 1000, burst: 1000 });
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        budget.run(async () => {
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 1));
          running -= 1;
          order.push(index);
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(budget.peakConcurrent).toBe(3);
    expect(order).toHaveLength(50);
  });

  it('gives the slot back when a call fails', async () => {
    const budget = new CallBudget({ maxConcurrent: 1, perSecond: 1000, burst: 1000 });
    await expect(budget.run(() => Promise.reject(new Error('HTTP 500')))).rejects.toThrow('HTTP 500');
    await expect(budget.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });

  it('lets a burst through at once, then perSecond calls a second', async () => {
    const clock = manualClock();
    const budget = new CallBudget({ maxConcurrent: 100, perSecond: 10, burst: 5 }, clock);
    let done = 0;
    const calls = Array.from({ length: 25 }, () => budget.run(async () => void (done += 1)));
    await clock.advance(0);
    expect(done).toBe(5);
    await clock.advance(1000);
    expect(done).toBe(15);
    await clock.advance(999);
    expect(done).toBe(24);
    await clock.advance(1);
    expect(done).toBe(25);
    await Promise.all(calls);
    // Quiet for a while: the bucket fills up to the burst, no further.
    await clock.advance(60_000);
    const later = Array.from({ length: 6 }, () => budget.run(async () => void (done += 1)));
    await clock.advance(0);
    expect(done).toBe(30);
    await clock.advance(100);
    await Promise.all(later);
    expect(done).toBe(31);
  });
});
