// What the sweep's cluster tests (test/cluster/sweep.test.ts) make in the real API server: hook Jobs and Pods that
// really ran (the Job controller and the kubelet simulator wrote their status), deleted and held by Argo CD's hook
// finalizer; the sweep's own identity, as the chart installs it; a sweep run in this process through the fault
// proxy, and a way to leave no finalizer behind in the shared cluster.
import { KubeConfig } from '@kubernetes/client-node';
import { HOOKGUARD_NAMESPACE } from '../cluster.js';
import { kubeSweepClient } from '../../../src/sweep/client.js';
import { sweep, type SweepOptions } from '../../../src/sweep/sweep.js';
import { capturedLogger } from '../../support/log-sink.js';
import { kubectl, kubectlJson, run, kubectlPath, waitUntil } from './cluster.js';
import { serviceAccountToken } from './fault-proxy.js';

export const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';
export const KEEP = 'example.com/keep';
/** The ServiceAccount the chart's sweep CronJob runs as (charts/hookguard/templates/serviceaccounts.yaml). */
export const SWEEP_SERVICE_ACCOUNT = 'hookguard-sweep';
export const SWEEP_ACTOR = `system:serviceaccount:${HOOKGUARD_NAMESPACE}:${SWEEP_SERVICE_ACCOUNT}`;
export const REPORTING_INSTANCE = 'hookguard-sweep-29381760-x2v7q';

/** A token of the sweep's ServiceAccount: its ClusterRole and its ValidatingAdmissionPolicy are the chart's. */
export function sweepToken(): Promise<string> {
  return serviceAccountToken(HOOKGUARD_NAMESPACE, SWEEP_SERVICE_ACCOUNT);
}

type Json = Record<string, unknown>;

export interface HookShape {
  name: string;
  finalizers?: string[];
  /** The object's annotations: an Argo CD PreSync hook by default. */
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  /** For the kubelet simulator: how long the container runs, with what exit code. */
  runSeconds?: number;
  exitCode?: number;
  /** A Job that never starts a Pod. */
  suspend?: boolean;
}

const PRESYNC = { 'argocd.argoproj.io/hook': 'PreSync' };

function podTemplate(shape: HookShape): Json {
  return {
    metadata: {
      annotations: {
        'test.hookguard.io/run-seconds': String(shape.runSeconds ?? 0),
        'test.hookguard.io/exit-code': String(shape.exitCode ?? 0),
      },
    },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'main', image: 'alpine:3.20', command: ['sh', '-c', 'true'] }],
    },
  };
}

export function hookJob(namespace: string, shape: HookShape): Json {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: shape.name,
      namespace,
      finalizers: shape.finalizers ?? [HOOK_FINALIZER],
      annotations: shape.annotations ?? PRESYNC,
      ...(shape.labels ? { labels: shape.labels } : {}),
    },
    spec: { backoffLimit: 0, ...(shape.suspend ? { suspend: true } : {}), template: podTemplate(shape) },
  };
}

export function hookPod(namespace: string, shape: HookShape): Json {
  const template = podTemplate(shape);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: shape.name,
      namespace,
      finalizers: shape.finalizers ?? [HOOK_FINALIZER],
      annotations: { ...(shape.annotations ?? PRESYNC), ...(template.metadata as { annotations: Json }).annotations },
      ...(shape.labels ? { labels: shape.labels } : {}),
    },
    spec: template.spec,
  };
}

/** Creates the objects as the admin, in one kubectl call. */
export async function create(objects: Json[]): Promise<void> {
  await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
}

/** Waits until the Job controller has written `type` (Complete, Failed) on each Job named. */
export async function jobsFinished(namespace: string, expected: Record<string, 'Complete' | 'Failed'>): Promise<void> {
  await waitUntil(`Jobs ${JSON.stringify(expected)} in ${namespace}`, async () => {
    const jobs = await kubectlJson<{
      items: Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>;
    }>(['get', 'jobs', '-n', namespace]);
    return Object.entries(expected).every(([name, type]) =>
      (jobs.items.find((job) => job.metadata.name === name)?.status?.conditions ?? []).some(
        (condition) => condition.type === type && condition.status === 'True',
      ),
    );
  });
}

/** Waits until the kubelet simulator has put each Pod named in `phase`. */
export async function podsIn(namespace: string, names: string[], phase: string): Promise<void> {
  await waitUntil(`Pods ${names.join(', ')} ${phase} in ${namespace}`, async () => {
    const pods = await kubectlJson<{ items: Array<{ metadata: { name: string }; status?: { phase?: string } }> }>([
      'get',
      'pods',
      '-n',
      namespace,
    ]);
    return names.every((name) => pods.items.find((pod) => pod.metadata.name === name)?.status?.phase === phase);
  });
}

/** Deletes the objects as Argo CD or a TTL would (background propagation), without waiting for them to go. */
export async function deleteObjects(namespace: string, kind: 'job' | 'pod', names: string[]): Promise<void> {
  await kubectl(['delete', kind, ...names, '-n', namespace, '--wait=false']);
}

/** The object as stored now, or undefined when it is gone. */
export async function stored(namespace: string, kind: 'job' | 'pod', name: string): Promise<Json | undefined> {
  const result = await run(kubectlPath, ['get', kind, name, '-n', namespace, '-o', 'json']);
  if (result.status !== 0) {
    if (result.stderr.includes('NotFound')) return undefined;
    throw new Error(`kubectl get ${kind} ${name}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Json;
}

export async function finalizersOf(namespace: string, kind: 'job' | 'pod', name: string): Promise<unknown> {
  return ((await stored(namespace, kind, name))?.metadata as Json | undefined)?.finalizers;
}

/**
 * Takes every finalizer off the Jobs, Pods and Workflows of NAMESPACE, as the admin: a test that failed half-way must not leave
 * objects, or its namespace, Terminating for ever in the shared cluster.
 */
export async function releaseFinalizers(namespace: string): Promise<void> {
  for (const kind of ['jobs', 'pods', 'workflows.argoproj.io']) {
    const listed = await run(kubectlPath, ['get', kind, '-n', namespace, '-o', 'json']);
    if (listed.status !== 0) continue;
    const items = (JSON.parse(listed.stdout) as { items: Array<{ metadata: { name: string; finalizers?: string[] } }> })
      .items;
    for (const item of items.filter((object) => (object.metadata.finalizers ?? []).length > 0))
      await run(kubectlPath, [
        'patch',
        kind,
        item.metadata.name,
        '-n',
        namespace,
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":null}}',
      ]);
  }
}

/** The CronJob's options (sweep --apply) with quick retries, `overrides` on top. */
export function sweepOptions(overrides: Partial<SweepOptions> = {}): SweepOptions {
  return {
    namespace: undefined,
    apply: true,
    profiles: ['argocd-hook'],
    minAgeSeconds: 600,
    finishedGraceSeconds: 300,
    applicationLookup: { instanceLabels: ['app.kubernetes.io/instance'], controlPlaneNamespaces: ['argocd'] },
    argoWorkflowsGraceSeconds: 600,
    retry: { maxAttempts: 4, backoff: { initialMs: 10, maxMs: 50 } },
    actor: SWEEP_ACTOR,
    reportingInstance: REPORTING_INSTANCE,
    ...overrides,
  };
}

/** `minutes` from now: the sweep judges as if that much time had passed since the objects were deleted. */
export const inMinutes = (minutes: number) => () => new Date(Date.now() + minutes * 60_000);

/** One pass in this process, through `kubeConfig`: the report, each object's action by name, and the log lines. */
export async function sweepOnce(kubeConfig: KubeConfig, overrides: Partial<SweepOptions>) {
  const { logger, lines } = capturedLogger();
  const report = await sweep(kubeSweepClient(kubeConfig), sweepOptions(overrides), logger);
  const outcome = Object.fromEntries(report.results.map((result) => [result.name, result.action]));
  return { report, outcome, lines };
}

/** Ages change from run to run; everything else is compared exactly. */
export const steady = (text: string) => text.replace(/deleting for [0-9hms]+/g, 'deleting for AGE');

export const WORKFLOW_FINALIZER = 'workflows.argoproj.io/status';

/**
 * A Workflow (argoproj.io/v1alpha1, argo-workflows v4.1.2's CRD) running one Pod node, NAME-node, as its controller
 * keeps it; `change` edits it before it is created.
 */
export function workflow(
  namespace: string,
  name: string,
  change: (workflow: Record<string, any>) => void = () => {},
): Json {
  const found: Record<string, any> = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Workflow',
    metadata: {
      name,
      namespace,
      labels: { 'workflows.argoproj.io/completed': 'false', 'workflows.argoproj.io/phase': 'Running' },
    },
    spec: {
      entrypoint: 'main',
      templates: [{ name: 'main', container: { image: 'busybox:1.37', command: ['echo'] } }],
    },
    status: {
      phase: 'Running',
      startedAt: '2026-11-22T11:20:00Z',
      nodes: {
        [`${name}-node`]: {
          id: `${name}-node`,
          name,
          displayName: name,
          type: 'Pod',
          templateName: 'main',
          phase: 'Running',
          startedAt: '2026-11-22T11:20:00Z',
        },
      },
    },
  };
  change(found);
  return found;
}

/**
 * The step pod `<workflow>-main` of a Workflow as its controller makes it (argo-workflows v4.1.2
 * workflow/controller/workflowpod.go: its labels, node-id annotation, controller ownerReference and finalizer);
 * OWNER_UID the Workflow's (or one of none).
 */
export function workflowPod(
  namespace: string,
  workflowName: string,
  ownerUid: string,
  shape: Partial<HookShape> = {},
): Json {
  const pod = hookPod(namespace, {
    name: `${workflowName}-main`,
    finalizers: shape.finalizers ?? [WORKFLOW_FINALIZER],
    annotations: { 'workflows.argoproj.io/node-id': `${workflowName}-node`, ...shape.annotations },
    labels: { 'workflows.argoproj.io/workflow': workflowName, 'workflows.argoproj.io/completed': 'false' },
    runSeconds: shape.runSeconds ?? 0,
  });
  (pod.metadata as Json).ownerReferences = [
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Workflow',
      name: workflowName,
      uid: ownerUid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
  return pod;
}

/** The uid the API server gave an object. */
export async function uidOf(namespace: string, resource: string, name: string): Promise<string> {
  return (await kubectl(['get', resource, name, '-n', namespace, '-o', 'jsonpath={.metadata.uid}'])).trim();
}
