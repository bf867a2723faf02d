// Argo CD's and Flux's controllers as real objects for the discovery tests: the layouts of
// test/support/argocd-controllers.ts applied to the real API server in namespaces of the test's own, read by
// hookguard's discovery (in process, or `hookguard serve`) as the chart's identity through the fault proxy.
// Nothing runs them: this cluster's controller-manager runs no StatefulSet controller, and every Deployment is applied
// paused (`spec.paused`: the Deployment controller then creates no ReplicaSet, v1.37.2
// pkg/controller/deployment/sync.go sync with createIfNotExisted false), so their replicas keep the meaning discovery
// gives them (a workload at zero replicas is one that does not run) without a Pod.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../../../src/config/keys.js';
import { loadConfig } from '../../../src/config/load.js';
import type { KubeObject } from '../../../src/core/types.js';
import { ArgoDiscovery, type DiscoverySettings } from '../../../src/discovery/discovery.js';
import { buildApp } from '../../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../../src/http/responses.js';
import { capturedLogger, type LogLine } from '../../support/log-sink.js';
import { admissionReview, decodePatch } from '../../support/reviews.js';
import { kubectl } from './cluster.js';
import { FaultProxy } from './fault-proxy.js';

/** A workload as applied: Deployments paused, with `labels` added (a case's own, for a cluster-wide selector). */
export function placed(workload: KubeObject, labels: Record<string, string> = {}): KubeObject {
  const metadata = { ...workload.metadata, labels: { ...workload.metadata?.labels, ...labels } };
  const spec = workload.kind === 'Deployment' ? { ...(workload.spec ?? {}), paused: true } : workload.spec;
  return { ...workload, metadata, spec };
}

/** Applies the workloads (placed()) in one call. */
export async function place(workloads: readonly KubeObject[], labels: Record<string, string> = {}): Promise<void> {
  const items = workloads.map((workload) => placed(workload, labels));
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
}

/** `kubectl set image` of the controller container of Argo CD's upstream StatefulSet: an upgrade as kubectl does it. */
export async function setControllerImage(namespace: string, image: string): Promise<void> {
  await kubectl([
    'set',
    'image',
    '-n',
    namespace,
    'statefulset/argocd-application-controller',
    `argocd-application-controller=${image}`,
  ]);
}

/** The user Argo CD's upstream controller acts as in `namespace`. */
export const controllerOf = (namespace: string) => `system:serviceaccount:${namespace}:argocd-application-controller`;

/** /readyz's discovery once it has synced and watches one upstream StatefulSet controller in `namespace`. */
export function discoveryWithController(namespace: string, version: string, image: string) {
  return {
    enabled: true,
    synced: true,
    watching: true,
    instances: [{ namespace, version, source: `StatefulSet argocd-application-controller: image ${image}` }],
  };
}

export interface Discovering {
  discovery: ArgoDiscovery;
  app: FastifyInstance;
  lines: LogLine[];
  logger: Logger;
  stop(): Promise<void>;
}

/**
 * hookguard's Argo CD discovery in process, reading through `proxy` with `token`, and the HTTP app deciding with it
 * (`/mutate`, `/validate`, `/readyz` by inject()). The rules that do the same for every version are off by default
 * (the watcher's label, the log fallback): these tests are about what the discovered versions decide.
 */
export function discover(
  proxy: FaultProxy,
  token: string,
  settings: DiscoverySettings,
  config: Readonly<Config> = loadConfig({
    overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false' },
  }),
): Discovering {
  const { logger, lines } = capturedLogger();
  const discovery = new ArgoDiscovery(proxy.kubeConfig(token), settings, logger);
  discovery.start();
  const app = buildApp(config, { logger, argocd: discovery });
  return {
    discovery,
    app,
    lines,
    logger,
    stop: async () => {
      await discovery.stop();
      await app.close();
    },
  };
}

export async function review(
  app: FastifyInstance,
  path: '/mutate' | '/validate',
  object: Record<string, unknown>,
  username: string,
) {
  const response = await app.inject({
    method: 'POST',
    url: path,
    payload: admissionReview({ uid: `uid-${path}`, operation: 'CREATE', object, username }),
  });
  if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}: ${response.body}`);
  return response.json<AdmissionReviewResponse>().response;
}

export async function mutatePatch(app: FastifyInstance, object: Record<string, unknown>, username: string) {
  const response = await review(app, '/mutate', object, username);
  return response.patch === undefined ? [] : decodePatch(response);
}

export const versionOf = (discovery: ArgoDiscovery, namespace: string) => discovery.instances().get(namespace)?.version;

export const synced = (discovery: ArgoDiscovery) => {
  const status = discovery.status();
  return status.enabled && status.synced;
};

export const watching = (discovery: ArgoDiscovery) => {
  const status = discovery.status();
  return status.enabled && status.watching;
};

export const auditLines = (lines: LogLine[]) =>
  lines.filter((line) => line.audit !== undefined).map((line) => line.audit as Record<string, unknown>);
