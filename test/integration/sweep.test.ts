// sweep against a stand-in for kube-apiserver (test/support/fake-apiserver.ts): real list (metadata only, paged,
// continue tokens that expire), get and JSON-patch paths, a failed `test` op answered 422 as kube-apiserver does,
// Workflows, Events checked as kube-apiserver checks them, injected 403, 404, 409, 429 and 5xx.
import { afterEach, describe, expect, it } from 'vitest';
import { METADATA_LIST_ACCEPT, kubeSweepClient } from '../../src/sweep/client.js';
import { MAX_LIST_RESTARTS, removalPatch, sweep } from '../../src/sweep/sweep.js';
import { ApiCallError } from '../../src/errors.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { capturedLogger } from '../support/log-sink.js';
import { HOOK_FINALIZER } from '../support/objects.js';
import { KEEP, seed, stuckJob } from '../support/stuck-hooks.js';
import { runSweep, sweepOptions } from '../support/sweep-run.js';

let servers: FakeApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  servers = [];
});

async function cluster(): Promise<FakeApiServer> {
  const server = await new FakeApiServer().start();
  servers.push(server);
  seed(server);
  return server;
}

/** A write somewhere else in the cluster: the resourceVersion moves on. */
function churn(server: FakeApiServer): void {
  server.put({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'churn', namespace: 'apps' } });
}

const patches = (server: FakeApiServer) => server.requests.filter((request) => request.method === 'PATCH');
const finalizersOf = (server: FakeApiServer, kind: string, name: string, namespace = 'apps') =>
  server.get(kind, namespace, name)?.metadata.finalizers;

describe('sweep', () => {
  it('in a dry run, names what qualifies and why, and sends no write', async () => {
    const server = await cluster();
    const { report, outcome } = await runSweep(server, { apply: false });
    expect(outcome).toEqual({
      'keeps-other': 'would-remove',
      'failed-only-hook': 'would-remove',
      'running-old': 'would-remove',
      'running-new': 'skipped',
      'not-a-hook': 'skipped',
      'pod-done': 'would-remove',
    });
    expect(report.results.find((result) => result.name === 'keeps-other')).toEqual({
      kind: 'Job',
      namespace: 'apps',
      name: 'keeps-other',
      profile: 'argocd-hook',
      finalizer: HOOK_FINALIZER,
      action: 'would-remove',
      reasons: ['Argo CD PreSync hook', 'Job Complete', expect.stringMatching(/^deleting for 5m3\ds, at least 5m0s$/)],
      ageSeconds: expect.any(Number),
      finalizersBefore: [KEEP, HOOK_FINALIZER],
      finalizersAfter: [KEEP],
    });
    expect(report).toMatchObject({ dryRun: true, namespace: null });
    expect(server.requests.filter((request) => request.method !== 'GET')).toEqual([]);
    expect(server.events).toEqual([]);
  });

  it('with --apply removes only the hook finalizer of qualifying objects, guarded by a test op, with an audit line each', async () => {
    const server = await cluster();
    const untouched = ['running-new', 'not-deleting', 'not-a-hook', 'other-finalizer-only'].map((name) =>
      server.get('Job', 'apps', name),
    );
    const { outcome, lines } = await runSweep(server);
    expect(outcome).toEqual({
      'keeps-other': 'removed',
      'failed-only-hook': 'removed',
      'running-old': 'removed',
      'running-new': 'skipped',
      'not-a-hook': 'skipped',
      'pod-done': 'removed',
    });
    // The other finalizer stays; an object whose last finalizer went is deleted by the API server.
    expect(finalizersOf(server, 'Job', 'keeps-other')).toEqual([KEEP]);
    expect(server.get('Job', 'apps', 'failed-only-hook')).toBeUndefined();
    expect(server.get('Pod', 'team-b', 'pod-done')).toBeUndefined();
    // Objects that do not qualify are byte for byte what they were.
    expect(
      ['running-new', 'not-deleting', 'not-a-hook', 'other-finalizer-only'].map((name) =>
        server.get('Job', 'apps', name),
      ),
    ).toEqual(untouched);

    const keepsOther = patches(server).find(
      (request) => request.path === '/apis/batch/v1/namespaces/apps/jobs/keeps-other',
    );
    expect(keepsOther).toMatchObject({
      contentType: 'application/json-patch+json',
      body: [
        { op: 'test', path: '/metadata/finalizers', value: [KEEP, HOOK_FINALIZER] },
        { op: 'replace', path: '/metadata/finalizers', value: [KEEP] },
      ],
      status: 200,
    });
    expect(
      patches(server)
        .map((request) => request.path)
        .sort(),
    ).toEqual([
      '/api/v1/namespaces/team-b/pods/pod-done',
      '/apis/batch/v1/namespaces/apps/jobs/failed-only-hook',
      '/apis/batch/v1/namespaces/apps/jobs/keeps-other',
      '/apis/batch/v1/namespaces/apps/jobs/running-old',
    ]);
    const audits = lines
      .filter((line) => line.audit !== undefined)
      .map((line) => line.audit as Record<string, unknown>);
    expect(audits).toHaveLength(4);
    expect(audits.find((audit) => audit.name === 'keeps-other')).toEqual({
      action: 'finalizer-removed',
      profile: 'argocd-hook',
      finalizer: HOOK_FINALIZER,
      kind: 'Job',
      namespace: 'apps',
      name: 'keeps-other',
      uid: 'uid-jobs/apps/keeps-other',
      ageSeconds: expect.any(Number),
      reasons: ['Argo CD PreSync hook', 'Job Complete', expect.stringMatching(/^deleting for 5m3\ds, at least 5m0s$/)],
      finalizersBefore: [KEEP, HOOK_FINALIZER],
      finalizersAfter: [KEEP],
      actor: 'system:serviceaccount:hookguard:hookguard-sweep',
    });
  });

  it('sweeps only the namespace asked for, on its namespaced paths', async () => {
    const server = await cluster();
    const { outcome } = await runSweep(server, { namespace: 'team-b' });
    expect(outcome).toEqual({ 'pod-done': 'removed' });
    expect(
      new Set(server.requests.filter((request) => request.method === 'GET').map((request) => request.path)),
    ).toEqual(
      new Set([
        '/apis/batch/v1/namespaces/team-b/jobs',
        '/api/v1/namespaces/team-b/pods',
        '/api/v1/namespaces/team-b/pods/pod-done',
      ]),
    );
  });

  it('fails safely when the finalizers change under it: the test op fails (422), it judges again and keeps the new finalizer', async () => {
    const server = await cluster();
    let raced = false;
    server.beforePatch = (object) => {
      if (raced || object.metadata.name !== 'keeps-other') return;
      raced = true;
      server.modify('Job', 'apps', 'keeps-other', (job) =>
        (job.metadata.finalizers as string[]).push('example.com/late'),
      );
    };
    const { report } = await runSweep(server, { namespace: 'apps' });
    expect(report.results.find((result) => result.name === 'keeps-other')).toMatchObject({
      action: 'removed',
      finalizersBefore: [KEEP, HOOK_FINALIZER, 'example.com/late'],
    });
    expect(finalizersOf(server, 'Job', 'keeps-other')).toEqual([KEEP, 'example.com/late']);
    const attempts = patches(server).filter((request) => request.path.endsWith('/keeps-other'));
    expect(attempts.map((request) => request.status)).toEqual([422, 200]);
    // Read in full once to judge it, and once more after the 422.
    expect(
      server.requests.filter((request) => request.method === 'GET' && request.path.endsWith('/jobs/keeps-other')),
    ).toHaveLength(2);
  });

  it('leaves an object alone when Argo CD removed the finalizer meanwhile, and reports a failure when it keeps changing', async () => {
    const server = await cluster();
    server.beforePatch = (object) => {
      const name = object.metadata.name;
      if (name === 'running-old') server.modify('Job', 'apps', name, (job) => (job.metadata.finalizers = [KEEP]));
      // Someone keeps adding finalizers: every test op fails.
      if (name === 'keeps-other')
        server.modify('Job', 'apps', name, (job) =>
          (job.metadata.finalizers as string[]).push(`example.com/${server.requests.length}`),
        );
    };
    const { report } = await runSweep(server, { namespace: 'apps' });
    const byName = (name: string) => report.results.find((result) => result.name === name);
    expect(byName('running-old')).toMatchObject({
      action: 'skipped',
      reasons: ['changed meanwhile: no argocd.argoproj.io/hook-finalizer'],
    });
    expect(byName('keeps-other')).toMatchObject({
      action: 'failed',
      reasons: expect.arrayContaining([
        'patch failed: HTTP 422: the server rejected our request due to an error in our request',
      ]),
    });
    // Nothing was dropped: the hook finalizer and every added one are still there.
    expect(finalizersOf(server, 'Job', 'keeps-other')).toEqual(expect.arrayContaining([KEEP, HOOK_FINALIZER]));
    expect(finalizersOf(server, 'Job', 'running-old')).toEqual([KEEP]);
  });

  it('re-reads and retries once after 409 Conflict', async () => {
    const server = await cluster();
    server.fail({ method: 'PATCH', pathIncludes: '/keeps-other', status: 409 });
    const { outcome } = await runSweep(server, { namespace: 'apps' });
    expect(outcome['keeps-other']).toBe('removed');
    expect(
      patches(server)
        .filter((request) => request.path.endsWith('/keeps-other'))
        .map((request) => request.status),
    ).toEqual([409, 200]);
  });

  it('reports an object deleted before the patch as already gone, not as a failure', async () => {
    const server = await cluster();
    server.fail({ method: 'PATCH', pathIncludes: '/failed-only-hook', status: 404 });
    const { report } = await runSweep(server, { namespace: 'apps' });
    expect(report.results.find((result) => result.name === 'failed-only-hook')).toMatchObject({
      action: 'gone',
      finalizersAfter: [],
    });
  });

  it('retries 429 after its Retry-After, and 5xx with backoff', async () => {
    const server = await cluster();
    server.fail({ method: 'PATCH', pathIncludes: '/keeps-other', status: 429, retryAfterSeconds: 1 });
    server.fail({ method: 'PATCH', pathIncludes: '/running-old', status: 503, times: 2 });
    server.fail({ method: 'GET', pathIncludes: '/jobs', status: 500 });
    const started = Date.now();
    const { outcome, lines } = await runSweep(server, { namespace: 'apps' });
    expect(outcome).toMatchObject({ 'keeps-other': 'removed', 'running-old': 'removed' });
    const keepsOther = patches(server).filter((request) => request.path.endsWith('/keeps-other'));
    expect(keepsOther.map((request) => request.status)).toEqual([429, 200]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(
      patches(server)
        .filter((request) => request.path.endsWith('/running-old'))
        .map((request) => request.status),
    ).toEqual([503, 503, 200]);
    expect(
      lines.filter((line) => line.msg === 'API call failed; retrying').map((line) => [line.status, line.call]),
    ).toEqual([
      [500, 'list Jobs'],
      [429, 'patch Job apps/keeps-other'],
      [503, 'patch Job apps/running-old'],
      [503, 'patch Job apps/running-old'],
    ]);
    expect(lines.find((line) => line.status === 429)).toMatchObject({ retryInMs: 1000 });
  });

  it('gives up after sweep.maxAttempts on a persistent 5xx and reports the reason; other objects still get done', async () => {
    const server = await cluster();
    server.fail({ method: 'PATCH', pathIncludes: '/running-old', status: 500, times: 10 });
    const { report, outcome } = await runSweep(server, {
      namespace: 'apps',
      retry: { maxAttempts: 3, backoff: { initialMs: 5, maxMs: 10 } },
    });
    expect(report.results.find((result) => result.name === 'running-old')).toMatchObject({
      action: 'failed',
      reasons: [
        'Argo CD PreSync hook',
        'not finished',
        expect.stringMatching(/^deleting for 20m\ds, at least 10m0s$/),
        'patch failed: HTTP 500: injected failure 500',
      ],
      finalizersAfter: [HOOK_FINALIZER],
    });
    expect(patches(server).filter((request) => request.path.endsWith('/running-old'))).toHaveLength(3);
    expect(outcome['keeps-other']).toBe('removed');
    expect(finalizersOf(server, 'Job', 'running-old')).toEqual([HOOK_FINALIZER]);
  });

  it('reads every page of a large cluster, metadata only, and reads in full only the objects being deleted', async () => {
    const server = await new FakeApiServer().start();
    servers.push(server);
    for (let index = 0; index < 501; index += 1)
      server.put(stuckJob({ name: `stuck-${index}`, deletedSecondsAgo: 360 }));
    for (let index = 0; index < 30; index += 1) server.put(stuckJob({ name: `live-${index}` }));
    const { report } = await runSweep(server, { apply: false });
    expect(report.results).toHaveLength(501);
    expect(report.results.every((result) => result.action === 'would-remove')).toBe(true);
    const jobLists = server.requests.filter((request) => request.path === '/apis/batch/v1/jobs');
    expect(
      jobLists.map((request) => [request.query.limit, request.query.continue !== undefined, request.accept]),
    ).toEqual([
      ['500', false, METADATA_LIST_ACCEPT],
      ['500', true, METADATA_LIST_ACCEPT],
    ]);
    const reads = server.requests.filter((request) => /\/jobs\/[^/]+$/.test(request.path));
    expect(reads).toHaveLength(501);
    expect(reads.some((request) => request.path.includes('/live-'))).toBe(false);
    expect(report.summary.listed).toEqual({
      Job: { objects: 531, pages: 2, bytes: expect.any(Number), restarts: 0 },
      Pod: { objects: 0, pages: 1, bytes: expect.any(Number), restarts: 0 },
    });
  });

  it('works the same against a server that answers full lists to the metadata-only request', async () => {
    const metadataOnly = await cluster();
    const full = await cluster();
    full.metadataLists = false;
    const [withMetadata, withFull] = [
      await runSweep(metadataOnly, { apply: false }),
      await runSweep(full, { apply: false }),
    ];
    expect(withFull.report.results).toEqual(withMetadata.report.results);
    expect(withFull.report.summary.listed.Job?.bytes).toBeGreaterThan(
      withMetadata.report.summary.listed.Job?.bytes ?? 0,
    );
  });

  it(`lists again from the start when a continue token expires (410 Expired), up to ${MAX_LIST_RESTARTS} times`, async () => {
    const server = await new FakeApiServer().start();
    servers.push(server);
    for (let index = 0; index < 600; index += 1)
      server.put(stuckJob({ name: `stuck-${index}`, deletedSecondsAgo: 60, status: { active: 1 } }));
    server.put(stuckJob({ name: 'done', deletedSecondsAgo: 60 }));
    let compactions = 0;
    server.beforeList = (query) => {
      // Writes elsewhere, and etcd compacts, between the first and the second page, once.
      if (query.continue !== undefined && compactions === 0) {
        compactions += 1;
        churn(server);
        server.compact();
      }
    };
    const { report, lines } = await runSweep(server, { apply: false });
    // Each object once: what the abandoned listing found is dropped, not added to.
    expect(report.results).toHaveLength(601);
    expect(new Set(report.results.map((result) => result.name)).size).toBe(601);
    // Pages answered: the first, then the two of the new listing.
    expect(report.summary.listed.Job).toMatchObject({ objects: 601, pages: 3, restarts: 1 });
    const statuses = server.requests
      .filter((request) => request.path === '/apis/batch/v1/jobs')
      .map((request) => [request.query.continue !== undefined, request.status]);
    expect(statuses).toEqual([
      [false, 200],
      [true, 410],
      [false, 200],
      [true, 200],
    ]);
    expect(lines.find((line) => line.restart === 1)).toMatchObject({
      level: 40,
      kind: 'Job',
      msg: 'the continue token of the Job list expired (410 Gone): listing again from the start',
    });
  });

  it('gives up with the 410 when the listing keeps expiring, after every restart it allows', async () => {
    const server = await new FakeApiServer().start();
    servers.push(server);
    for (let index = 0; index < 600; index += 1) server.put(stuckJob({ name: `job-${index}` }));
    server.beforeList = (query) => {
      if (query.continue === undefined) return;
      churn(server);
      server.compact();
    };
    const { logger, lines } = capturedLogger();
    const failure = await sweep(kubeSweepClient(server.kubeConfig()), sweepOptions(), logger).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ApiCallError);
    expect((failure as ApiCallError).failure).toMatchObject({ status: 410 });
    expect(server.requests.filter((request) => request.status === 410)).toHaveLength(MAX_LIST_RESTARTS + 1);
    expect(lines.find((line) => line.msg === 'sweep stopped before the end')).toMatchObject({
      level: 50,
      summary: { listed: { Job: { restarts: MAX_LIST_RESTARTS } } },
    });
  });

  it('builds the guarded patch from the exact list it judged', () => {
    expect(removalPatch(['a/x', HOOK_FINALIZER, 'b/y'], HOOK_FINALIZER)).toEqual([
      { op: 'test', path: '/metadata/finalizers', value: ['a/x', HOOK_FINALIZER, 'b/y'] },
      { op: 'replace', path: '/metadata/finalizers', value: ['a/x', 'b/y'] },
    ]);
  });
});

describe('sweep and Argo CD Applications (argocd-hook)', () => {
  /** An Application whose operation is in `phase` and lists the hook apps/migrate with `hookPhase`. */
  const application = (namespace: string, name: string, phase: string, hookPhase: string) => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace },
    spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace: 'apps' } },
    status: {
      operationState: {
        operation: { sync: { revision: 'abc123' } },
        phase,
        message: 'waiting for completion of hook batch/Job/migrate',
        startedAt: '2026-11-22T11:50:00Z',
        syncResult: {
          revision: 'abc123',
          resources: [
            {
              group: 'batch',
              version: 'v1',
              kind: 'Job',
              namespace: 'apps',
              name: 'migrate',
              status: 'Synced',
              message: 'job.batch/migrate created',
              hookType: 'PreSync',
              hookPhase,
              syncPhase: 'PreSync',
            },
          ],
        },
      },
    },
  });
  const tracked = (name: string, trackingId: string, deletedSecondsAgo = 400) =>
    stuckJob({
      name,
      deletedSecondsAgo,
      annotations: { 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/tracking-id': trackingId },
    });
  const applicationReads = (server: FakeApiServer) =>
    server.requests
      .filter((request) => request.path.includes('/applications/'))
      .map((request) => [request.path, request.status]);

  it('never removes the finalizer while the Application operation lists the hook as running; removes it once recorded', async () => {
    const server = await new FakeApiServer().start();
    servers.push(server);
    server.put(tracked('migrate', 'shop:batch/Job:apps/migrate'));
    server.put(application('argocd', 'shop', 'Running', 'Running'));

    const first = await runSweep(server);
    expect(first.outcome).toEqual({ migrate: 'skipped' });
    expect(first.report.results[0]?.reasons).toEqual([
      'Application argocd/shop: its Running operation lists the hook as Running; Argo CD has not recorded its result',
    ]);
    expect(patches(server)).toEqual([]);
    expect(applicationReads(server)).toEqual([['/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop', 200]]);

    // The controller records the result: the operation goes on, the hook is Succeeded.
    server.put(application('argocd', 'shop', 'Running', 'Succeeded'));
    const second = await runSweep(server);
    expect(second.outcome).toEqual({ migrate: 'removed' });
    expect(second.report.results[0]?.reasons).toEqual([
      'Argo CD PreSync hook',
      'Job Complete',
      expect.stringMatching(/^deleting for 6m4\ds, at least 5m0s$/),
      'Application argocd/shop does not wait for it',
    ]);
  });

  it('finds an Application in another namespace by the instance label, and judges by the grace period alone where it cannot read one', async () => {
    const server = await new FakeApiServer().start();
    servers.push(server);
    const labelled = tracked('migrate', 'unused:batch/Job:apps/migrate');
    (labelled.metadata as { annotations: Record<string, string> }).annotations = {
      'argocd.argoproj.io/hook': 'PreSync',
    };
    (labelled.metadata as { labels?: Record<string, string> }).labels = { 'app.kubernetes.io/instance': 'team-a_shop' };
    server.put(labelled);
    server.put(application('team-a', 'shop', 'Terminating', 'Terminating'));
    server.put(tracked('forbidden', 'locked:batch/Job:apps/forbidden'));
    server.fail({ method: 'GET', pathIncludes: '/applications/locked', status: 403 });
    server.put(tracked('untracked-app', 'gone:batch/Job:apps/untracked-app'));
    server.put(tracked('broken', 'flaky:batch/Job:apps/broken'));
    server.fail({ method: 'GET', pathIncludes: '/applications/flaky', status: 500, times: 10 });
    server.put(tracked('just-finished', 'shop:batch/Job:apps/just-finished', 20));

    const { report, outcome } = await runSweep(server, {
      retry: { maxAttempts: 2, backoff: { initialMs: 5, maxMs: 10 } },
    });
    expect(outcome).toEqual({
      migrate: 'skipped',
      forbidden: 'removed',
      'untracked-app': 'removed',
      broken: 'failed',
      'just-finished': 'skipped',
    });
    const reasons = Object.fromEntries(report.results.map((result) => [result.name, result.reasons.at(-1)]));
    expect(reasons).toEqual({
      migrate:
        'Application team-a/shop: its Terminating operation lists the hook as Terminating; Argo CD has not recorded its result',
      forbidden: 'Application argocd/locked unreadable (403)',
      'untracked-app': 'no Application found (argocd/gone)',
      broken: 'could not be judged: HTTP 500: injected failure 500',
      'just-finished': 'Job Complete and deleting for 20s, under 5m0s: Argo CD may not have recorded its result yet',
    });
    // A hook still in its grace period costs no Application read.
    expect(applicationReads(server).map(([path]) => path)).not.toContain(
      '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop',
    );
  });
});
