// OpenShift known per cluster (issue 27, item 1): API discovery (GET /apis) against a stand-in for kube-apiserver
// (test/support/fake-apiserver.ts answers the APIGroupList, with OpenShift's security.openshift.io group or without),
// through the real /mutate of buildApp. Argo CD `CreateNamespace=true` then a PreSync hook reaches hookguard before
// cluster-policy-controller's namespace-security-allocation controller has written openshift.io/sa.scc.uid-range: a
// guard with a user of its own (65534) would be refused by restricted-v2 (openshift/apiserver-library-go
// pkg/securitycontextconstraints/user/mustrunasrange.go Validate) and the Job would sit in FailedCreate. On an
// OpenShift cluster the guard sets no user, annotated namespace or not; on a plain cluster a copied annotation
// changes nothing.
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { ApiDiscovery } from '../../src/discovery/api-groups.js';
import { NamespaceWatch, RULE_NAMESPACE_KEYS } from '../../src/discovery/namespaces.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { GUARD_CONTAINER_NAME } from '../../src/rules/min-runtime.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { capturedLogger, eventually } from '../support/log-sink.js';
import { ARGOCD_CONTROLLER, hookJob } from '../support/objects.js';
import { admissionReview, decodePatch } from '../support/reviews.js';

const BACKOFF = { initialMs: 20, maxMs: 100 };
/** A mirrored busybox, whose user is root, with the user hookguard used to give the guard: what item 1 is about. */
const BUSYBOX_65534 = {
  'argocd.version': '3.1.0',
  'rules.minRuntime.image': 'busybox:1.37.0',
  'rules.minRuntime.runAsUser': '65534',
  'rules.minRuntime.imageRunsAsNonRoot': 'false',
};
/** What cluster-policy-controller writes on a namespace some seconds after it is created. */
const OPENSHIFT_ANNOTATIONS = {
  'openshift.io/sa.scc.mcs': 's0:c26,c15',
  'openshift.io/sa.scc.supplemental-groups': '1000680000/10000',
  'openshift.io/sa.scc.uid-range': '1000680000/10000',
};
const NO_IDS = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  privileged: false,
  readOnlyRootFilesystem: true,
  seccompProfile: { type: 'RuntimeDefault' },
};

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function namespace(name: string, annotations: Record<string, string> = {}) {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } };
}

async function serving(
  server: FakeApiServer,
  config: Record<string, string>,
  pollMs = 60_000,
): Promise<{ discovery: ApiDiscovery; app: FastifyInstance; watch: NamespaceWatch }> {
  const { logger } = capturedLogger();
  const discovery = new ApiDiscovery(server.kubeConfig('hookguard'), BACKOFF, logger, pollMs);
  discovery.start();
  cleanup.push(() => discovery.stop());
  const watch = new NamespaceWatch(
    server.kubeConfig('hookguard'),
    { backoff: BACKOFF, watchTimeoutSeconds: 60 },
    logger,
    RULE_NAMESPACE_KEYS,
  );
  watch.start();
  cleanup.push(() => watch.stop());
  const app = buildApp(loadConfig({ overrides: config }), { logger, namespaces: watch, cluster: discovery });
  cleanup.push(() => app.close());
  return { discovery, app, watch };
}

/** The guard's securityContext on an Argo CD 3.1.0 PreSync hook Job created in `namespaceName`. */
async function guardContextIn(app: FastifyInstance, namespaceName: string) {
  const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
  job.metadata!.namespace = namespaceName;
  const response = await app.inject({
    method: 'POST',
    url: '/mutate',
    payload: admissionReview({
      uid: `guard-${namespaceName}`,
      operation: 'CREATE',
      object: job,
      namespace: namespaceName,
      username: ARGOCD_CONTROLLER,
    }),
  });
  const patch = decodePatch(response.json<AdmissionReviewResponse>().response);
  const added = patch.find((op) => op.path === '/spec/template/spec/initContainers') as
    { value: { name: string; securityContext: Record<string, unknown> }[] } | undefined;
  return added?.value.find((container) => container.name === GUARD_CONTAINER_NAME)?.securityContext;
}

describe('API discovery: OpenShift per cluster', () => {
  it('an OpenShift cluster, a namespace not annotated yet: the guard sets no user, which restricted-v2 assigns', async () => {
    const server = await new FakeApiServer().start();
    cleanup.push(() => server.stop());
    server.openShift = true;
    const { discovery, app } = await serving(server, BUSYBOX_65534);
    await eventually(() => discovery.cluster() !== undefined, 'the first GET /apis');
    expect(discovery.status()).toEqual({ enabled: true, read: true, openshift: true });
    expect(
      server.requests.filter((request) => request.path.startsWith('/apis')).map((request) => request.path),
    ).toEqual(['/apis']);
    // Argo CD's CreateNamespace=true created it a moment ago: no openshift.io/sa.scc.uid-range yet.
    server.put(namespace('fresh'));
    expect(await guardContextIn(app, 'fresh')).toEqual(NO_IDS);
  });

  it('a plain cluster, a namespace carrying a copied uid-range annotation: the configured 65534, as before', async () => {
    const server = await new FakeApiServer().start();
    cleanup.push(() => server.stop());
    server.put(namespace('copied', OPENSHIFT_ANNOTATIONS));
    const { discovery, app } = await serving(server, BUSYBOX_65534);
    await eventually(() => discovery.cluster() !== undefined, 'the first GET /apis');
    expect(discovery.status()).toEqual({ enabled: true, read: true, openshift: false });
    expect(await guardContextIn(app, 'copied')).toEqual({
      ...NO_IDS,
      runAsNonRoot: true,
      runAsUser: 65534,
      runAsGroup: 65534,
    });
  });

  it('the default guard (distroless, its own user 65532) sets no user on either cluster', async () => {
    for (const openShift of [true, false]) {
      const server = await new FakeApiServer().start();
      cleanup.push(() => server.stop());
      server.openShift = openShift;
      const { discovery, app } = await serving(server, { 'argocd.version': '3.1.0' });
      await eventually(() => discovery.cluster() !== undefined, 'the first GET /apis');
      expect(await guardContextIn(app, 'fresh'), `openShift ${openShift}`).toEqual({ ...NO_IDS, runAsNonRoot: true });
    }
  });

  it('retries a failed read with backoff, keeps the last facts, and follows the cluster on each poll', async () => {
    const server = await new FakeApiServer().start();
    cleanup.push(() => server.stop());
    server.fail({ method: 'GET', pathIncludes: '/apis', status: 503, times: 2 });
    const { discovery, app } = await serving(server, BUSYBOX_65534, 100);
    // Until the first answer nothing is known: the configured user, as on a plain cluster.
    expect(discovery.cluster()).toBeUndefined();
    await eventually(() => discovery.cluster()?.openshift === false, 'read after two 503s');
    expect(discovery.status()).toEqual({ enabled: true, read: true, openshift: false });
    expect(await guardContextIn(app, 'ns')).toMatchObject({ runAsUser: 65534 });
    server.openShift = true;
    await eventually(() => discovery.cluster()?.openshift === true, 'the next poll');
    expect(await guardContextIn(app, 'ns')).toEqual(NO_IDS);
    // A failure after that keeps what was known.
    server.fail({ method: 'GET', pathIncludes: '/apis', status: 503, times: 1 });
    await eventually(() => discovery.status().enabled && 'lastError' in discovery.status(), 'a failed poll');
    expect(discovery.cluster()).toEqual({ openshift: true });
  });
});
