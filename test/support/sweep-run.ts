// Running sweep() in this process against a stand-in API server (test/support/fake-apiserver.ts), for the
// integration tests of src/sweep.
import { kubeSweepClient } from '../../src/sweep/client.js';
import { sweep, type SweepOptions } from '../../src/sweep/sweep.js';
import type { FakeApiServer } from './fake-apiserver.js';
import { capturedLogger } from './log-sink.js';

export const ACTOR = 'system:serviceaccount:hookguard:hookguard-sweep';
export const REPORTING_INSTANCE = 'hookguard-sweep-29381760-x2v7q';

/** The CronJob's options with --apply and quick retries, `overrides` on top. */
export const sweepOptions = (overrides: Partial<SweepOptions> = {}): SweepOptions => ({
  namespace: undefined,
  apply: true,
  profiles: ['argocd-hook'],
  minAgeSeconds: 600,
  finishedGraceSeconds: 300,
  applicationLookup: { instanceLabels: ['app.kubernetes.io/instance'], controlPlaneNamespaces: ['argocd'] },
  argoWorkflowsGraceSeconds: 600,
  retry: { maxAttempts: 4, backoff: { initialMs: 10, maxMs: 50 } },
  actor: ACTOR,
  reportingInstance: REPORTING_INSTANCE,
  ...overrides,
});

/** One pass: the report, each object's action by name, and the log lines. */
export async function runSweep(server: FakeApiServer, overrides: Partial<SweepOptions> = {}) {
  const { logger, lines } = capturedLogger();
  const report = await sweep(kubeSweepClient(server.kubeConfig()), sweepOptions(overrides), logger);
  const outcome = Object.fromEntries(report.results.map((result) => [result.name, result.action]));
  return { report, outcome, lines };
}
