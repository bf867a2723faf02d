import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ARGOCD_HOOK_FINALIZER, ARGO_WORKFLOWS_STATUS_FINALIZER } from '../core/annotations.js';
import { actingIdentity, kubeConnection, noClusterProblem } from '../kube/kubeconfig.js';
import { kubeSweepClient } from '../sweep/client.js';
import { applicationLookupOf } from '../sweep/application-lookup.js';
import { sweep, SWEEP_ACTIONS, type SweepAction, type SweepReport, type SweepResult } from '../sweep/sweep.js';
import { ApiCallError, EXIT, UsageError } from '../errors.js';
import { loadConfigWithFlags, parseArguments, textOrJson } from './arguments.js';
import type { CommandIO } from './io.js';

export const SWEEP_USAGE = `Usage: hookguard sweep [--namespace NS] [--apply] [--profile P]... [--output text|json] [--min-age-seconds N] [--config FILE]
Removes finalizers nothing else will remove from Jobs and Pods being deleted, by profile (--profile, repeatable;
sweep.profiles, default argocd-hook):
  argocd-hook     ${ARGOCD_HOOK_FINALIZER} on hook Jobs and Pods deleted longer than
                  sweep.finishedGraceSeconds ago (default 300) when finished, --min-age-seconds ago
                  (sweep.minAgeSeconds, default 600) when not, and never while their Argo CD Application's
                  operation lists them as running
  argo-workflows  ${ARGO_WORKFLOWS_STATUS_FINALIZER} on finished workflow Pods deleted longer than
                  sweep.argoWorkflowsGraceSeconds ago (default 600) whose Workflow is gone, being deleted,
                  replaced or completed, or holds the Pod's node in a final phase
A dry run unless --apply, which removes that one finalizer with a JSON patch guarded by a test op and records an
Event on the object. Talks to the cluster of KUBECONFIG, the in-cluster service account, or ~/.kube/config.
Exit status: ${EXIT.ok} done, ${EXIT.failed} a patch failed or the cluster could not be listed, ${EXIT.badInput} bad input, ${EXIT.internal} internal error.`;

const HEADLINES: Readonly<Record<SweepAction, (finalizer: string) => string>> = {
  'would-remove': (finalizer) => `would remove ${finalizer}`,
  removed: (finalizer) => `removed ${finalizer}`,
  gone: () => 'already gone',
  skipped: () => 'left alone',
  failed: (finalizer) => `FAILED to remove ${finalizer}`,
};

function line(result: SweepResult): string {
  const where = `${result.kind} ${result.namespace}/${result.name}`;
  const finalizers =
    result.action === 'would-remove' || result.action === 'removed'
      ? `; finalizers [${result.finalizersBefore.join(', ')}] -> [${result.finalizersAfter.join(', ')}]`
      : '';
  return `${where}: ${HEADLINES[result.action](result.finalizer)} (${result.reasons.join('; ')})${finalizers}`;
}

function summary(report: SweepReport): string {
  const counts = Object.fromEntries(
    SWEEP_ACTIONS.map((action) => [action, report.results.filter((result) => result.action === action).length]),
  ) as Record<SweepAction, number>;
  const scope = report.namespace === null ? 'all namespaces' : `namespace ${report.namespace}`;
  if (report.dryRun) {
    return `dry run over ${scope}: ${counts['would-remove']} would be changed, ${counts.skipped} left alone${counts['would-remove'] > 0 ? '; run with --apply to remove the finalizers' : ''}`;
  }
  return `applied over ${scope} as ${report.actor}: ${counts.removed} removed, ${counts.gone} already gone, ${counts.skipped} left alone, ${counts.failed} failed`;
}

/** `hookguard sweep`: one pass, then exit; non-zero when a patch failed. */
export async function runSweep(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: {
      namespace: { type: 'string', short: 'n' },
      apply: { type: 'boolean', default: false },
      profile: { type: 'string', multiple: true },
      output: { type: 'string', short: 'o', default: 'text' },
      'min-age-seconds': { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout(`${SWEEP_USAGE}\n`);
    return EXIT.ok;
  }
  const output = textOrJson(values.output);
  if (values.namespace === '') throw new UsageError('--namespace must not be empty');
  const config = loadConfigWithFlags(io, values.config, [
    { flag: 'min-age-seconds', key: 'sweep.minAgeSeconds', value: values['min-age-seconds'] },
    { flag: 'profile', key: 'sweep.profiles', value: values.profile?.join(',') },
  ]);
  const connection = kubeConnection(io.env);
  if (!connection) throw new UsageError(noClusterProblem(io.env, 'no cluster to sweep'));
  // Log lines (audit lines included) go to stderr, so stdout stays the report.
  const logSink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      io.stderr(chunk.toString('utf8'));
      callback();
    },
  });
  const logger = pino(
    {
      level: config.log.level,
      base: { service: 'hookguard', command: 'sweep' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    logSink,
  );
  const actor = actingIdentity(connection.kubeConfig);
  let report: SweepReport;
  try {
    report = await sweep(
      kubeSweepClient(connection.kubeConfig),
      {
        namespace: values.namespace,
        apply: values.apply,
        profiles: config.sweep.profiles,
        minAgeSeconds: config.sweep.minAgeSeconds,
        finishedGraceSeconds: config.sweep.finishedGraceSeconds,
        applicationLookup: applicationLookupOf(config),
        argoWorkflowsGraceSeconds: config.sweep.argoWorkflowsGraceSeconds,
        retry: {
          maxAttempts: config.sweep.maxAttempts,
          backoff: { initialMs: config.sweep.backoffInitialMs, maxMs: config.sweep.backoffMaxMs },
        },
        actor,
        // In a cluster, the pod's name: which run of the CronJob wrote an Event.
        reportingInstance: hostname(),
      },
      logger,
    );
  } catch (error) {
    if (!(error instanceof ApiCallError)) throw error;
    io.stderr(`hookguard sweep: cannot list hook Jobs and Pods (${connection.source}): ${error.message}\n`);
    return EXIT.failed;
  }
  if (output === 'json') io.stdout(`${JSON.stringify(report)}\n`);
  else io.stdout(`${[...report.results.map(line), summary(report)].join('\n')}\n`);
  return report.results.some((result) => result.action === 'failed') ? EXIT.failed : EXIT.ok;
}
