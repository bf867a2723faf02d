import { ARGOCD_TRACKING_ID } from '../core/annotations.js';
import {
  explainHook,
  explainRecordedHook,
  explainRelease,
  FAILING_STATES,
  type ExplainOptions,
  type FluxReleaseOwner,
  type HookExplanation,
  type ReleaseExplanation,
  type ReleaseHookEvidence,
} from '../core/explain/index.js';
import { helmReleaseTarget, notReadyForAHook } from '../core/flux.js';
import { releasesToExplain } from '../core/release.js';
import { readHook } from '../core/hook.js';
import { conditionTrue, isRecord, metadataOf } from '../core/objects.js';
import { ApiCallError, apiFailureText, EXIT, isBug, UsageError, UserError } from '../errors.js';
import { apiFailure } from '../kube/api-failure.js';
import { listHelmReleases, listStoredRevisions, readStoredRelease } from '../kube/helm-release.js';
import { kubeHookReader, type HookKindName, type HookReader } from '../kube/hook-evidence.js';
import { kubeConnection, noClusterProblem } from '../kube/kubeconfig.js';
import { renderWhyJson, renderWhyText, type WhyReport } from '../report/why.js';
import { applicationLookupOf } from '../sweep/application-lookup.js';
import { applicationsOf, type ApplicationLookup } from '../sweep/qualify.js';
import { loadConfigWithFlags, parseArguments, textOrJson } from './arguments.js';
import type { CommandIO } from './io.js';
import type { KubeConfig } from '@kubernetes/client-node';

export const WHY_USAGE = `Usage: hookguard why job/NAME|pod/NAME [-n NS] | --application NS/NAME | --release NS/NAME [--revision N]
                     | --helmrelease NS/NAME | -A   [--output text|json] [--stuck-after-seconds N] [--config FILE]
Says why a hook Job or Pod failed or hangs, from what Kubernetes wrote: the Job's conditions, its Pods' container
states (exit code, reason, termination message), the scheduler's verdict, and the Events of the kubelet and the job
controller (events.k8s.io/v1 and v1). States: Succeeded, Running, Failed, Stuck (a Pod waiting longer than
why.stuckAfterSeconds, default 300), Blocked (a Job whose Pods cannot be created for that long), Suspended (a Job
suspended for less than that; longer, it is Stuck).
  job/NAME, pod/NAME     one hook, in -n NS (default: the kubeconfig context's namespace, else default)
  --application NS/NAME  every hook of that Argo CD Application's current or last operation, and every hook
                         carrying its tracking id or instance label
  --release NS/NAME      a Helm release: its status (pending-install, pending-upgrade, failed, …) and each hook it
                         declares as Helm recorded it (events, delete policies, last run), with each hook object
                         that still exists explained; the newest revision, or --revision N
  --helmrelease NS/NAME  a Flux HelmRelease: its Ready and Released conditions, then its release as --release
  -A, --all-namespaces   every hook in the cluster that is not Succeeded or Running (at most why.maxHooks), every
                         Helm release whose newest revision failed or is pending (its Secrets' labels), and every
                         Flux HelmRelease not Ready because of a hook
Talks to the cluster of KUBECONFIG, the in-cluster service account, or ~/.kube/config. Reads jobs, pods and events
(through events.k8s.io/v1 and v1; either is enough), applications.argoproj.io for --application, the release's
Secrets (list and get; ConfigMaps under HELM_DRIVER=configmap) for --release, helmreleases.helm.toolkit.fluxcd.io
for --helmrelease, and for -A's releases both in all namespaces (a list refused is said and left out).
Exit status: ${EXIT.ok} every hook looked at is fine (Succeeded, Running, Suspended), and the release deployed or under way,
${EXIT.hookFailing} a hook failed, is stuck or blocked, a release failed or is stuck pending-*, or the cluster could not be
read, ${EXIT.badInput} bad input (arguments; a hook, Application, release or HelmRelease that does not exist; a release record
that cannot be read), ${EXIT.internal} internal error.`;

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

function parseReference(flag: string, value: string): { namespace: string; name: string } {
  const [namespace, name, ...rest] = value.split('/');
  if (!namespace || !name || rest.length > 0) throw new UsageError(`--${flag} "${value}" is not NAMESPACE/NAME`);
  return { namespace, name };
}

function parseRevision(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(value))
    throw new UsageError(`--revision "${value}" is not a revision number (1, 2, …)`);
  return Number(value);
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

/**
 * `-A`'s releases: each Helm release whose newest revision failed or is pending (Secrets' labels, cluster-wide), and
 * each Flux HelmRelease not Ready because of a hook, explained as --release; shown when not fine, or owned by such a
 * HelmRelease. One that may not be listed (403) is left out and said on stderr: -A still explains the hooks.
 */
async function failingReleases(
  context: Context,
  kubeConfig: KubeConfig,
  io: CommandIO,
): Promise<{ releases: ReleaseExplanation[]; overCap: number }> {
  const refs = new Map<string, ReleaseRef>();
  const refused = (error: unknown, what: string): void => {
    const failure = apiFailure(error);
    if (failure.status !== 403) throw error;
    io.stderr(`hookguard why: ${what} not looked at: ${apiFailureText(failure)}\n`);
  };
  try {
    for (const revision of releasesToExplain(await listStoredRevisions(kubeConfig)))
      refs.set(`${revision.namespace}/${revision.name}`, {
        storageNamespace: revision.namespace,
        name: revision.name,
        revision: revision.version,
      });
  } catch (error) {
    refused(error, 'Helm releases (list secrets in all namespaces)');
  }
  try {
    for (const object of await listHelmReleases(kubeConfig)) {
      const target = helmReleaseTarget(object);
      const metadata = metadataOf(object) ?? {};
      if (target === undefined || !notReadyForAHook(target)) continue;
      const key = `${target.storageNamespace}/${target.releaseName}`;
      refs.set(key, {
        storageNamespace: target.storageNamespace,
        name: target.releaseName,
        revision: refs.get(key)?.revision,
        helmRelease: {
          namespace: String(metadata.namespace),
          name: String(metadata.name),
          conditions: target.conditions,
        },
      });
    }
  } catch (error) {
    refused(error, 'Flux HelmReleases (list helmreleases.helm.toolkit.fluxcd.io)');
  }
  const looked = [...refs.values()].slice(0, context.maxHooks);
  const releases: ReleaseExplanation[] = [];
  for (const ref of looked) {
    let report: WhyReport;
    try {
      report = await whyRelease(context, kubeConfig, ref);
    } catch (error) {
      // Gone between the list and the read (uninstalled, rolled back past its history).
      if (error instanceof UsageError) continue;
      throw error;
    }
    for (const release of report.releases ?? [])
      if (release.helmRelease !== undefined || (release.state !== 'Succeeded' && release.state !== 'Running'))
        releases.push(release);
  }
  return { releases, overCap: refs.size - looked.length };
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

interface ReleaseRef {
  /** Where the records are stored. */
  storageNamespace: string;
  name: string;
  revision: number | undefined;
  helmRelease?: FluxReleaseOwner;
}

/**
 * A Helm release: its record, and for each Job or Pod hook it declares the object if it still exists, explained. A
 * hook's object is read in the namespace its manifest names, else the release's (Helm's own rule,
 * pkg/action/hooks.go deriveNamespace).
 */
async function whyRelease(context: Context, kubeConfig: KubeConfig, ref: ReleaseRef): Promise<WhyReport> {
  const stored = await readStoredRelease(kubeConfig, ref.storageNamespace, ref.name, ref.revision);
  if (stored === undefined)
    throw new UsageError(
      `Helm release ${ref.storageNamespace}/${ref.name}${ref.revision !== undefined ? ` revision ${ref.revision}` : ''} not found (no Secret or ConfigMap sh.helm.release.v1.${ref.name}.v* labelled owner=helm in ${ref.storageNamespace})`,
    );
  const { release } = stored;
  const evidence: ReleaseHookEvidence[] = [];
  let read = 0;
  let overCap = 0;
  for (const hook of release.hooks) {
    const namespace = hook.namespace ?? release.namespace;
    if (hook.kind !== 'Job' && hook.kind !== 'Pod') {
      evidence.push({ hook, namespace, live: undefined });
      continue;
    }
    if (read >= context.maxHooks) {
      overCap += 1;
      evidence.push({ hook, namespace, live: undefined });
      continue;
    }
    const object = await context.reader.get(hook.kind, namespace, hook.name);
    if (object === undefined) {
      evidence.push({ hook, namespace, live: null });
      continue;
    }
    const live = explainHook(await context.reader.evidence(object), context.options);
    read += 1;
    const created = metadataOf(object)?.creationTimestamp;
    evidence.push({ hook, namespace, live, ...(typeof created === 'string' ? { created } : {}) });
  }
  const explanation = explainRelease(
    {
      release,
      storedIn: stored.storedIn,
      hooks: evidence,
      ...(ref.helmRelease ? { helmRelease: ref.helmRelease } : {}),
    },
    context.options,
  );
  // Shown below the release: the objects of the hooks this revision ran; another run's are only named in its list.
  const shown = explanation.hooks.flatMap((hook) => (hook.live ? [hook.live] : []));
  return {
    scope: `${ref.helmRelease ? `HelmRelease ${ref.helmRelease.namespace}/${ref.helmRelease.name}, ` : ''}Release ${release.namespace}/${release.name}`,
    releases: [explanation],
    hooks: shown,
    // Another run's objects were read only to name their state in the release's list.
    examined: shown.length,
    notShown: 0,
    overCap,
  };
}

/** A Flux HelmRelease: the release it names (helmReleaseTarget(), helm-controller's defaults), as --release. */
async function whyHelmRelease(
  context: Context,
  kubeConfig: KubeConfig,
  ref: { namespace: string; name: string },
): Promise<WhyReport> {
  const object = await context.reader.getHelmRelease(ref.namespace, ref.name);
  const target = object === undefined ? undefined : helmReleaseTarget(object);
  if (target === undefined) throw new UsageError(`HelmRelease ${ref.namespace}/${ref.name} not found`);
  return whyRelease(context, kubeConfig, {
    storageNamespace: target.storageNamespace,
    name: target.releaseName,
    revision: undefined,
    helmRelease: { ...ref, conditions: target.conditions },
  });
}

/** `hookguard why`: explains hooks; exits 1 when one failed, is stuck or is blocked. */
export async function runWhy(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArguments(argv, {
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      application: { type: 'string' },
      release: { type: 'string' },
      revision: { type: 'string' },
      helmrelease: { type: 'string' },
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
  const asked = [
    positionals.length > 0,
    values.application !== undefined,
    values.release !== undefined,
    values.helmrelease !== undefined,
    values['all-namespaces'],
  ].filter(Boolean);
  if (asked.length !== 1 || positionals.length > 1)
    throw new UsageError(
      'name one hook (job/NAME or pod/NAME), or --application NS/NAME, --release NS/NAME, --helmrelease NS/NAME, or -A',
    );
  if (values.revision !== undefined && values.release === undefined)
    throw new UsageError('--revision goes with --release');
  if (values.namespace !== undefined && (values.namespace === '' || positionals.length === 0))
    throw new UsageError('-n goes with job/NAME or pod/NAME, and must not be empty');
  const target = positionals[0] !== undefined ? parseTarget(positionals[0]) : undefined;
  const application = values.application !== undefined ? parseReference('application', values.application) : undefined;
  const release = values.release !== undefined ? parseReference('release', values.release) : undefined;
  const revision = parseRevision(values.revision);
  const helmRelease = values.helmrelease !== undefined ? parseReference('helmrelease', values.helmrelease) : undefined;
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
    else if (release !== undefined)
      report = await whyRelease(context, connection.kubeConfig, {
        storageNamespace: release.namespace,
        name: release.name,
        revision,
      });
    else if (helmRelease !== undefined) report = await whyHelmRelease(context, connection.kubeConfig, helmRelease);
    else {
      const hooks = await whyAll(context);
      const { releases, overCap } = await failingReleases(context, connection.kubeConfig, io);
      report = { ...hooks, ...(releases.length > 0 ? { releases } : {}), overCap: hooks.overCap + overCap };
    }
  } catch (error) {
    // A record that is no release (InputError) is bad input, as a hook that does not exist.
    if (error instanceof UserError || isBug(error)) throw error;
    const failure = error instanceof ApiCallError ? error.failure : apiFailure(error);
    io.stderr(`hookguard why: cannot read the cluster (${connection.source}): ${apiFailureText(failure)}\n`);
    return EXIT.hookFailing;
  }
  io.stdout(output === 'json' ? renderWhyJson(report) : renderWhyText(report));
  const failing =
    report.hooks.some((hook) => FAILING_STATES.has(hook.state)) ||
    (report.releases ?? []).some((release) => FAILING_STATES.has(release.state));
  return failing ? EXIT.hookFailing : EXIT.ok;
}
