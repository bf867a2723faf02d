// The request mix: every chart fixture (test/fixtures) as a CREATE AdmissionReview to /mutate and /validate, sent as a Helm
// user and as the Argo CD controller, plus Jobs and Pods that are not hooks (the fast path most traffic takes).
// /validate gets the object as the API server would send it there: after hookguard's own mutation.
import { applyPatch } from '../src/core/json-patch.js';
import { loadFixtures } from '../test/support/fixtures.js';
import { admissionReview } from '../test/support/reviews.js';
import type { AdmissionRequest, Endpoint, KubeObject, Operation } from '../src/core/types.js';

/** hookguard's mutating decision: the patch it answers /mutate with. */
export type MutatePatch = (request: AdmissionRequest) => readonly Operation[];

export interface BenchRequest {
  /** fixture file or object name */
  source: string;
  endpoint: Endpoint;
  requester: 'helm' | 'argocd';
  hook: boolean;
  uid: string;
  body: string;
}

export const NON_HOOKS: readonly { source: string; object: KubeObject }[] = [
  {
    source: 'non-hook Job',
    object: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { generateName: 'report-', namespace: 'apps', labels: { 'app.kubernetes.io/instance': 'rel' } },
      spec: {
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'report', image: 'alpine:3.20', command: ['sh', '-c', 'echo report'] }],
          },
        },
      },
    },
  },
  {
    source: 'non-hook Pod',
    object: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-7d9f8-abcde',
        namespace: 'apps',
        labels: { app: 'web' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8', uid: 'a1', controller: true },
        ],
      },
      spec: {
        containers: [
          {
            name: 'web',
            image: 'nginx:1.27',
            ports: [{ containerPort: 80 }],
            resources: { requests: { cpu: '100m', memory: '64Mi' } },
          },
        ],
      },
    },
  },
];

export interface Workload {
  requests: BenchRequest[];
  fixtures: number;
}

export function buildWorkload(argocdController: string, mutatePatch: MutatePatch): Workload {
  const fixtures = loadFixtures().map((fixture) => ({
    source: fixture.file,
    object: fixture.object,
    hook: true,
  }));
  const objects = [...fixtures, ...NON_HOOKS.map((entry) => ({ ...entry, hook: false }))];
  const requests: BenchRequest[] = [];
  for (const { source, object, hook } of objects) {
    for (const requester of ['helm', 'argocd'] as const) {
      for (const endpoint of ['mutate', 'validate'] as const) {
        const uid = `bench-${requests.length}`;
        const username = requester === 'argocd' ? argocdController : 'kubernetes-admin';
        const review = admissionReview({ uid, operation: 'CREATE', object, username }) as { request: AdmissionRequest };
        if (endpoint === 'validate') {
          review.request.object = applyPatch(structuredClone(object), [...mutatePatch(review.request)]).newDocument;
        }
        const body = JSON.stringify(review);
        requests.push({ source, endpoint, requester, hook, uid, body });
      }
    }
  }
  return { requests, fixtures: fixtures.length };
}

/**
 * What is sent: the whole mix (the workload, 92% hook objects, every rule at work), the hooks Argo CD applies
 * alone (every fixture as the controller of Argo CD 2.14.3, to /mutate and /validate: every rule fires, the heaviest
 * path), and the non-hook Jobs and Pods alone, the fast path that most Pods and Jobs of a cluster take through the
 * webhook.
 */
export type Scenario = 'mix' | 'argocd-hooks' | 'non-hooks';

/** The requests of each scenario, taken from the workload's. */
export function scenarioMixes(requests: readonly BenchRequest[]): Record<Scenario, readonly BenchRequest[]> {
  return {
    mix: requests,
    'argocd-hooks': requests.filter((entry) => entry.hook && entry.requester === 'argocd'),
    'non-hooks': requests.filter((entry) => !entry.hook),
  };
}

/**
 * The requests as autocannon sends them, each connection walking them in order; `freshUids`: each sent with a uid of
 * its own (autocannon's idReplacement, which the caller turns on), so that nothing keyed by uid can hide in a cache.
 */
export function autocannonRequests(requests: readonly BenchRequest[], { freshUids = false } = {}) {
  return requests.map((entry) => ({
    method: 'POST' as const,
    path: `/${entry.endpoint}`,
    headers: { 'content-type': 'application/json' },
    body: freshUids ? entry.body.replace(`"uid":"${entry.uid}"`, `"uid":"${entry.uid}-[<id>]"`) : entry.body,
  }));
}
