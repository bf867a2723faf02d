// Issue 37 item 8: leader terms never overlap, and a wake of the hook watcher leaves no timer behind.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { leaderTerms } from '../../../src/controllers/leader-loop.js';
import { wakeOrAfter } from '../../../src/controllers/hooks/watcher.js';

const silent = pino({ level: 'silent' });
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('leaderTerms', () => {
  it('starts a term only once every task of the previous one has ended', async () => {
    const steps: string[] = [];
    let finishFirst: () => void = () => undefined;
    let term = 0;
    const terms = leaderTerms(
      [
        {
          name: 'slow to stop',
          run: async (signal) => {
            const mine = ++term;
            steps.push(`start ${mine}`);
            await new Promise<void>((resolve) => signal.addEventListener('abort', () => (finishFirst = resolve)));
            steps.push(`end ${mine}`);
          },
        },
      ],
      silent,
    );
    const first = new AbortController();
    terms.started(first.signal);
    await turn();
    first.abort();
    terms.stopped();
    // Leadership won back at once, while the first term's task is still cleaning up.
    const second = new AbortController();
    terms.started(second.signal);
    await turn();
    expect(steps).toEqual(['start 1']);
    finishFirst();
    await turn();
    expect(steps).toEqual(['start 1', 'end 1', 'start 2']);
    second.abort();
    finishFirst();
    await terms.ended();
    expect(steps).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('does not start a term whose leadership ended while it waited', async () => {
    const runs: string[] = [];
    let release: () => void = () => undefined;
    const terms = leaderTerms(
      [
        {
          name: 'task',
          run: async (signal) => {
            runs.push(signal.aborted ? 'ran after its leadership ended' : 'ran');
            await new Promise<void>((resolve) => (release = resolve));
          },
        },
      ],
      silent,
    );
    const first = new AbortController();
    terms.started(first.signal);
    await turn();
    first.abort();
    // Won and lost again while the first term is still ending.
    const second = new AbortController();
    terms.started(second.signal);
    second.abort();
    release();
    await terms.ended();
    expect(runs).toEqual(['ran']);
  });
});

describe('wakeOrAfter', () => {
  const timeouts = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

  it('clears its timer when woken: 200 wakes leave no timer behind', async () => {
    const before = timeouts();
    const signal = new AbortController().signal;
    for (let index = 0; index < 200; index++) await wakeOrAfter(10_000, Promise.resolve(), signal);
    await turn();
    // Without the clear, each wake left its 10 s timer pending: 200 more.
    expect(timeouts() - before).toBeLessThanOrEqual(0);
  });

  it('still wakes after the time when nothing wakes it', async () => {
    const signal = new AbortController().signal;
    const startedAt = performance.now();
    await wakeOrAfter(30, new Promise<void>(() => undefined), signal);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(25);
  });
});
