// The namespace watch (src/discovery/namespaces.ts) on the real API server, through the fault proxy (narrowed to this
// file's namespaces, as a cluster holding only them), as the chart's identity, behind the real /mutate of buildApp
// with inject(): mesh-sidecar reads a namespace's injection labels from the watch's snapshot, never from a call per
// request. Real namespaces are made, relabelled and deleted; the API server's own 403 says what RBAC refuses.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, it, type TestContext } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { NamespaceWatch, RULE_NAMESPACE_KEYS } from '../../src/discovery/namespaces.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { capturedLogger } from '../support/log-sink.js';
import { hookJob } from '../support/objects.js';
import { admissionReview, decodePatch } from '../support/reviews.js';
import {
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlPath,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import { FaultProxy, serviceAccountToken } from './support/fault-proxy.js';
import { chartIdentity, type ChartIdentity } from './support/identity.js';

const SETTINGS = { backoff: { initialMs: 20, maxMs: 100 }, watchTimeoutSeconds: 60 };
const ISTIO_WARNING =
  'hookguard [mesh-sidecar]: istio-proxy may keep this Job running; pod label sidecar.istio.io/inject=false fixes it (name…';

describeCluster('the namespace watch on the real API server', () => {
  let home = '';
  let identity: ChartIdentity;
  const made: string[] = [];

  beforeAll(async () => {
    home = await newNamespace('namespace-watch');
    identity = await chartIdentity(home);
  });
  afterAll(async () => {
    await identity?.release();
    for (const name of [home, ...made]) await deleteNamespace(name);
  });

  /** A namespace of this file's, made with kubectl (no wait for its ServiceAccount: nothing runs in it). */
  async function namespace(
    prefix: string,
    labels: Record<string, string>,
    annotations: Record<string, string> = {},
    suffix = true,
  ) {
    const name = suffix ? `${prefix}-${Math.random().toString(16).slice(2, 8)}` : prefix;
    made.push(name);
    await kubectl(
      ['create', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels, annotations } }),
    );
    return name;
  }

  /** What a test started, stopped when it ends (last first). */
  function scope(context: TestContext): (step: () => Promise<void>) => void {
    const steps: Array<() => Promise<void>> = [];
    context.onTestFinished(async () => {
      for (const step of steps.reverse()) await step();
    });
    return (step) => steps.push(step);
  }

  async function watching(
    cleanup: (step: () => Promise<void>) => void,
    proxy: FaultProxy,
    token: string,
    config: Record<string, string> = {},
  ): Promise<{ watch: NamespaceWatch; app: FastifyInstance }> {
    const { logger } = capturedLogger();
    const watch = new NamespaceWatch(proxy.kubeConfig(token), SETTINGS, logger, RULE_NAMESPACE_KEYS);
    watch.start();
    cleanup(() => watch.stop());
    // The version- and namespace-independent rules (the watcher's label, the log fallback) off: these tests are about
    // what the namespace watch decides.
    const app = buildApp(
      loadConfig({
        overrides: {
          'rules.hookLabel.enabled': 'false',
          'rules.terminationMessagePolicy.enabled': 'false',
          ...config,
        },
      }),
      { logger, namespaces: watch },
    );
    cleanup(() => app.close());
    return { watch, app };
  }

  async function proxyFor(cleanup: (step: () => Promise<void>) => void, ...namespaces: string[]): Promise<FaultProxy> {
    const proxy = await FaultProxy.start();
    proxy.namespaces = new Set(namespaces);
    cleanup(() => proxy.stop());
    return proxy;
  }

  async function mutate(app: FastifyInstance, uid: string, namespace: string) {
    const response = await app.inject({
      method: 'POST',
      url: '/mutate',
      payload: admissionReview({
        uid,
        operation: 'CREATE',
        namespace,
        object: hookJob(undefined, { activeDeadlineSeconds: 600 }),
      }),
    });
    return response.json<AdmissionReviewResponse>().response;
  }

  it.concurrent(
    'says nothing until its list is in, then follows the namespace labels through watch events',
    async (context) => {
      const cleanup = scope(context);
      const { expect } = context;
      const apps = await namespace(
        'apps',
        { 'istio-injection': 'enabled', team: 'a' },
        { 'linkerd.io/inject': 'disabled' },
      );
      const quiet = await namespace('quiet', { team: 'b' });
      const proxy = await proxyFor(cleanup, apps, quiet);
      proxy.fail({ method: 'GET', pathIncludes: '/api/v1/namespaces', watch: false, status: 503, times: 2 });
      const { watch, app } = await watching(cleanup, proxy, identity.token);

      // The first list failed: no snapshot, no guess.
      expect(watch.namespaces()).toBeUndefined();
      expect((await mutate(app, 'before-sync', apps)).warnings).toBeUndefined();

      await waitUntil('the first list', async () => watch.status().enabled && watch.namespaces() !== undefined);
      // Only the namespaces and the keys a rule reads are kept.
      expect([...watch.namespaces()!.values()]).toEqual([
        { name: apps, labels: { 'istio-injection': 'enabled' }, annotations: { 'linkerd.io/inject': 'disabled' } },
      ]);
      expect((await mutate(app, 'synced', apps)).warnings).toEqual([ISTIO_WARNING]);

      // A namespace made now arrives as ADDED.
      const later = `later-${Math.random().toString(16).slice(2, 8)}`;
      proxy.namespaces?.add(later);
      await namespace(later, { 'istio-injection': 'enabled' }, {}, false);
      await waitUntil('the ADDED event', async () => watch.namespaces()?.has(later));

      await kubectl(['label', 'namespace', apps, 'istio-injection=disabled', '--overwrite']);
      await waitUntil(
        'the MODIFIED event',
        async () => watch.namespaces()?.get(apps)?.labels['istio-injection'] === 'disabled',
      );
      expect((await mutate(app, 'disabled', apps)).warnings).toBeUndefined();

      // Deleted: the namespace controller empties it, then the API server removes it and the watch says DELETED.
      await kubectl(['delete', 'namespace', apps, later, '--wait=false']);
      await waitUntil('the DELETED events', async () => watch.namespaces()?.size === 0, 90);
      expect(watch.status()).toEqual({ enabled: true, synced: true, watching: true, namespacesWithRuleKeys: 0 });
      // Cluster-wide: one list of /api/v1/namespaces without a selector, then a watch from its resourceVersion.
      const calls = proxy.requests.filter((request) => request.path === '/api/v1/namespaces' && request.status === 200);
      expect(calls.map((request) => [request.query.watch, request.query.labelSelector])).toEqual([
        [undefined, undefined],
        ['true', ''],
      ]);
      expect(calls[1]?.query.resourceVersion).toMatch(/^\d+$/);
    },
    120_000,
  );

  it.concurrent(
    'with action exclude, takes a hook Job out of the injection its namespace asks for, exactly',
    async (context) => {
      const cleanup = scope(context);
      const { expect } = context;
      const apps = await namespace('exclude', {}, { 'linkerd.io/inject': 'enabled' });
      const proxy = await proxyFor(cleanup, apps);
      const { watch, app } = await watching(cleanup, proxy, identity.token, { 'rules.meshSidecar.action': 'exclude' });
      await waitUntil('the first list', async () => watch.namespaces()?.size === 1);
      const response = await mutate(app, 'exclude', apps);
      expect(response.warnings).toBeUndefined();
      expect(decodePatch(response)).toEqual([
        { op: 'add', path: '/spec/template/metadata', value: { annotations: { 'linkerd.io/inject': 'disabled' } } },
        // No delete policy deletes it on success: hook-ttl gives it a TTL (its own deadline keeps hook-deadline out).
        { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
      ]);
    },
  );

  it.concurrent(
    'keeps admitting, saying nothing about meshes, when RBAC refuses the list, and says why in /readyz',
    async (context) => {
      const cleanup = scope(context);
      const { expect } = context;
      const apps = await namespace('forbidden', { 'istio-injection': 'enabled' });
      // A ServiceAccount bound to nothing: the API server's own 403.
      await kubectl(['create', 'serviceaccount', 'nobody', '-n', home]);
      const token = await serviceAccountToken(home, 'nobody');
      const proxy = await proxyFor(cleanup, apps);
      const { watch, app } = await watching(cleanup, proxy, token);
      await waitUntil(
        'a failure',
        async () => watch.status().enabled && (watch.status() as { lastError?: string }).lastError,
      );
      const response = await mutate(app, 'forbidden', apps);
      expect(response.allowed).toBe(true);
      expect(response.warnings).toBeUndefined();
      const readyz = await app.inject({ method: 'GET', url: '/readyz' });
      expect(readyz.statusCode).toBe(200);
      expect(readyz.json()).toEqual({
        status: 'ready',
        namespaces: {
          enabled: true,
          synced: false,
          watching: false,
          lastError: 'HTTP-Code: 403',
          namespacesWithRuleKeys: 0,
        },
      });
      expect(proxy.requests.filter((request) => request.path === '/api/v1/namespaces').map((r) => r.status)).toContain(
        403,
      );
      expect(
        (
          await run(kubectlPath, ['auth', 'can-i', 'list', 'namespaces', `--as=system:serviceaccount:${home}:nobody`])
        ).stdout.trim(),
      ).toBe('no');
    },
  );
});
