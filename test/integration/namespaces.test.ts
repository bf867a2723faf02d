// The namespace watch against a stand-in for kube-apiserver (test/support/fake-apiserver.ts: real paths, List
// bodies, chunked watch events, Status bodies for errors), through the real /mutate of buildApp with inject():
// mesh-sidecar reads the namespace's injection labels from the watch's snapshot, never from a call per request.
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { NamespaceWatch, RULE_NAMESPACE_KEYS } from '../../src/discovery/namespaces.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { capturedLogger, eventually } from '../support/log-sink.js';
import { hookJob } from '../support/objects.js';
import { admissionReview, decodePatch } from '../support/reviews.js';

const SETTINGS = { backoff: { initialMs: 20, maxMs: 100 }, watchTimeoutSeconds: 60 };
const ISTIO_WARNING =
  'hookguard [mesh-sidecar]: istio-proxy may keep this Job running; pod label sidecar.istio.io/inject=false fixes it (name…';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function namespace(name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}) {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels, annotations } };
}

async function watching(
  server: FakeApiServer,
  config: Record<string, string> = {},
): Promise<{ watch: NamespaceWatch; app: FastifyInstance }> {
  const { logger } = capturedLogger();
  const watch = new NamespaceWatch(server.kubeConfig('hookguard'), SETTINGS, logger, RULE_NAMESPACE_KEYS);
  watch.start();
  cleanup.push(() => watch.stop());
  // The version- and namespace-independent rules (the watcher's label, the log fallback) off: these tests are about
  // what the namespace watch decides.
  const app = buildApp(
    loadConfig({
      overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false', ...config },
    }),
    { logger, namespaces: watch },
  );
  cleanup.push(() => app.close());
  return { watch, app };
}

async function mutate(app: FastifyInstance, uid: string) {
  const response = await app.inject({
    method: 'POST',
    url: '/mutate',
    payload: admissionReview({ uid, operation: 'CREATE', object: hookJob(undefined, { activeDeadlineSeconds: 600 }) }),
  });
  return response.json<AdmissionReviewResponse>().response;
}

describe('the namespace watch', () => {
  it('says nothing until its list is in, then follows the namespace labels through watch events', async () => {
    const server = await new FakeApiServer().start();
    cleanup.push(() => server.stop());
    server.put(namespace('apps', { 'istio-injection': 'enabled', team: 'a' }, { 'linkerd.io/inject': 'disabled' }));
    server.put(namespace('quiet', { team: 'b' }));
    server.fail({ method: 'GET', pathIncludes: '/api/v1/namespaces', watch: false, status: 503, times: 2 });
    const { watch, app } = await watching(server);

    // The first list failed: no snapshot, no guess.
    expect(watch.namespaces()).toBeUndefined();
    expect((await mutate(app, 'before-sync')).warnings).toBeUndefined();

    await eventually(() => watch.status().enabled && watch.namespaces() !== undefined, 'the first list');
    // Only the namespaces and the keys a rule reads are kept.
    expect([...watch.namespaces()!.values()]).toEqual([
      { name: 'apps', labels: { 'istio-injection': 'enabled' }, annotations: { 'linkerd.io/inject': 'disabled' } },
    ]);
    expect((await mutate(app, 'synced')).warnings).toEqual([ISTIO_WARNING]);

    server.put(namespace('apps', { 'istio-injection': 'disabled' }));
    await eventually(
      () => watch.namespaces()?.get('apps')?.labels['istio-injection'] === 'disabled',
      'the MODIFIED event',
    );
    expect((await mutate(app, 'disabled')).warnings).toBeUndefined();

    server.remove('Namespace', '', 'apps');
    await eventually(() => watch.namespaces()?.size === 0, 'the DELETED event');
    expect(watch.status()).toEqual({ enabled: true, synced: true, watching: true, namespacesWithRuleKeys: 0 });
    // Cluster-wide: one list of /api/v1/namespaces without a selector, then a watch from its resourceVersion.
    const calls = server.requests.filter((request) => request.path === '/api/v1/namespaces' && request.status === 200);
    expect(calls.map((request) => [request.query.watch, request.query.labelSelector])).toEqual([
      [undefined, undefined],
      ['true', ''],
    ]);
  });

  it('with action exclude, takes a hook Job out of the injection its namespace asks for, exactly', async () => {
    const server = await new FakeApiServer().start();
    cleanup.push(() => server.stop());
    server.put(namespace('apps', {}, { 'linkerd.io/inject': 'enabled' }));
    const { watch, app } = await watching(server, { 'rules.meshSidecar.action': 'exclude' });
    await eventually(() => watch.namespaces()?.size === 1, 'the first list');
    const response = await mutate(app, 'exclude');
    expect(response.warnings).toBeUndefined();
    expect(decodePatch(response)).toEqual([
      { op: 'add', path: '/spec/template/metadata', value: { annotations: { 'linkerd.io/inject': 'disabled' } } },
      // No delete policy deletes it on success: hook-ttl gives it a TTL (its own deadline keeps hook-deadline out).
      { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
    ]);
  });

  it('keeps admitting, saying nothing about meshes, when it may not list namespaces (RBAC), and says why in /readyz', async () => {
    const server = await new FakeApiServer().start();
    cleanup.push(() => server.stop());
    server.put(namespace('apps', { 'istio-injection': 'enabled' }));
    server.fail({ pathIncludes: '/api/v1/namespaces', status: 403, times: 1000 });
    const { watch, app } = await watching(server);
    await eventually(() => watch.status().enabled && (watch.status() as { lastError?: string }).lastError, 'a failure');
    const response = await mutate(app, 'forbidden');
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
  });
});
