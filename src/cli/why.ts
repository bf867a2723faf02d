import { ARGOCD_TRACKING_ID } from '../core/annotations.js';
import {
  explainHook,
  explainRecordedHook,
  FAILING_STATES,
  type ExplainOptions,
  type HookExplanation,
} from '../core/explain/index.js';
import { readHook } from '../core/hook.js';
import { conditionTrue, isRecord, metadataOf } from '../core/objects.js';
import { ApiCallError, apiFailureText, EXIT, isBug, UsageError } from '../errors.js';
import { apiFailure } from '../kube/api-failure.js';
import { kubeHookReader, type HookKindName, type HookReader } from '../kube/hook-evidence.js';
import { kubeConnection, noClusterProblem } from '../kube/kubeconfig.js';
import { renderWhyJson, renderWhyText, type WhyReport } from '../report/why.js';
import { applicationLookupOf } from '../sweep/application-lookup.js';
import { applicationsOf, type ApplicationLookup } from '../sweep/qualify.js';
import { loadConfigWithFlags, parseArguments, textOrJson } from './arguments.js';
import type { CommandIO } from './io.js';

export const WHY_USAGE = `Usage: hookguard why job/NAME|pod/NAME [-n NS] | --application NS/NAME | -A
                     [--output text|json] [--stuck-after-seconds N] [--config FILE]
Says why a hook Job or Pod failed or hangs, from what Kubernetes wrote: the Job's conditions, its Pods' container
states (exit code, reason, termination message), the scheduler's verdict, and the Events of the kubelet and the job
controller (events.k8s.io/v1 and v1). States: Succeeded, Running, Failed, Stuck (a Pod waiting longer than
why.stuckAfterSeconds, default 300), Blocked (a Job whose Pods cannot be created for that long), Suspended (a Job
suspended for less than that; longer, it is Stuck).
  job/NAME, pod/NAME     one hook, in -n NS (default: the kubeconfig context's namespace, else default)
  --application NS/NAME  every hook of that Argo CD Application's current or last operation, and every hook
                         carrying its tracking id or instance label
  -A, --all-namespaces   every hook in the cluster that is not Succeeded or Running (at most why.maxHooks)
Talks to the cluster of KUBECONFIG, the in-cluster service account, or ~/.kube/config. Reads jobs, pods and events
(through events.k8s.io/v1 and v1; either is enough), and applications.argoproj.io for --application.
Exit status: ${EXIT.ok} every hook looked at is fine (Succeeded, Running, Suspended), ${EXIT.hookFailing} one failed, is stuck or blocked,
or the cluster could not be read, ${EXIT.badInput} bad input (arguments, a hook or Application that does not exist), ${EXIT.internal} internal error.`;

const TARGET = /^(job|jobs|job\.batch|pod|pods)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;

interface Target {
  kind: HookKindName;
  name: string;
}

function parseTarget(value: string): Target {
  const match = TARGET.exec(value);
  if (!match) throw new UsageError(`"${value}" is not job/NAME or pod/NAME`);
  return { kind: match[1]?.startsWith('pod') ? 'Pod' : 'Job', name: match[2] ?? '' };
}

function parseApplication(value: string): { namespace: string; name: string } {
  const [namespace, name, ...rest] = value.split('/');
  if (!namespace || !name || rest.length > 0) throw new UsageError(`--application "${value}" is not NAMESPACE/NAME`);
  return { namespace, name };
}

type Json = Record<string, unknown>;

function ownedByJob(pod: Json): boolean {
  const owners = metadataOf(pod)?.ownerReferences;
  return Array.isArray(owners) && owners.some((owner) => isRecord(owner) && owner.kind === 'Job');
}

/** Done without a doubt, from the object alone: `-A` counts it and reads nothing more. */
function plainlySucceeded(hook: Json): boolean {
  if (hook.kind === 'Pod') return isRecord(hook.status) && hook.status.phase === 'Succeeded';
  return conditionTrue(hook, ['Complete', 'SuccessCriteriaMet']) !== undefined;
}

interface Context {
  reader: HookReader;
  options: ExplainOptions;
  maxHooks: number;
  isHook: (object: Json) => boolean;
  lookup: ApplicationLookup;
}

async function explainAll(context: Context, hooks: readonly Json[]): Promise<HookExplanation[]> {
  const explained: HookExplanation[] = [];
  // One hook at a time: a run costs the API server a few requests at once, never a burst per hook.
  for (const hook of hooks) explained.push(explainHook(await context.reader.evidence(hook), context.options));
  return explained;
}

async function whyOne(context: Context, target: Target, namespace: string): Promise<WhyReport> {
  const hook = await context.reader.get(target.kind, namespace, target.name);
  if (hook === undefined) throw new UsageError(`${target.kind.toLowerCase()} ${namespace}/${target.name} not found`);
  const explained = explainHook(await context.reader.evidence(hook), context.options);
  return {
    scope: `${target.kind.toLowerCase()} ${namespace}/${target.name}`,
    hooks: [explained],
    examined: 1,
    notShown: 0,
    overCap: 0,
  };
}

async function whyAll(context: Context): Promise<WhyReport> {
  let succeeded = 0;
  const keep = (hook: Json): boolean => {
    if (!context.isHook(hook) || (hook.kind === 'Pod' && ownedByJob(hook))) return false;
    if (plainlySucceeded(hook)) {
      succeeded += 1;
      return false;
    }
    return true;
  };
  const candidates = [
    ...(await context.reader.listHooks('Job', undefined, keep)),
    ...(await context.reader.listHooks('Pod', undefined, keep)),
  ];
  const looked = candidates.slice(0, context.maxHooks);
  const explained = await explainAll(context, looked);
  const shown = explained.filter((hook) => hook.state !== 'Succeeded' && hook.state !== 'Running');
  return {
    scope: 'all namespaces',
    hooks: shown,
    examined: succeeded + looked.length,
    notShown: succeeded + looked.length - shown.length,
    overCap: candidates.length - looked.length,
  };
}

const GROUP_OF: Readonly<Record<HookKindName, string>> = { Job: 'batch', Pod: '' };

/**
 * The Applications a hook says it belongs to. Its tracking id, when it has one, is the whole answer: with annotation
 * tracking (argo-cd util/argo/resource_tracking.go, the default from v3.0) Argo CD reads no label, and a chart's own
 * `app.kubernetes.io/instance` (Helm's release name) names no Application.
 */
function trackingApplications(hook: Json, lookup: ApplicationLookup): ReturnType<typeof applicationsOf> {
  const metadata = metadataOf(hook) ?? {};
  const annotations = isRecord(metadata.annotations) ? metadata.annotations : {};
  if (typeof annotations[ARGOCD_TRACKING_ID] !== 'string') return applicationsOf(hook, lookup);
  return applicationsOf({ ...hook, metadata: { ...metadata, labels: {} } }, lookup);
}

async function whyApplication(context: Context, ref: { namespace: string; name: string }): Promise<WhyReport> {
  const application = await context.reader.getApplication(ref.namespace, ref.name);
  if (application === undefined) throw new UsageError(`Application ${ref.namespace}/${ref.name} not found`);
  const status = isRecord(application.status) ? application.status : {};
  const operation = isRecord(status.operationState) ? status.operationState : {};
  const phase = typeof operation.phase === 'string' ? operation.phase : undefined;
  const syncResult = isRecord(operation.syncResult) ? operation.syncResult : {};
  // The hooks of the operation: syncResult.resources entries with a hookType (argo-cd ResourceResult), of a kind
  // hookguard explains.
  const recorded = (Array.isArray(syncResult.resources) ? syncResult.resources.filter(isRecord) : []).filter(
    (resource) =>
      typeof resource.hookType === 'string' &&
      resource.hookType !== '' &&
      (resource.kind === 'Job' || resource.kind === 'Pod') &&
      (resource.group ?? '') === GROUP_OF[resource.kind] &&
      typeof resource.namespace === 'string' &&
      typeof resource.name === 'string',
  );
  const spec = isRecord(application.spec) ? application.spec : {};
  const destination = isRecord(spec.destination) ? spec.destination : {};
  const namespaces = new Set(recorded.map((resource) => resource.namespace as string));
  if (typeof destination.namespace === 'string' && destination.namespace !== '') namespaces.add(destination.namespace);
  const belongs = (hook: Json): boolean =>
    context.isHook(hook) &&
    !(hook.kind === 'Pod' && ownedByJob(hook)) &&
    trackingApplications(hook, context.lookup).some(
      (owner) => owner.namespace === ref.namespace && owner.name === ref.name,
    );
  const live: Json[] = [];
  for (const namespace of [...namespaces].sort()) {
    live.push(...(await context.reader.listHooks('Job', namespace, belongs)));
    live.push(...(await context.reader.listHooks('Pod', namespace, belongs)));
  }
  const key = (kind: unknown, namespace: unknown, name: unknown) =>
    `${String(kind)}/${String(namespace)}/${String(name)}`;
  const liveKeys = new Set(live.map((hook) => key(hook.kind, metadataOf(hook)?.namespace, metadataOf(hook)?.name)));
  // A recorded hook not found by its labels (tracked otherwise) is read by name; one that is gone is what Argo CD
  // recorded.
  const gone: Json[] = [];
  for (const resource of recorded) {
    if (liveKeys.has(key(resource.kind, resource.namespace, resource.name))) continue;
    const object = await context.reader.get(
      resource.kind as HookKindName,
      resource.namespace as string,
      resource.name as string,
    );
    if (object === undefined) gone.push(resource);
    else {
      live.push(object);
      liveKeys.add(key(resource.kind, resource.namespace, resource.name));
    }
  }
  const looked = live.slice(0, context.maxHooks);
  const hooks = [
    ...gone.map((resource) => explainRecordedHook(resource, phase)),
    ...(await explainAll(context, looked)),
  ];
  return {
    scope: `Application ${ref.namespace}/${ref.name}`,
    operation: {
      ...(phase !== undefined ? { phase } : {}),
      ...(typeof operation.message === 'string' && operation.message !== '' ? { message: operation.message } : {}),
    },
    hooks,
    examined: hooks.length,
    notShown: 0,
    overCap: live.length - looked.length,
  };
}

/** `hookguard why`: explains hooks; exits 1 when one failed, is stuck or is blocked. */
export async function runWhy(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArguments(argv, {
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      application: { type: 'string' },
      'all-namespaces': { type: 'boolean', short: 'A', default: false },
      output: { type: 'string', short: 'o', default: 'text' },
      'stuck-after-seconds': { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout(`${WHY_USAGE}\n`);
    return EXIT.ok;
  }
  const output = textOrJson(values.output);
  const asked = [positionals.length > 0, values.application !== undefined, values['all-namespaces']].filter(Boolean);
  if (asked.length !== 1 || positionals.length > 1)
    throw new UsageError('name one hook (job/NAME or pod/NAME), or --application NS/NAME, or -A');
  if (values.namespace !== undefined && (values.namespace === '' || positionals.length === 0))
    throw new UsageError('-n goes with job/NAME or pod/NAME, and must not be empty');
  const target = positionals[0] !== undefined ? parseTarget(positionals[0]) : undefined;
  const application = values.application !== undefined ? parseApplication(values.application) : undefined;
  const config = loadConfigWithFlags(io, values.config, [
    { flag: 'stuck-after-seconds', key: 'why.stuckAfterSeconds', value: values['stuck-after-seconds'] },
  ]);
  const connection = kubeConnection(io.env);
  if (!connection) throw new UsageError(noClusterProblem(io.env));
  const detection = { argocdControllerUsernames: [], argocdTrackingLabel: config.argocd.trackingLabel ?? undefined };
  const context: Context = {
    reader: kubeHookReader(connection.kubeConfig),
    options: { now: Date.now(), stuckAfterSeconds: config.why.stuckAfterSeconds },
    maxHooks: config.why.maxHooks,
    isHook: (object) => readHook(object, undefined, detection) !== undefined,
    lookup: applicationLookupOf(config),
  };
  let report: WhyReport;
  try {
    if (target !== undefined) {
      // Like kubectl: -n, else the namespace of the kubeconfig's current context, else default.
      const contextNamespace = connection.kubeConfig.getContextObject(
        connection.kubeConfig.getCurrentContext(),
      )?.namespace;
      report = await whyOne(context, target, values.namespace ?? contextNamespace ?? 'default');
    } else if (application !== undefined) report = await whyApplication(context, application);
    else report = await whyAll(context);
  } catch (error) {
    if (error instanceof UsageError || isBug(error)) throw error;
    const failure = error instanceof ApiCallError ? error.failure : apiFailure(error);
    io.stderr(`hookguard why: cannot read the cluster (${connection.source}): ${apiFailureText(failure)}\n`);
    return EXIT.hookFailing;
  }
  io.stdout(output === 'json' ? renderWhyJson(report) : renderWhyText(report));
  return report.hooks.some((hook) => FAILING_STATES.has(hook.state)) ? EXIT.hookFailing : EXIT.ok;
}
