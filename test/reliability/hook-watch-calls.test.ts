// What the hook watcher asks of the API server at 10,000 failing hooks (issue 37 item 6), against the stand-in of
// test/support/scale-apiserver.ts (5,000 failed hook Jobs, each with its failed Pod, and 5,000 failed bare hook Pods
// among 500,000 Jobs and 500,000 Pods). Counted, not timed: requests, pages, the most requests in flight at the
// server, the most calls begun in any second. The figures go to docs/reliability.md (printed with HOOKGUARD_FIGURES=1).
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeHookWatchClient } from '../../src/controllers/hooks/client.js';
import { HookWatcher } from '../../src/controllers/hooks/watcher.js';
import { CallBudget, type CallLimits } from '../../src/kube/call-budget.js';
import { capturedLogger } from '../support/log-sink.js';
import { ScaleApiServer } from '../support/scale-apiserver.js';

const HOOKS_PER_KIND = 5_000;
/** hookWatch.maxConcurrentCalls, callsPerSecond and callBurst by default (src/config/keys.ts). */
const DEFAULTS: CallLimits = { maxConcurrent: 4, perSecond: 20, burst: 30 };
const WINDOW_MS = 12_000;

let server: ScaleApiServer;
let kubeConfig: KubeConfig;
beforeAll(async () => {
  server = await new ScaleApiServer(HOOKS_PER_KIND * 100, {
    hooksPerKind: HOOKS_PER_KIND,
    everyHookFails: true,
  }).start();
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeConfigFile());
});
afterAll(() => server.stop());

/** A budget that notes when each call begins (past the cap and the bucket). */
function measured(limits: CallLimits) {
  const budget = new CallBudget(limits);
  const begun: number[] = [];
  return {
    budget,
    begun,
    run: <T>(call: () => Promise<T>) =>
      budget.run(() => {
        begun.push(performance.now());
        return call();
      }),
  };
}

/** The most calls begun within any `spanMs`. */
function busiest(begun: readonly number[], spanMs: number): number {
  let most = 0;
  let first = 0;
  for (let last = 0; last < begun.length; last += 1) {
    while (begun[last]! - begun[first]! >= spanMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

function figures(what: string, facts: Record<string, unknown>): void {
  if (process.env.HOOKGUARD_FIGURES === '1') console.log(what, JSON.stringify(facts));
}

describe('the hook watcher at 10,000 failing hooks', () => {
  it('lists in pages and stays within the default cap and token bucket', async () => {
    const limits = measured(DEFAULTS);
    const { logger } = capturedLogger('warn');
    const watcher = new HookWatcher(
      kubeConfig,
      kubeHookWatchClient(kubeConfig, limits),
      {
        stuckAfterSeconds: 300,
        recheckSeconds: 60,
        eventLogs: false,
        helmReleaseEvents: false,
        reportingInstance: 'hookguard-0',
        applicationLookup: { instanceLabels: ['app.kubernetes.io/instance'], controlPlaneNamespaces: ['argocd'] },
        reflector: { backoff: { initialMs: 100, maxMs: 1000 }, watchTimeoutSeconds: 60 },
      },
      logger,
      { failure: () => undefined, failing: () => undefined },
    );
    const stop = new AbortController();
    const started = performance.now();
    const running = watcher.run(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    stop.abort();
    await running;
    const seconds = (performance.now() - started) / 1000;
    const counts = { ...server.counts };
    const posted = server.events.length;
    figures('watcher', {
      seconds,
      listRequests: counts.list,
      listMB: counts.listBytes / 1e6,
      eventRequests: counts.event,
      other: counts.other,
      calls: limits.begun.length,
      busiestSecond: busiest(limits.begun, 1000),
      peakInFlightAtServer: server.peakInFlight,
      peakInProcess: limits.budget.peakConcurrent,
      hookEventsPosted: posted,
    });
    // The reflectors' lists: 5,000 Jobs and 5,000 Pods, 500 a page, ten pages each (and nothing unpaged).
    expect(counts.list).toBeGreaterThanOrEqual(20);
    // Every request but the two watches went through the budget.
    expect(counts.list + counts.event + counts.get + counts.other).toBe(limits.begun.length);
    // Hooks were explained and their Events posted, within the bucket: never more than the burst and a second's
    // refill begun in any second, nor more in all than the burst and the refill over the whole run.
    expect(posted).toBeGreaterThan(0);
    expect(busiest(limits.begun, 1000)).toBeLessThanOrEqual(DEFAULTS.burst + DEFAULTS.perSecond);
    expect(limits.begun.length).toBeLessThanOrEqual(DEFAULTS.burst + Math.ceil(seconds * DEFAULTS.perSecond));
    expect(limits.budget.peakConcurrent).toBeLessThanOrEqual(DEFAULTS.maxConcurrent);
    expect(server.peakInFlight).toBeLessThanOrEqual(DEFAULTS.maxConcurrent);
  }, 60_000);

  it("bounds a caller that asks every Job's evidence at once: the cap and the bucket hold", async () => {
    const limits = measured({ maxConcurrent: 4, perSecond: 200, burst: 20 });
    const client = kubeHookWatchClient(kubeConfig, limits);
    const jobs = server.hookIndexes('Job').slice(0, 100);
    const peakBefore = server.peakInFlight;
    server.peakInFlight = 0;
    const started = performance.now();
    const evidence = await Promise.all(
      jobs.map((index) => client.evidence(server.object('Job', index) as Record<string, unknown>)),
    );
    const seconds = (performance.now() - started) / 1000;
    figures('evidence of 100 Jobs at once', {
      seconds,
      calls: limits.begun.length,
      callsPerJob: limits.begun.length / jobs.length,
      busiestSecond: busiest(limits.begun, 1000),
      peakInFlightAtServer: server.peakInFlight,
      peakInProcess: limits.budget.peakConcurrent,
    });
    expect(peakBefore).toBeLessThanOrEqual(DEFAULTS.maxConcurrent);
    // Each Job: its Pods (one page) and the Events about the Job and its one Pod through both APIs.
    expect(evidence.every((each) => each.pods.length === 1)).toBe(true);
    expect(limits.begun.length).toBe(jobs.length * 5);
    expect(limits.budget.peakConcurrent).toBeLessThanOrEqual(4);
    expect(server.peakInFlight).toBeLessThanOrEqual(4);
    expect(busiest(limits.begun, 1000)).toBeLessThanOrEqual(220);
    // 500 calls: the burst at once, the rest at 200 a second.
    expect(seconds).toBeGreaterThanOrEqual((limits.begun.length - 20) / 200 - 0.05);
  }, 60_000);
});
