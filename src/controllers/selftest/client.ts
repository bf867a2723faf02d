// The API calls of the self-test, through @kubernetes/client-node's typed clients, as plain JSON objects.
import { BatchV1Api, CustomObjectsApi, type KubeConfig, type V1Job } from '@kubernetes/client-node';
import type { KubeObject } from '../../core/types.js';
import { abortWith } from '../../kube/abort.js';
import { apiFailure } from '../../kube/api-failure.js';
import { plainObject } from '../../kube/plain.js';
import { warningTexts } from './probe.js';

/**
 * The cluster-scoped HookGuard object the leader writes its status to: the Helm chart's
 * charts/hookguard/templates/self-test.yaml creates it, of the CRD charts/hookguard/crds/hookguards.hookguard.io.yaml.
 */
export const HOOKGUARD_RESOURCE = {
  group: 'hookguard.io',
  version: 'v1alpha1',
  plural: 'hookguards',
  name: 'hookguard',
};

const FIELD_MANAGER = 'hookguard';

export interface DryRunAnswer {
  object: KubeObject;
  /** The texts of the answer's Warning headers. */
  warnings: string[];
}

export interface SelfTestClient {
  /** A server-side dry-run CREATE (`dryRun=All`) of a Job. */
  dryRunCreate(job: KubeObject, signal: AbortSignal): Promise<DryRunAnswer>;
  /** The HookGuard object, or undefined when it does not exist. */
  readStatusObject(signal: AbortSignal): Promise<KubeObject | undefined>;
  /** A PUT of `object` (as read, with its resourceVersion) to the status subresource: 409 when it changed meanwhile. */
  writeStatus(object: KubeObject, signal: AbortSignal): Promise<KubeObject>;
}

/**
 * The self-test's API calls as `kubeConfig`'s identity; `resource` names the HookGuard object whose status it reads and
 * writes (the chart's by default; a test gives one of its own, beside the cluster's).
 */
export function kubeSelfTestClient(
  kubeConfig: KubeConfig,
  resource: typeof HOOKGUARD_RESOURCE = HOOKGUARD_RESOURCE,
): SelfTestClient {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  return {
    async dryRunCreate(job, signal) {
      const namespace = job.metadata?.namespace ?? '';
      const answer = await batch.createNamespacedJobWithHttpInfo(
        { namespace, body: job as V1Job, dryRun: 'All', fieldManager: FIELD_MANAGER },
        abortWith(signal),
      );
      return { object: plainObject(answer.data), warnings: warningTexts(answer.headers.warning) };
    },
    async readStatusObject(signal) {
      try {
        return plainObject(await custom.getClusterCustomObject(resource, abortWith(signal)));
      } catch (error) {
        if (apiFailure(error).status === 404) return undefined;
        throw error;
      }
    },
    async writeStatus(object, signal) {
      return plainObject(
        await custom.replaceClusterCustomObjectStatus(
          { ...resource, body: object, fieldManager: FIELD_MANAGER },
          abortWith(signal),
        ),
      );
    },
  };
}
