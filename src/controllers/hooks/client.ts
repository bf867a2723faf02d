// The API calls of the hook watcher, through @kubernetes/client-node's typed clients, as plain JSON objects. Lists of
// hooks carry the label selector of rule hook-label; a Job's Pods and the Events about a hook are read only for a hook
// that looks failed or stuck, by label and field selector.
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type EventsV1Event,
  type KubeConfig,
} from '@kubernetes/client-node';
import { HOOKGUARD_HOOK_LABEL, HOOKGUARD_HOOK_LABEL_VALUE } from '../../core/annotations.js';
import { isRecord } from '../../core/objects.js';
import type { KubeObject } from '../../core/types.js';
import { apiFailure } from '../../kube/api-failure.js';
import { plainObject } from '../../kube/plain.js';
import type { ListResult } from '../../kube/reflector.js';

export const HOOK_SELECTOR = `${HOOKGUARD_HOOK_LABEL}=${HOOKGUARD_HOOK_LABEL_VALUE}`;
/** The job controller labels each Pod of a Job `job-name=<job>` (and from 1.27 batch.kubernetes.io/job-name too). */
const JOB_NAME_LABEL = 'job-name';
/** The last log lines read when a hook opted in and its container left no termination message: the kubelet's own bound. */
const LOG_TAIL = { tailLines: 80, limitBytes: 2048 };

export interface HookWatchClient {
  /** Hook Jobs or Pods hookguard admitted, in every namespace (the reflector's list). */
  listHooks(kind: 'Job' | 'Pod'): Promise<ListResult>;
  podsOfJob(namespace: string, job: string): Promise<KubeObject[]>;
  /** events.k8s.io/v1 Events regarding any of `names` in `namespace`. */
  eventsAbout(namespace: string, names: readonly string[]): Promise<KubeObject[]>;
  /** 'exists' when an Event of that name is there already (409 AlreadyExists). */
  createEvent(namespace: string, event: EventsV1Event): Promise<'created' | 'exists'>;
  /** An Argo CD Application, or undefined when there is none (404) or it may not be read (403). */
  getApplication(namespace: string, name: string): Promise<KubeObject | undefined>;
  namespaceAnnotations(namespace: string): Promise<Record<string, string>>;
  /** The last lines of a container's log (pods/log). */
  logTail(namespace: string, pod: string, container: string): Promise<string>;
}

export function kubeHookWatchClient(kubeConfig: KubeConfig): HookWatchClient {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const events = kubeConfig.makeApiClient(EventsV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const absent = (error: unknown) => {
    const status = apiFailure(error).status;
    if (status === 404 || status === 403) return undefined;
    throw error;
  };
  return {
    async listHooks(kind) {
      const list =
        kind === 'Job'
          ? await batch.listJobForAllNamespaces({ labelSelector: HOOK_SELECTOR })
          : await core.listPodForAllNamespaces({ labelSelector: HOOK_SELECTOR });
      return { items: list.items.map(plainObject), resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    async podsOfJob(namespace, job) {
      const list = await core.listNamespacedPod({ namespace, labelSelector: `${JOB_NAME_LABEL}=${job}` });
      return list.items.map(plainObject);
    },
    async eventsAbout(namespace, names) {
      const lists = await Promise.all(
        names.map((name) => events.listNamespacedEvent({ namespace, fieldSelector: `regarding.name=${name}` })),
      );
      return lists.flatMap((list) => list.items.map(plainObject));
    },
    async createEvent(namespace, event) {
      try {
        await events.createNamespacedEvent({ namespace, body: event });
        return 'created';
      } catch (error) {
        if (apiFailure(error).status === 409) return 'exists';
        throw error;
      }
    },
    async getApplication(namespace, name) {
      try {
        const object: unknown = await custom.getNamespacedCustomObject({
          group: 'argoproj.io',
          version: 'v1alpha1',
          plural: 'applications',
          namespace,
          name,
        });
        return isRecord(object) ? object : undefined;
      } catch (error) {
        return absent(error);
      }
    },
    async namespaceAnnotations(namespace) {
      try {
        const object = await core.readNamespace({ name: namespace });
        return object.metadata?.annotations ?? {};
      } catch (error) {
        return absent(error) ?? {};
      }
    },
    async logTail(namespace, pod, container) {
      const log = await core.readNamespacedPodLog({ namespace, name: pod, container, ...LOG_TAIL });
      // At limitBytes the kubelet cut the log where the bytes ran out, maybe inside a line (`rd=hunter2`, whose
      // `passwo` was cut off, is no longer redacted): that first, partial line is left out, and a log of one line with it.
      if (Buffer.byteLength(log, 'utf8') < LOG_TAIL.limitBytes) return log;
      const firstBreak = log.indexOf('\n');
      return firstBreak === -1 ? '' : log.slice(firstBreak + 1);
    },
  };
}
