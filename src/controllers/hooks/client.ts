// The API calls of the hook watcher, as plain JSON objects, every one through one CallBudget (a concurrency cap and a
// token bucket, hookWatch.maxConcurrentCalls, callsPerSecond, callBurst). The reads are `hookguard why`'s reader
// (src/kube/hook-evidence.ts): lists of hooks carry the label selector of rule hook-label and are paged; a Job's Pods
// and the Events about a hook are read, capped, only for a hook that looks failed or stuck. The writes and the
// Application go through @kubernetes/client-node's typed clients.
import { CoreV1Api, CustomObjectsApi, EventsV1Api, type EventsV1Event, type KubeConfig } from '@kubernetes/client-node';
import { HOOKGUARD_HOOK_LABEL, HOOKGUARD_HOOK_LABEL_VALUE } from '../../core/annotations.js';
import { isRecord } from '../../core/objects.js';
import type { HookEvidence } from '../../core/explain/index.js';
import type { KubeObject } from '../../core/types.js';
import { apiFailure } from '../../kube/api-failure.js';
import type { CallBudget } from '../../kube/call-budget.js';
import { kubeHookReader } from '../../kube/hook-evidence.js';
import type { ListResult } from '../../kube/reflector.js';

export const HOOK_SELECTOR = `${HOOKGUARD_HOOK_LABEL}=${HOOKGUARD_HOOK_LABEL_VALUE}`;
/** The most of a log's end that goes towards an Event (which holds less: NOTE_LIMIT_BYTES in all). */
export const LOG_TAIL_BYTES = 2048;
/**
 * How a log's end is read when a hook opted in and its container left no termination message. The kubelet answers
 * `tailLines` and `limitBytes` with the FIRST limitBytes of the last tailLines lines (k8s.io/cri-client v0.37.2
 * pkg/logs/logs.go ReadLogs: it seeks to the start of the tail, then writes forward until the bytes run out), so a
 * read cut by limitBytes has lost the log's end, where the error is. Each read's limit is well above what is kept; one
 * that comes back cut is asked again for fewer lines.
 */
export const LOG_READS: ReadonlyArray<{ tailLines: number; limitBytes: number }> = [
  { tailLines: 80, limitBytes: 16 * 1024 },
  { tailLines: 8, limitBytes: 16 * 1024 },
  { tailLines: 1, limitBytes: 16 * 1024 },
];

/**
 * The last LOG_TAIL_BYTES (at most) of a log, from its end: a log cut at its start loses the first, partial line
 * (`rd=hunter2`, whose `passwo` was cut off, would no longer be redacted), and a log of one line loses it all.
 */
export function lastLogBytes(log: string, limitBytes = LOG_TAIL_BYTES): string {
  const bytes = Buffer.from(log, 'utf8');
  if (bytes.length <= limitBytes) return log;
  const end = bytes.subarray(bytes.length - limitBytes);
  const firstBreak = end.indexOf(0x0a);
  return firstBreak === -1 ? '' : end.subarray(firstBreak + 1).toString('utf8');
}

/**
 * The end of a container's log through `read` (pods/log with tailLines and limitBytes): the first read of LOG_READS
 * that comes back whole (under its limit), cut to its last LOG_TAIL_BYTES; '' when even the last line is over the
 * limit (its end cannot be had).
 */
export async function readLogTail(
  read: (options: { tailLines: number; limitBytes: number }) => Promise<string>,
): Promise<string> {
  for (const options of LOG_READS) {
    const log = await read(options);
    if (Buffer.byteLength(log, 'utf8') < options.limitBytes) return lastLogBytes(log);
  }
  return '';
}

interface CustomResource {
  group: string;
  version: string;
  plural: string;
}
const APPLICATIONS: CustomResource = { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications' };
const HELM_RELEASES: CustomResource = { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases' };

export interface HookWatchClient {
  /** Hook Jobs or Pods hookguard admitted, in every namespace, paged (the reflector's list). */
  listHooks(kind: 'Job' | 'Pod'): Promise<ListResult>;
  /** The hook with its Pods and the Events about both, as `hookguard why` reads them. */
  evidence(hook: KubeObject): Promise<HookEvidence>;
  /** 'exists' when an Event of that name is there already (409 AlreadyExists). */
  createEvent(namespace: string, event: EventsV1Event): Promise<'created' | 'exists'>;
  /** An Argo CD Application, or undefined when there is none (404) or it may not be read (403). */
  getApplication(namespace: string, name: string): Promise<KubeObject | undefined>;
  /** A Flux HelmRelease, or undefined when there is none (404) or it may not be read (403). */
  getHelmRelease(namespace: string, name: string): Promise<KubeObject | undefined>;
  namespaceAnnotations(namespace: string): Promise<Record<string, string>>;
  /** The last lines of a container's log (pods/log). */
  logTail(namespace: string, pod: string, container: string): Promise<string>;
}

export function kubeHookWatchClient(kubeConfig: KubeConfig, budget: Pick<CallBudget, 'run'>): HookWatchClient {
  const reader = kubeHookReader(kubeConfig, budget);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const events = kubeConfig.makeApiClient(EventsV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const absent = (error: unknown) => {
    const status = apiFailure(error).status;
    if (status === 404 || status === 403) return undefined;
    throw error;
  };
  /** A namespaced custom object the Events also regard, or undefined when there is none (404) or it may not be read (403). */
  const customObject = async (resource: CustomResource, namespace: string, name: string) => {
    try {
      const object: unknown = await budget.run(() =>
        custom.getNamespacedCustomObject({ ...resource, namespace, name }),
      );
      return isRecord(object) ? object : undefined;
    } catch (error) {
      return absent(error);
    }
  };
  return {
    async listHooks(kind) {
      return reader.listLabelled(kind, HOOK_SELECTOR);
    },
    async evidence(hook) {
      return reader.evidence(hook);
    },
    async createEvent(namespace, event) {
      try {
        await budget.run(() => events.createNamespacedEvent({ namespace, body: event }));
        return 'created';
      } catch (error) {
        if (apiFailure(error).status === 409) return 'exists';
        throw error;
      }
    },
    getApplication: (namespace, name) => customObject(APPLICATIONS, namespace, name),
    getHelmRelease: (namespace, name) => customObject(HELM_RELEASES, namespace, name),
    async namespaceAnnotations(namespace) {
      try {
        const object = await budget.run(() => core.readNamespace({ name: namespace }));
        return object.metadata?.annotations ?? {};
      } catch (error) {
        return absent(error) ?? {};
      }
    },
    async logTail(namespace, pod, container) {
      return readLogTail((options) =>
        budget.run(() => core.readNamespacedPodLog({ namespace, name: pod, container, ...options })),
      );
    },
  };
}
