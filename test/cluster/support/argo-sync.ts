// What argo-sync.test.ts, the cluster tests of Argo CD's own sync engine, builds on: argo-sync
// (test/cluster/tools/argo-sync, one binary per Argo CD release's gitops-engine, built by cluster:up) run as the
// application controller's ServiceAccount, "Argo CD VERSION" installed where hookguard's discovery finds it, hook Jobs
// as charts ship them, and namespaces in and out of hookguard's reach.
import { BatchV1Api } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ARGOCD_CONTROLLER, ARGOCD_CONTROLLER_ACCOUNT } from '../../support/objects.js';
import {
  adminApi,
  AUDIT_NAMESPACE_LABEL,
  binDir,
  clusterState,
  deleteNamespace,
  kubectl,
  kubectlPath,
  newNamespace,
  run,
  unlessNotFound,
  waitUntil,
} from './cluster.js';
import { releaseFinalizers } from './sweep.js';

export const argoSync = join(binDir, 'argo-sync');

/** What argo-sync prints: the operation's phase and message, and each hook's result, in the engine's words. */
export interface Operation {
  phase: string;
  message: string;
  hooks: Array<{ kind: string; name: string; phase: string; message: string }>;
}

/**
 * What the engine reports of a sync whose one hook, a Job, succeeded. `lastRound` is how the engine words the round
 * that ended it (gitops-engine pkg/sync/sync_context.go Sync): "all tasks run" when that round applied the last task
 * (a PreSync hook, then the resources), "no more tasks" when it found nothing left (a Sync hook applied with the
 * resources, complete a round later).
 */
export function succeeded(hook: string, lastRound: 'all tasks run' | 'no more tasks' = 'all tasks run'): Operation {
  return {
    phase: 'Succeeded',
    message: `successfully synced (${lastRound})`,
    hooks: [{ kind: 'Job', name: hook, phase: 'Succeeded', message: 'Reached expected number of succeeded pods' }],
  };
}

/**
 * A hook Job (a PreSync one unless told) whose one container runs `seconds` (kubelet-sim's run-seconds), with no
 * delete policy (Argo CD's default then: BeforeHookCreation), as a chart would ship it.
 */
export function hookJob(
  name: string,
  { phase = 'PreSync', seconds = 1, ttl }: { phase?: string; seconds?: number; ttl?: number } = {},
) {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations: { 'argocd.argoproj.io/hook': phase } },
    spec: {
      backoffLimit: 0,
      ...(ttl === undefined ? {} : { ttlSecondsAfterFinished: ttl }),
      template: {
        metadata: { annotations: { 'test.hookguard.io/run-seconds': String(seconds) } },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'migrate', image: 'busybox:1.36', command: ['sh', '-c', 'echo migrated'] }],
        },
      },
    },
  };
}

const CONTROLLER_BINDING = 'argo-sync-controller';

/**
 * Binds the application controller's ServiceAccount to cluster-admin, as upstream's ClusterRole
 * argocd-application-controller grants * on * (the engine's cluster cache lists every kind in the namespace), in
 * namespace argocd, where hookguard's discovery looks for the controller. Applied, so a binding a stopped run left
 * is taken over.
 */
export async function grantControllerRole(): Promise<void> {
  await kubectl(['create', 'namespace', 'argocd']).catch(() => undefined);
  const { namespace, name } = ARGOCD_CONTROLLER_ACCOUNT;
  await kubectl(
    ['apply', '-f', '-'],
    stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: CONTROLLER_BINDING },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', namespace, name }],
    }),
  );
}

/**
 * Takes away the binding and the controller's StatefulSet: without it, hookguard knows no Argo CD. The namespace
 * stays (a next run would find it terminating).
 */
export async function removeArgoCd(): Promise<void> {
  await run(kubectlPath, ['delete', 'clusterrolebinding', CONTROLLER_BINDING, '--ignore-not-found']);
  await run(kubectlPath, [
    'delete',
    'statefulset',
    'argocd-application-controller',
    '-n',
    'argocd',
    '--ignore-not-found',
  ]);
}

type Json = Record<string, unknown>;

/** Installs "Argo CD VERSION" (its controller's StatefulSet) and waits until hookguard's discovery reports it. */
export async function installArgoCd(version: string): Promise<void> {
  await kubectl(
    ['apply', '-f', '-'],
    stringify({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: {
        name: 'argocd-application-controller',
        namespace: 'argocd',
        labels: { 'app.kubernetes.io/component': 'application-controller', 'app.kubernetes.io/part-of': 'argocd' },
      },
      spec: {
        replicas: 0,
        serviceName: 'argocd-application-controller',
        selector: { matchLabels: { 'app.kubernetes.io/name': 'argocd-application-controller' } },
        template: {
          metadata: { labels: { 'app.kubernetes.io/name': 'argocd-application-controller' } },
          spec: {
            serviceAccountName: 'argocd-application-controller',
            containers: [{ name: 'controller', image: `quay.io/argoproj/argocd:v${version}` }],
          },
        },
      },
    }),
  );
  const probePort = clusterState().ports.hookguardProbe;
  await waitUntil(`hookguard's discovery to report Argo CD ${version}`, async () => {
    const ready = (await (await fetch(`http://127.0.0.1:${probePort}/readyz`)).json()) as Json;
    const instances = ((ready.discovery as Json | undefined)?.instances ?? []) as Json[];
    return instances.some((instance) => instance.namespace === 'argocd' && instance.version === version);
  });
}

/**
 * `withArgoCd(version, ns, hook, step)` runs `step`, which makes the engine create hook Job `hook` in `ns` (a namespace
 * hookguard's webhooks see), with "Argo CD VERSION" installed: the cluster has one controller StatefulSet, and
 * hookguard decides by the version it names.
 */
export type WithArgoCd = <T>(version: string, ns: string, hook: string, step: () => Promise<T>) => Promise<T>;

/**
 * One file's turns at the installed Argo CD version. hookguard decides at a hook Job's CREATE (the UPDATEs that follow
 * change only its finalizers and status, which it admits at every version), so a turn lasts until the engine has
 * created the Job (a new one, not being deleted: a sync may delete a previous Job first, or wait for it to go), and the
 * steps overlap from there. Steps out of hookguard's reach need no version and run beside.
 */
export function argoCdTurns(): WithArgoCd {
  let inUse: Promise<unknown> = Promise.resolve();
  return (version, ns, hook, step) => {
    const readJob = () => adminApi(BatchV1Api).readNamespacedJob({ name: hook, namespace: ns });
    // The Job a previous sync left, if any (404: none): the engine's own is another. Any other failure fails the step.
    const installed = inUse
      .then(() => installArgoCd(version))
      .then(async () => (await unlessNotFound(readJob()))?.metadata?.uid);
    const result = installed.then(step);
    let settled = false;
    void result
      .finally(() => {
        settled = true;
      })
      .catch(() => undefined);
    // Reading fails with 404 until the Job is created, and waitUntil tries again.
    const created = async (previous: string | undefined) => {
      const { metadata } = await readJob();
      return metadata?.uid !== previous && metadata?.deletionTimestamp === undefined;
    };
    // The wait starts once the version is installed; a step that ends without creating the Job ends it too.
    inUse = installed
      .then((previous) =>
        waitUntil(`the engine of Argo CD ${version} to create Job ${ns}/${hook}`, async () =>
          settled ? true : created(previous),
        ),
      )
      .catch(() => undefined);
    return result;
  };
}

/** Syncs DIR's manifests into NS with the engine of Argo CD ENGINE, as its controller; the operation as printed. */
export async function sync(
  engine: string,
  ns: string,
  dir: string,
  timeoutSeconds: number,
  extra: readonly string[] = [],
): Promise<Operation> {
  const result = await run(argoSync, [
    ...extra,
    '--argocd',
    engine,
    '--namespace',
    ns,
    '--timeout',
    String(timeoutSeconds),
    '--as',
    ARGOCD_CONTROLLER,
    dir,
  ]);
  if (result.status !== 0) throw new Error(`argo-sync failed (${result.status}): ${result.stderr.slice(-2000)}`);
  return JSON.parse(result.stdout) as Operation;
}

/** The namespaces and manifest folders one test file makes, and their removal once it is done. */
export interface Scratch {
  /** A new namespace: one hookguard's webhooks see, or one out of their reach. */
  namespace(withHookguard: boolean): Promise<string>;
  /** A folder holding the objects as one manifest file, as an Argo CD directory source. */
  manifests(...objects: object[]): string;
  cleanup(): Promise<void>;
}

export function scratch(): Scratch {
  const namespaces: string[] = [];
  const dirs: string[] = [];
  return {
    async namespace(withHookguard) {
      const ns = await newNamespace(
        withHookguard ? 'argo-sync' : 'argo-sync-bare',
        withHookguard ? {} : { [AUDIT_NAMESPACE_LABEL]: 'argo-sync' },
      );
      namespaces.push(ns);
      return ns;
    },
    manifests(...objects) {
      const dir = mkdtempSync(join(tmpdir(), 'argo-sync-'));
      dirs.push(dir);
      writeFileSync(join(dir, 'app.yaml'), objects.map((object) => stringify(object)).join('---\n'));
      return dir;
    },
    async cleanup() {
      // A test that failed half-way may leave a hook finalizer: the namespace must not stay Terminating for ever.
      for (const ns of namespaces) await releaseFinalizers(ns);
      await Promise.all(namespaces.map(deleteNamespace));
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
