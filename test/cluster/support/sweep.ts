// What the sweep's cluster tests (test/cluster/sweep.test.ts) make in the real API server: hook Jobs and Pods that
// really ran (the Job controller and the kubelet simulator wrote their status), deleted and held by Argo CD's hook
// finalizer; the sweep's own identity, as the chart installs it; a sweep run in this process through the fault
// proxy, and a way to leave no finalizer behind in the shared cluster.
import { PatchStrategy, type KubeConfig, type KubernetesObject, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { HOOKGUARD_NAMESPACE } from '../cluster.js';
import { kubeSweepClient } from '../../../src/sweep/client.js';
import { sweep, type SweepOptions } from '../../../src/sweep/sweep.js';
import { capturedLogger } from '../../support/log-sink.js';
import { adminObjectApi, unlessNotFound, waitUntil } from './cluster.js';
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

/** The kinds these tests make, as the API names them. */
const KINDS = {
  job: { apiVersion: 'batch/v1', kind: 'Job' },
  pod: { apiVersion: 'v1', kind: 'Pod' },
  workflow: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Workflow' },
} as const;
export type Kind = keyof typeof KINDS;

const header = (namespace: string, kind: Kind, name: string) => ({ ...KINDS[kind], metadata: { name, namespace } });

/** Creates the objects as the admin, one after the other, as `kubectl create -f` does a List. */
export async function create(objects: Json[]): Promise<void> {
  for (const object of objects) await adminObjectApi().create(object);
}

/** Waits until the Job controller has written `type` (Complete, Failed) on each Job named. */
export async function jobsFinished(namespace: string, expected: Record<string, 'Complete' | 'Failed'>): Promise<void> {
  await waitUntil(`Jobs ${JSON.stringify(expected)} in ${namespace}`, async () => {
    const jobs = await adminObjectApi().list<V1Job>(KINDS.job.apiVersion, KINDS.job.kind, namespace);
    return Object.entries(expected).every(([name, type]) =>
      (jobs.items.find((job) => job.metadata?.name === name)?.status?.conditions ?? []).some(
        (condition) => condition.type === type && condition.status === 'True',
      ),
    );
  });
}

/** Waits until the kubelet simulator has put each Pod named in `phase`. */
export async function podsIn(namespace: string, names: string[], phase: string): Promise<void> {
  await waitUntil(`Pods ${names.join(', ')} ${phase} in ${namespace}`, async () => {
    const pods = await adminObjectApi().list<V1Pod>(KINDS.pod.apiVersion, KINDS.pod.kind, namespace);
    return names.every((name) => pods.items.find((pod) => pod.metadata?.name === name)?.status?.phase === phase);
  });
}

/**
 * Deletes the objects as Argo CD or a TTL would (background propagation, as `kubectl delete` asks), one after the
 * other, without waiting for them to go.
 */
export async function deleteObjects(namespace: string, kind: Kind, names: string[]): Promise<void> {
  for (const name of names)
    await adminObjectApi().delete(
      header(namespace, kind, name),
      undefined,
      undefined,
      undefined,
      undefined,
      'Background',
    );
}

/** The object as stored now, or undefined when it is gone. */
export async function stored(namespace: string, kind: Kind, name: string): Promise<Json | undefined> {
  return await unlessNotFound(adminObjectApi().read<Json>(header(namespace, kind, name)));
}

export async function finalizersOf(namespace: string, kind: Kind, name: string): Promise<unknown> {
  return ((await stored(namespace, kind, name))?.metadata as Json | undefined)?.finalizers;
}

/** Sets the object's finalizers (null: none) with the admin's merge patch, as another controller's write. */
export async function setFinalizers(
  namespace: string,
  kind: Kind,
  name: string,
  finalizers: string[] | null,
): Promise<void> {
  // null is how a merge patch removes a field, which KubernetesObject's type does not know of.
  const patch = { ...KINDS[kind], metadata: { name, namespace, finalizers } } as unknown as KubernetesObject;
  await adminObjectApi().patch(patch, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
}

/**
 * Takes every finalizer off the Jobs, Pods and Workflows of NAMESPACE, as the admin: a test that failed half-way must
 * not leave objects, or its namespace, Terminating for ever in the shared cluster. Best effort, as a clean-up: a kind
 * that cannot be listed (no Workflow CRD) is passed over, and a patch that fails (the object gone meanwhile) too.
 */
export async function releaseFinalizers(namespace: string): Promise<void> {
  for (const kind of Object.keys(KINDS) as Kind[]) {
    const listed = await adminObjectApi()
      .list(KINDS[kind].apiVersion, KINDS[kind].kind, namespace)
      .catch(() => undefined);
    for (const item of listed?.items.filter((object) => (object.metadata?.finalizers ?? []).length > 0) ?? [])
      await setFinalizers(namespace, kind, item.metadata?.name as string, null).catch(() => undefined);
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
export async function uidOf(namespace: string, kind: Kind, name: string): Promise<string> {
  return (await adminObjectApi().read(header(namespace, kind, name))).metadata?.uid as string;
}
