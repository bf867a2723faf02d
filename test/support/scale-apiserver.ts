// A stand-in for kube-apiserver at cluster scale, for `npm run bench:sweep` and its correctness test: N Jobs and N Pods
// of about 5 KB each, generated from their index whenever they are asked for, so the stand-in itself stays small
// however large N is. It answers what the sweep asks as kube-apiserver does (the bodies: test/support/api-bodies.ts;
// the same requests on the real control plane: test/cluster/): paged lists with `limit` and an opaque `continue` token, metadata only for
// `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`, 410 Expired for a token it is told to
// expire; GET of one object; JSON patches whose failed `test` op answers 422; an object deleted once its last
// finalizer is gone; Workflows (argoproj.io/v1alpha1) by name; events.k8s.io/v1 Events, checked. Only what a
// patch changed is kept, per object. It counts requests and bytes.
//
// For the hook watcher (`npm run bench:watch`, bench/watch-measure.ts): the `labelSelector` query as kube-apiserver
// reads it (test/support/label-selector.ts: every form, and a 400 BadRequest Status for a malformed one), on the
// cluster-wide and the namespaced lists of Jobs and Pods; `watch=true` as kube-apiserver streams it: newline-delimited
// {"type","object"} events, no initial ADDED events for a watch from a resourceVersion (only from "" or "0"), a
// BOOKMARK roughly every minute and 2 s before the deadline when allowWatchBookmarks=true (apiserver
// pkg/storage/cacher/cache_watcher.go nextBookmarkTime), closed at timeoutSeconds; events.k8s.io/v1 Events listed by
// field selector, and created once per name (409 AlreadyExists after). Nothing changes while the stand-in runs, so a
// watch carries only bookmarks.
//
// Which objects carry hookguard's label `hookguard.io/hook=admitted` (rule hook-label labels the hook Jobs and the bare
// hook Pods it admits, not a Job's Pods): `hooksPerKind` Jobs and as many bare hook Pods, 1% of each kind unless told
// otherwise (hooks are a small fraction of a cluster's Jobs and Pods: most are CronJob and batch runs), spread evenly
// over the indexes (see `hookOf`). Of the labelled hooks, per 50: one failed (a Job with BackoffLimitExceeded and its
// Pod exited 1; a bare Pod exited 1), one still running (for days: overdue, so the watcher explains it), the rest
// succeeded. A labelled Job's own Pod carries the job controller's labels (`job-name`, `batch.kubernetes.io/job-name`).
//
// Which objects are stuck, and which only look it, follows from the index (see `shapeOf`): per 1,000 Jobs one stuck
// hook; per 2,000 Pods one stuck hook Pod and one stuck Argo Workflows pod (0.1% of each kind), and as many look-alikes
// the sweep must leave alone (being deleted but still running, or with a Workflow still waiting for the pod's result).
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { applyPatch, type Operation } from '../../src/core/json-patch.js';
import {
  eventProblems,
  kubeConfigOptions,
  partialObjectMetadataList,
  CONTINUE_EXPIRED,
  eventsServed,
  wantsMetadataList,
  type KubeItem,
} from './api-bodies.js';
import { statusBody } from './api-status.js';
import {
  badRequestStatus,
  parseLabelSelector,
  requiredValue,
  selectorMatches,
  type Requirement,
} from './label-selector.js';

type Json = Record<string, unknown>;
export type ScaleKind = 'Job' | 'Pod';

export const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';
export const WORKFLOW_FINALIZER = 'workflows.argoproj.io/status';
export const KEEP_FINALIZER = 'example.com/keep';
export const HOOK_LABEL = 'hookguard.io/hook';
export const HOOK_LABEL_VALUE = 'admitted';
/** How a labelled hook ended, or that it still runs. */
export type HookOutcome = 'succeeded' | 'failed' | 'running';
/** What kube-apiserver puts into the Status of a failed Job's condition and the kubelet into a failed container. */
const FAILED_JOB_MESSAGE = 'Job has reached the specified backoff limit';

/**
 * - `stuck-hook`: a finished Argo CD hook being deleted for 30 minutes, holding the hook finalizer (Jobs and Pods).
 * - `stuck-workflow-pod`: a Succeeded workflow pod being deleted for 30 minutes whose Workflow is gone.
 * - `running-hook`: a hook being deleted for a minute that still runs: left alone.
 * - `waiting-workflow-pod`: a Succeeded workflow pod being deleted for 30 minutes whose Workflow still runs its node.
 * - `other-finalizer`: being deleted, holding only someone else's finalizer: not the sweep's business.
 * - `live-hook`: a hook that is not being deleted, holding the hook finalizer (as every running hook does); those
 *   carrying hookguard's label ran as `hookOf` says, and once ended hold no finalizer.
 * - `plain`: everything else.
 */
export type Shape =
  | 'stuck-hook'
  | 'stuck-workflow-pod'
  | 'running-hook'
  | 'waiting-workflow-pod'
  | 'other-finalizer'
  | 'live-hook'
  | 'plain';

export function shapeOf(kind: ScaleKind, index: number): Shape {
  if (kind === 'Job') {
    const slot = index % 1000;
    if (slot === 7) return 'stuck-hook';
    if (slot === 507) return 'running-hook';
    if (slot === 257) return 'other-finalizer';
  } else {
    const slot = index % 2000;
    if (slot === 7) return 'stuck-hook';
    if (slot === 1007) return 'stuck-workflow-pod';
    if (slot === 507) return 'running-hook';
    if (slot === 1507) return 'waiting-workflow-pod';
    if (slot === 257) return 'other-finalizer';
  }
  return index % 100 === 3 ? 'live-hook' : 'plain';
}

const NAMESPACES = 100;
const namespaceOf = (index: number) => `team-${index % NAMESPACES}`;
const nameOf = (kind: ScaleKind, index: number) => `${kind === 'Job' ? 'job' : 'pod'}-${index}`;
const workflowNameOf = (index: number) => `wf-${index}`;
const nodeIdOf = (index: number) => `wf-${index}-${1_000_000_000 + index}`;
const uidOf = (kind: ScaleKind, index: number) =>
  `${kind === 'Job' ? '4a0b' : '9c1d'}${String(index).padStart(8, '0')}-0000-4000-8000-00000000cafe`;
/** The resourceVersion of every list and bookmark: nothing changes while the stand-in runs. */
const RESOURCE_VERSION = '500000';
/** Every object was created at the same moment; deletions are relative to when the stand-in started. */
const CREATED = '2026-11-01T08:00:00Z';

export interface ScaleCounts {
  list: number;
  get: number;
  patch: number;
  workflow: number;
  event: number;
  /** Watch requests (each one stream). */
  watch: number;
  other: number;
  /** Bytes of the list answers. */
  listBytes: number;
  /** Bytes of every answer. */
  bytes: number;
}

export interface PatchRecord {
  kind: ScaleKind;
  name: string;
  status: number;
}

export class ScaleApiServer {
  private server: Server | undefined;
  port = 0;
  private readonly started = Date.now();
  /** Objects a patch changed, by kind/index; null once deleted. */
  private readonly changed = new Map<string, Json | null>();
  readonly counts: ScaleCounts = {
    list: 0,
    get: 0,
    patch: 0,
    workflow: 0,
    event: 0,
    watch: 0,
    other: 0,
    listBytes: 0,
    bytes: 0,
  };
  readonly patches: PatchRecord[] = [];
  /** Events created: their reason and the name of the object they regard. */
  readonly events: Array<{ reason: string; regarding: string }> = [];
  /** The Events as created, by namespace/name: a second create of a name answers 409. */
  private readonly storedEvents = new Map<string, KubeItem>();
  /** Every `hookStride`-th index is a labelled hook (Jobs at offset 3, bare Pods at 53). */
  private readonly hookStride: number;
  private readonly bookmarkIntervalMs: number;
  /** Continued lists (by their page number, from 1) to answer 410 Expired, once each. */
  private readonly expireAtPages = new Set<number>();
  private listPages = 0;
  /** Every labelled hook failed (the hook watcher at its worst), not one in 50. */
  private readonly everyHookFails: boolean;
  /** Requests being answered now, watches left out, and the most at once so far. */
  private inFlight = 0;
  peakInFlight = 0;

  constructor(
    readonly objectsPerKind: number,
    options: { hooksPerKind?: number; bookmarkIntervalMs?: number; everyHookFails?: boolean } = {},
  ) {
    this.everyHookFails = options.everyHookFails ?? false;
    const hooks = options.hooksPerKind ?? Math.floor(objectsPerKind / 100);
    this.hookStride = hooks > 0 ? 100 * Math.max(1, Math.floor(objectsPerKind / hooks / 100)) : Infinity;
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
  }

  async start(): Promise<this> {
    const server = createServer((request, response) => void this.handle(request, response));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The text of a kubeconfig file for this server. */
  kubeConfigFile(): string {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions(kubeConfigOptions(`http://127.0.0.1:${this.port}`, 'hookguard-sweep'));
    return kubeConfig.exportConfig();
  }

  /** Answers the continued list requests numbered so (counting every list request, from 1) with 410 Expired, once. */
  expireContinueAt(...pages: number[]): void {
    for (const page of pages) this.expireAtPages.add(page);
  }

  /** The indexes of the objects of a kind with a shape. */
  indexesOf(kind: ScaleKind, shape: Shape): number[] {
    const found: number[] = [];
    for (let index = 0; index < this.objectsPerKind; index += 1) if (shapeOf(kind, index) === shape) found.push(index);
    return found;
  }

  /**
   * Whether an object carries hookguard's label, and how that hook went. Labelled Jobs sit at index 3 of every
   * `hookStride` (live-hook slots), bare hook Pods at 53 (plain slots): no sweep shape is labelled or changed.
   */
  hookOf(kind: ScaleKind, index: number): HookOutcome | undefined {
    if (index % this.hookStride !== (kind === 'Job' ? 3 : 53)) return undefined;
    if (this.everyHookFails) return 'failed';
    const ordinal = Math.floor(index / this.hookStride) % 50;
    return ordinal === 0 ? 'failed' : ordinal === 1 ? 'running' : 'succeeded';
  }

  /** The indexes of the labelled hooks of a kind, with an outcome or all. */
  hookIndexes(kind: ScaleKind, outcome?: HookOutcome): number[] {
    const found: number[] = [];
    if (this.hookStride === Infinity) return found;
    for (let index = kind === 'Job' ? 3 : 53; index < this.objectsPerKind; index += this.hookStride)
      if (outcome === undefined || this.hookOf(kind, index) === outcome) found.push(index);
    return found;
  }

  /** How a Job's own Pod (same index) ran: as its labelled Job went, else as its shape says. */
  private runOf(kind: ScaleKind, index: number, shape: Shape): HookOutcome {
    const hook = this.hookOf(kind, index) ?? (kind === 'Pod' ? this.hookOf('Job', index) : undefined);
    if (hook !== undefined) return hook;
    return shape === 'running-hook' || shape === 'live-hook' ? 'running' : 'succeeded';
  }

  nameOf(kind: ScaleKind, index: number): string {
    return nameOf(kind, index);
  }

  /** An object as it is now: generated, or as a patch left it; undefined once deleted or out of range. */
  object(kind: ScaleKind, index: number): Json | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.objectsPerKind) return undefined;
    const changed = this.changed.get(`${kind}/${index}`);
    if (changed === null) return undefined;
    return changed ?? this.generate(kind, index);
  }

  /** How many objects a patch changed or deleted. */
  get touched(): number {
    return this.changed.size;
  }

  private secondsAgo(seconds: number): string {
    return new Date(this.started - seconds * 1000).toISOString().replace('.000Z', 'Z');
  }

  private generate(kind: ScaleKind, index: number): Json {
    const shape = shapeOf(kind, index);
    return kind === 'Job' ? this.job(index, shape) : this.pod(index, shape);
  }

  private metadata(kind: ScaleKind, index: number, shape: Shape): Json {
    const name = nameOf(kind, index);
    const namespace = namespaceOf(index);
    const admitted = this.hookOf(kind, index) !== undefined;
    const barePod = kind === 'Pod' && admitted;
    const hook = admitted || (shape !== 'plain' && shape !== 'stuck-workflow-pod' && shape !== 'waiting-workflow-pod');
    const workflowPod = shape === 'stuck-workflow-pod' || shape === 'waiting-workflow-pod';
    // A hook that ran to its end no longer holds the hook finalizer: Argo CD recorded its result.
    const ended = admitted && this.runOf(kind, index, shape) !== 'running';
    const finalizers =
      shape === 'other-finalizer'
        ? [KEEP_FINALIZER]
        : workflowPod
          ? [WORKFLOW_FINALIZER]
          : hook && !ended
            ? [HOOK_FINALIZER]
            : undefined;
    const deletedSecondsAgo =
      shape === 'running-hook'
        ? 60
        : shape === 'stuck-hook' || workflowPod || shape === 'other-finalizer'
          ? 1800
          : undefined;
    const instance = `app-${index % 500}`;
    return {
      name,
      namespace,
      uid: uidOf(kind, index),
      resourceVersion: String(1000 + index),
      ...(kind === 'Job' ? { generation: 1 } : {}),
      creationTimestamp: CREATED,
      ...(deletedSecondsAgo !== undefined
        ? { deletionTimestamp: this.secondsAgo(deletedSecondsAgo), deletionGracePeriodSeconds: 0 }
        : {}),
      labels: {
        'app.kubernetes.io/instance': instance,
        'app.kubernetes.io/name': 'worker',
        'app.kubernetes.io/part-of': `platform-${index % 7}`,
        ...(kind === 'Pod' && !barePod
          ? {
              'batch.kubernetes.io/controller-uid': uidOf('Job', index),
              'batch.kubernetes.io/job-name': `job-${index}`,
              'controller-uid': uidOf('Job', index),
              'job-name': `job-${index}`,
            }
          : {}),
        ...(admitted ? { [HOOK_LABEL]: HOOK_LABEL_VALUE } : {}),
        ...(workflowPod
          ? { 'workflows.argoproj.io/workflow': workflowNameOf(index), 'workflows.argoproj.io/completed': 'false' }
          : {}),
      },
      annotations: {
        'argocd.argoproj.io/tracking-id': `${instance}:batch/Job:${namespace}/job-${index}`,
        ...(hook
          ? { 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation' }
          : {}),
        ...(workflowPod
          ? {
              'workflows.argoproj.io/node-id': nodeIdOf(index),
              'workflows.argoproj.io/node-name': `${workflowNameOf(index)}.step`,
            }
          : {}),
      },
      ...(finalizers ? { finalizers } : {}),
      ownerReferences: workflowPod
        ? [
            {
              apiVersion: 'argoproj.io/v1alpha1',
              kind: 'Workflow',
              name: workflowNameOf(index),
              uid: `wf-uid-${index}`,
              controller: true,
              blockOwnerDeletion: true,
            },
          ]
        : kind === 'Pod' && !barePod
          ? [
              {
                apiVersion: 'batch/v1',
                kind: 'Job',
                name: `job-${index}`,
                uid: uidOf('Job', index),
                controller: true,
                blockOwnerDeletion: true,
              },
            ]
          : undefined,
      managedFields: [
        {
          manager: kind === 'Job' ? 'argocd-controller' : 'kube-controller-manager',
          operation: kind === 'Job' ? 'Apply' : 'Update',
          apiVersion: kind === 'Job' ? 'batch/v1' : 'v1',
          time: CREATED,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:annotations': { 'f:argocd.argoproj.io/tracking-id': {} },
              'f:labels': {
                'f:app.kubernetes.io/instance': {},
                'f:app.kubernetes.io/name': {},
                'f:app.kubernetes.io/part-of': {},
              },
            },
            'f:spec': {
              'f:template': {
                'f:spec': { 'f:containers': { 'k:{"name":"main"}': { '.': {}, 'f:image': {}, 'f:name': {} } } },
              },
            },
          },
        },
      ],
    };
  }

  private podSpec(index: number): Json {
    return {
      restartPolicy: 'Never',
      serviceAccountName: 'worker',
      terminationGracePeriodSeconds: 30,
      securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'main',
          image: `registry.example.com/platform/worker:1.${index % 40}.0`,
          command: ['/bin/worker'],
          args: [
            '--queue',
            `queue-${index % 13}`,
            '--batch-size',
            '500',
            '--log-format',
            'json',
            '--metrics-port',
            '9090',
          ],
          env: [
            { name: 'WORKER_INDEX', value: String(index) },
            { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'worker-db', key: 'url' } } },
            { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
            { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
          ],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/worker', readOnly: true },
            { name: 'tmp', mountPath: '/tmp' },
          ],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      volumes: [
        { name: 'config', configMap: { name: 'worker-config', defaultMode: 420 } },
        { name: 'tmp', emptyDir: {} },
      ],
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
    };
  }

  private job(index: number, shape: Shape): Json {
    const run = this.runOf('Job', index, shape);
    return {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: this.metadata('Job', index, shape),
      spec: {
        backoffLimit: 3,
        activeDeadlineSeconds: 3600,
        ttlSecondsAfterFinished: 600,
        completionMode: 'NonIndexed',
        parallelism: 1,
        completions: 1,
        suspend: false,
        selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': uidOf('Job', index) } },
        template: {
          metadata: {
            labels: {
              'batch.kubernetes.io/controller-uid': uidOf('Job', index),
              'batch.kubernetes.io/job-name': `job-${index}`,
            },
          },
          spec: this.podSpec(index),
        },
      },
      status:
        run === 'running'
          ? { active: 1, startTime: CREATED, ready: 1, uncountedTerminatedPods: {} }
          : run === 'failed'
            ? this.failedJobStatus()
            : this.succeededJobStatus(),
    };
  }

  /** A Job the job controller failed: backoffLimit 3, so four failed Pods (pkg/controller/job/job_controller.go). */
  private failedJobStatus(): Json {
    const condition = (type: string) => ({
      type,
      status: 'True',
      reason: 'BackoffLimitExceeded',
      message: FAILED_JOB_MESSAGE,
      lastProbeTime: '2026-11-01T08:04:10Z',
      lastTransitionTime: '2026-11-01T08:04:10Z',
    });
    return {
      startTime: CREATED,
      failed: 4,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
      conditions: [condition('FailureTarget'), condition('Failed')],
    };
  }

  private succeededJobStatus(): Json {
    return {
      startTime: CREATED,
      completionTime: '2026-11-01T08:01:05Z',
      succeeded: 1,
      ready: 0,
      uncountedTerminatedPods: {},
      conditions: [
        {
          type: 'SuccessCriteriaMet',
          status: 'True',
          lastProbeTime: '2026-11-01T08:01:05Z',
          lastTransitionTime: '2026-11-01T08:01:05Z',
        },
        {
          type: 'Complete',
          status: 'True',
          lastProbeTime: '2026-11-01T08:01:05Z',
          lastTransitionTime: '2026-11-01T08:01:05Z',
        },
      ],
    };
  }

  private pod(index: number, shape: Shape): Json {
    const run = this.runOf('Pod', index, shape);
    const running = run === 'running';
    const phase = running ? 'Running' : run === 'failed' ? 'Failed' : 'Succeeded';
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: this.metadata('Pod', index, shape),
      spec: { ...this.podSpec(index), nodeName: `node-${index % 60}.compute.internal` },
      status: {
        phase,
        hostIP: `10.0.${index % 60}.10`,
        podIP: `10.1.${Math.floor(index / 250) % 250}.${index % 250}`,
        startTime: CREATED,
        qosClass: 'Burstable',
        conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(
          (type) => ({
            type,
            status: type === 'Ready' || type === 'ContainersReady' ? String(running) : 'True',
            lastProbeTime: null,
            lastTransitionTime: '2026-11-01T08:00:03Z',
          }),
        ),
        containerStatuses: [
          {
            name: 'main',
            image: `registry.example.com/platform/worker:1.${index % 40}.0`,
            imageID: `registry.example.com/platform/worker@sha256:${String(index).padStart(64, '0')}`,
            containerID: `containerd://${String(index).padStart(64, 'a')}`,
            ready: running,
            restartCount: 0,
            started: running,
            state: running
              ? { running: { startedAt: '2026-11-01T08:00:03Z' } }
              : {
                  terminated: {
                    exitCode: run === 'failed' ? 1 : 0,
                    reason: run === 'failed' ? 'Error' : 'Completed',
                    startedAt: '2026-11-01T08:00:03Z',
                    finishedAt: '2026-11-01T08:01:04Z',
                  },
                },
          },
        ],
      },
    };
  }

  /** The Workflow of a workflow pod: one that still runs the pod's node for the look-alikes, none for the stuck. */
  private workflow(namespace: string, name: string): Json | undefined {
    const index = Number(/^wf-(\d+)$/.exec(name)?.[1] ?? Number.NaN);
    if (namespace !== namespaceOf(index) || this.object('Pod', index) === undefined) return undefined;
    if (shapeOf('Pod', index) !== 'waiting-workflow-pod') return undefined;
    return {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Workflow',
      metadata: {
        name,
        namespace,
        uid: `wf-uid-${index}`,
        labels: { 'workflows.argoproj.io/completed': 'false', 'workflows.argoproj.io/phase': 'Running' },
      },
      status: {
        phase: 'Running',
        nodes: { [nodeIdOf(index)]: { id: nodeIdOf(index), name: `${name}.step`, type: 'Pod', phase: 'Running' } },
      },
    };
  }

  private send(response: ServerResponse, status: number, body: Json): number {
    const text = JSON.stringify(body);
    const bytes = Buffer.byteLength(text);
    this.counts.bytes += bytes;
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': bytes });
    response.end(text);
    return bytes;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://scale');
    if (!['true', '1'].includes(url.searchParams.get('watch') ?? '')) {
      this.inFlight += 1;
      this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
      response.on('close', () => (this.inFlight -= 1));
    }
    const method = request.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = url.pathname;

    let match = /^\/(api\/v1|apis\/batch\/v1)(?:\/namespaces\/([^/]+))?\/(pods|jobs)$/.exec(path);
    if (match && method === 'GET') {
      const kind: ScaleKind = match[3] === 'jobs' ? 'Job' : 'Pod';
      const selector = parseLabelSelector(url.searchParams.get('labelSelector') ?? '');
      const watch = ['true', '1'].includes(url.searchParams.get('watch') ?? '');
      if ('error' in selector) {
        const bytes = this.send(response, 400, badRequestStatus(selector.error));
        if (!watch) this.counts.listBytes += bytes;
        this.counts[watch ? 'watch' : 'list'] += 1;
      } else if (watch) this.watch(kind, match[2], selector.requirements, url.searchParams, response);
      else this.list(kind, match[2], selector.requirements, url.searchParams, request.headers.accept, response);
      return;
    }
    match = /^\/(api\/v1|apis\/batch\/v1)\/namespaces\/([^/]+)\/(pods|jobs)\/([^/]+)$/.exec(path);
    if (match) {
      const kind: ScaleKind = match[3] === 'jobs' ? 'Job' : 'Pod';
      const [namespace, name] = [match[2] as string, match[4] as string];
      const index = Number(/-(\d+)$/.exec(name)?.[1] ?? Number.NaN);
      const found =
        name === nameOf(kind, index) && namespace === namespaceOf(index) ? this.object(kind, index) : undefined;
      if (method === 'GET') {
        this.counts.get += 1;
        if (found) this.send(response, 200, found);
        else this.send(response, 404, statusBody(404, `${match[3]} "${name}" not found`));
        return;
      }
      if (method === 'PATCH') {
        this.counts.patch += 1;
        const status = this.patch(kind, index, found, text, request.headers['content-type'], response);
        this.patches.push({ kind, name, status });
        return;
      }
    }
    match = /^\/apis\/argoproj\.io\/v1alpha1\/namespaces\/([^/]+)\/workflows\/([^/]+)$/.exec(path);
    if (match && method === 'GET') {
      this.counts.workflow += 1;
      const workflow = this.workflow(match[1] as string, match[2] as string);
      if (workflow) this.send(response, 200, workflow);
      else this.send(response, 404, statusBody(404, `workflows.argoproj.io "${match[2]}" not found`));
      return;
    }
    const coreEvents = /^\/api\/v1\/namespaces\/([^/]+)\/events$/.exec(path);
    match = coreEvents ?? /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events$/.exec(path);
    if (match && method === 'GET') {
      this.counts.event += 1;
      const namespace = match[1] as string;
      const served = eventsServed(
        coreEvents ? 'v1' : 'events.k8s.io/v1',
        [...this.storedEvents.values()],
        namespace,
        [],
        url.searchParams.get('fieldSelector') ?? undefined,
      );
      if (typeof served === 'string') this.send(response, 400, statusBody(400, served));
      else
        this.send(response, 200, {
          kind: 'EventList',
          apiVersion: coreEvents ? 'v1' : 'events.k8s.io/v1',
          metadata: { resourceVersion: RESOURCE_VERSION },
          items: served,
        });
      return;
    }
    if (match && !coreEvents && method === 'POST') {
      this.counts.event += 1;
      const namespace = match[1] as string;
      const event = JSON.parse(text) as Json & { metadata?: Json; regarding?: Json };
      const problems = eventProblems(event);
      if (problems.length > 0) {
        this.send(response, 422, statusBody(422, `Event is invalid: ${problems.join(', ')}`));
        return;
      }
      const name =
        typeof event.metadata?.name === 'string' ? event.metadata.name : `${String(event.metadata?.generateName)}x`;
      if (this.storedEvents.has(`${namespace}/${name}`)) {
        this.send(
          response,
          409,
          statusBody(
            409,
            `events.events.k8s.io "${name}" already exists`,
            {
              name,
              group: 'events.k8s.io',
              kind: 'events',
            },
            'AlreadyExists',
          ),
        );
        return;
      }
      this.events.push({ reason: String(event.reason), regarding: String(event.regarding?.name) });
      const stored = {
        ...event,
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { ...event.metadata, name, namespace },
      } as unknown as KubeItem;
      this.storedEvents.set(`${namespace}/${name}`, stored);
      this.send(response, 201, stored);
      return;
    }
    this.counts.other += 1;
    this.send(response, 404, statusBody(404, 'the server could not find the requested resource'));
  }

  /**
   * The indexes that may match, in order, from `from` on: where the selector pins hookguard's label or a Pod's
   * `job-name`, or the namespace, only those (as an index would); every object answered is still matched in full.
   */
  private *candidates(
    kind: ScaleKind,
    namespace: string | undefined,
    requirements: readonly Requirement[],
    from: number,
  ): Generator<number> {
    const job = /^job-(\d+)$/.exec(
      requiredValue(requirements, 'job-name') ?? requiredValue(requirements, 'batch.kubernetes.io/job-name') ?? '',
    );
    // A Job's own selector (spec.selector.matchLabels) names its controller-uid.
    const owner = /^4a0b(\d{8})-0000-4000-8000-00000000cafe$/.exec(
      requiredValue(requirements, 'batch.kubernetes.io/controller-uid') ?? '',
    );
    if (kind === 'Pod' && (job || owner)) {
      const index = Number((job ?? owner)?.[1]);
      if (index >= from) yield index;
      return;
    }
    if (requiredValue(requirements, HOOK_LABEL) === HOOK_LABEL_VALUE) {
      for (const index of this.hookIndexes(kind)) if (index >= from) yield index;
      return;
    }
    const namespaceNumber = namespace === undefined ? undefined : Number(/^team-(\d+)$/.exec(namespace)?.[1]);
    if (namespaceNumber !== undefined && Number.isNaN(namespaceNumber)) return;
    const step = namespaceNumber === undefined ? 1 : NAMESPACES;
    let index =
      namespaceNumber === undefined ? from : from + ((namespaceNumber - (from % NAMESPACES) + NAMESPACES) % NAMESPACES);
    for (; index < this.objectsPerKind; index += step) yield index;
  }

  /** The objects a list or watch answers, from index `from` on, with the index after the last one looked at. */
  private *selected(
    kind: ScaleKind,
    namespace: string | undefined,
    requirements: readonly Requirement[],
    from: number,
    metadataOnly: boolean,
  ): Generator<[index: number, object: Json]> {
    for (const index of this.candidates(kind, namespace, requirements, from)) {
      if (index >= this.objectsPerKind) return;
      if (namespace !== undefined && namespaceOf(index) !== namespace) continue;
      const changed = this.changed.get(`${kind}/${index}`);
      if (changed === null) continue;
      // Metadata only: what the answer carries, without generating the rest.
      const metadata = (changed?.metadata ?? this.metadata(kind, index, shapeOf(kind, index))) as Json;
      if (!selectorMatches(requirements, (metadata.labels ?? {}) as Record<string, string>)) continue;
      yield [index, metadataOnly ? { metadata } : (changed ?? this.generate(kind, index))];
    }
  }

  private list(
    kind: ScaleKind,
    namespace: string | undefined,
    requirements: readonly Requirement[],
    query: URLSearchParams,
    accept: string | undefined,
    response: ServerResponse,
  ): void {
    this.counts.list += 1;
    this.listPages += 1;
    const token = query.get('continue');
    if (token !== null && this.expireAtPages.delete(this.listPages)) {
      this.counts.listBytes += this.send(response, 410, statusBody(410, CONTINUE_EXPIRED, {}, 'Expired'));
      return;
    }
    const limit = Number(query.get('limit') ?? 0) || Infinity;
    const from = token === null ? 0 : Number(Buffer.from(token, 'base64').toString('utf8'));
    const metadataOnly = wantsMetadataList(accept);
    const items: Json[] = [];
    // A continue token only when another object follows, as the API server (it reads one more than the limit).
    let next: number | undefined;
    for (const [index, object] of this.selected(kind, namespace, requirements, from, metadataOnly)) {
      if (items.length === limit) {
        next = index;
        break;
      }
      items.push(object);
    }
    const listMetadata = {
      resourceVersion: RESOURCE_VERSION,
      ...(next !== undefined ? { continue: Buffer.from(String(next)).toString('base64') } : {}),
    };
    const body = metadataOnly
      ? partialObjectMetadataList(listMetadata, items)
      : { kind: `${kind}List`, apiVersion: kind === 'Job' ? 'batch/v1' : 'v1', metadata: listMetadata, items };
    this.counts.listBytes += this.send(response, 200, body);
  }

  /**
   * A watch as kube-apiserver streams it. From "" or "0" it starts with an ADDED event for each object selected (the
   * synthetic initial events); from a resourceVersion with nothing, since nothing changes here. It stays open, sends a
   * BOOKMARK every `bookmarkIntervalMs` and 2 s before its end when asked (allowWatchBookmarks=true), and ends at
   * timeoutSeconds (without one, kube-apiserver picks one of at least --min-request-timeout, 1800 s).
   */
  private watch(
    kind: ScaleKind,
    namespace: string | undefined,
    requirements: readonly Requirement[],
    query: URLSearchParams,
    response: ServerResponse,
  ): void {
    this.counts.watch += 1;
    response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    response.flushHeaders();
    const write = (type: string, object: Json) => {
      const line = `${JSON.stringify({ type, object })}\n`;
      this.counts.bytes += Buffer.byteLength(line);
      response.write(line);
    };
    const from = query.get('resourceVersion') ?? '';
    if (from === '' || from === '0')
      for (const [, object] of this.selected(kind, namespace, requirements, 0, false)) write('ADDED', object);
    const bookmark = () =>
      write('BOOKMARK', {
        kind,
        apiVersion: kind === 'Job' ? 'batch/v1' : 'v1',
        metadata: { resourceVersion: RESOURCE_VERSION },
      });
    const timeoutMs = Number(query.get('timeoutSeconds') ?? 0) * 1000 || 1_800_000;
    const bookmarks = query.get('allowWatchBookmarks') === 'true';
    const timers = [
      setTimeout(() => response.end(), timeoutMs),
      ...(bookmarks
        ? [setInterval(bookmark, this.bookmarkIntervalMs), setTimeout(bookmark, Math.max(0, timeoutMs - 2000))]
        : []),
    ];
    response.on('close', () => {
      for (const timer of timers) clearTimeout(timer);
    });
  }

  private patch(
    kind: ScaleKind,
    index: number,
    found: Json | undefined,
    text: string,
    contentType: string | undefined,
    response: ServerResponse,
  ): number {
    if (!found) return this.reply(response, 404, statusBody(404, `not found`));
    if (contentType?.split(';', 1)[0] !== 'application/json-patch+json')
      return this.reply(response, 415, statusBody(415, 'unsupported media type'));
    const working = structuredClone(found) as Json & { metadata: Json };
    try {
      applyPatch(working, JSON.parse(text) as Operation[], true, true);
    } catch (error) {
      const cause =
        (error as { name?: string }).name === 'TEST_OPERATION_FAILED'
          ? 'testing value failed'
          : (error as Error).message;
      return this.reply(
        response,
        422,
        statusBody(422, 'the server rejected our request due to an error in our request', {
          causes: [{ reason: 'UnexpectedServerResponse', message: cause }],
        }),
      );
    }
    const finalizers = (working.metadata.finalizers ?? []) as string[];
    const deleted = working.metadata.deletionTimestamp !== undefined && finalizers.length === 0;
    this.changed.set(`${kind}/${index}`, deleted ? null : working);
    return this.reply(response, 200, working);
  }

  private reply(response: ServerResponse, status: number, body: Json): number {
    this.send(response, status, body);
    return status;
  }
}
