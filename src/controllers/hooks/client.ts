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
/** The last log lines read when a hook opted in and its container left no termination message: the kubelet's own bound. */
const LOG_TAIL = { tailLines: 80, limitBytes: 2048 };

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
      const log = await budget.run(() => core.readNamespacedPodLog({ namespace, name: pod, container, ...LOG_TAIL }));
      // At limitBytes the kubelet cut the log where the bytes ran out, maybe inside a line (`rd=hunter2`, whose
      // `passwo` was cut off, is no longer redacted): that first, partial line is left out, and a log of one line with it.
      if (Buffer.byteLength(log, 'utf8') < LOG_TAIL.limitBytes) return log;
      const firstBreak = log.indexOf('\n');
      return firstBreak === -1 ? '' : log.slice(firstBreak + 1);
    },
  };
}
