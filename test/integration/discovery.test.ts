// Discovery against a stand-in for kube-apiserver (test/support/fake-apiserver.ts: real paths, List bodies,
// chunked watch events, 410 Gone), through the real /mutate and /validate of buildApp with inject().
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { ArgoDiscovery, type DiscoverySettings } from '../../src/discovery/discovery.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { freePort } from '../support/serve-process.js';
import { FakeApiServer, kubeConfigOptions } from '../support/fake-apiserver.js';
import {
  argoHelmController,
  controller,
  CONTROLLER_SELECTOR,
  operatorController,
  otherArgoControllers,
  readyWithController,
  upstreamDeploymentController,
} from '../support/argocd-controllers.js';
import { DEFAULT_GUARD_CONTAINER, HOOK_FINALIZER, hookJob } from '../support/objects.js';
import { capturedLogger, eventually, type LogLine } from '../support/log-sink.js';
import { admissionReview, decodePatch } from '../support/reviews.js';
import { KubeConfig } from '@kubernetes/client-node';

// The default selector (discovery.labelSelector).
const SELECTOR = CONTROLLER_SELECTOR;
// Cluster-wide (the opt-in), so instances in any namespace are found; the default namespaces have tests of their own.
const SETTINGS: DiscoverySettings = {
  labelSelector: SELECTOR,
  namespaces: [],
  clusterWide: true,
  backoffInitialMs: 20,
  backoffMaxMs: 200,
  watchTimeoutSeconds: 60,
};
const controllerOf = (namespace: string) => `system:serviceaccount:${namespace}:argocd-application-controller`;

/**
 * An Argo CD PreSync hook Job as Argo CD 2.14.3 (and 3.x) creates it: with its hook finalizer. It sets its own
 * deadline, which hookguard keeps, so only the rules that depend on the Argo CD version change it.
 */
function argoHookJob(annotations: Record<string, string> = {}) {
  const job = hookJob(
    {
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
      ...annotations,
    },
    { ttlSecondsAfterFinished: 600, activeDeadlineSeconds: 1800 },
  );
  job.metadata!.finalizers = [HOOK_FINALIZER];
  return job;
}

/** The exact ops hookguard sends: the min-runtime guard, and (on 2.14.3 only) the finalizer removal. */
const REMOVE_FINALIZER = { op: 'remove', path: '/metadata/finalizers' };
const GUARD = { op: 'add', path: '/spec/template/spec/initContainers', value: [DEFAULT_GUARD_CONTAINER] };
/** With the guard, its 10 s wait added to the Job's own activeDeadlineSeconds of 1800. */
const GUARDED = [{ op: 'replace', path: '/spec/activeDeadlineSeconds', value: 1810 }, GUARD];

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function fakeServer(port = 0): Promise<FakeApiServer> {
  const server = await new FakeApiServer().start(port);
  cleanup.push(() => server.stop());
  return server;
}

function discover(
  kubeConfig: KubeConfig,
  settings: DiscoverySettings = SETTINGS,
  // The rules that do the same for every version (the watcher's label, the log fallback) off: these tests are about
  // what the discovered versions decide.
  config: Readonly<Config> = loadConfig({
    overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false' },
  }),
): { discovery: ArgoDiscovery; app: FastifyInstance; lines: LogLine[] } {
  const { logger, lines } = capturedLogger();
  const discovery = new ArgoDiscovery(kubeConfig, settings, logger);
  discovery.start();
  cleanup.push(() => discovery.stop());
  const app = buildApp(config, { logger, argocd: discovery });
  cleanup.push(() => app.close());
  return { discovery, app, lines };
}

async function review(
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
  expect(response.statusCode).toBe(200);
  return response.json<AdmissionReviewResponse>().response;
}

async function mutatePatch(app: FastifyInstance, object: Record<string, unknown>, username: string) {
  const response = await review(app, '/mutate', object, username);
  return response.patch === undefined ? [] : decodePatch(response);
}

const versionOf = (discovery: ArgoDiscovery, namespace: string) => discovery.instances().get(namespace)?.version;

describe('Argo CD discovery', () => {
  it('follows an upgrade 2.14.3 -> 2.14.4 through watch events, and the decisions flip with it', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    const { discovery, app, lines } = discover(server.kubeConfig());
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.3', 'version 2.14.3');

    // 2.14.3 ships the partial finalizer: hookguard removes it, and adds the fast-race guard.
    expect(await mutatePatch(app, argoHookJob(), controllerOf('argocd'))).toEqual([...GUARDED, REMOVE_FINALIZER]);

    server.modify('StatefulSet', 'argocd', 'argocd-application-controller', (workload) => {
      ((workload.spec as any).template.spec.containers[0] as { image: string }).image =
        'quay.io/argoproj/argocd:v2.14.4';
    });
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.4', 'version 2.14.4');
    // 2.14.4 has no hook finalizer again, so no fast race and no guard; its TTL race needs only the TTL floor, and
    // 600 s is above it.
    const withoutFinalizer = argoHookJob();
    delete withoutFinalizer.metadata!.finalizers;
    expect(await mutatePatch(app, withoutFinalizer, controllerOf('argocd'))).toEqual([]);

    // One list, then watches resuming from the resourceVersion the list returned, with bookmarks.
    const lists = server.requests.filter((request) => request.query.watch === undefined);
    const watches = server.requests.filter((request) => request.query.watch === 'true');
    expect(lists.map((request) => request.path).sort()).toEqual([
      '/apis/apps/v1/deployments',
      '/apis/apps/v1/statefulsets',
    ]);
    expect(lists.every((request) => request.query.labelSelector === SELECTOR)).toBe(true);
    expect(watches.find((request) => request.path === '/apis/apps/v1/statefulsets')?.query).toMatchObject({
      labelSelector: SELECTOR,
      resourceVersion: '101',
      allowWatchBookmarks: 'true',
      timeoutSeconds: '60',
    });
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'Argo CD instance version changed',
        namespace: 'argocd',
        version: '2.14.4',
        previousVersion: '2.14.3',
      }),
    );
    const audits = lines
      .filter((line) => line.audit !== undefined)
      .map((line) => line.audit as Record<string, unknown>);
    expect(audits.map((audit) => [audit.argocdVersion, audit.argocdVersionFrom])).toEqual([
      ['2.14.3', { by: 'service-account', instance: 'argocd' }],
      ['2.14.4', { by: 'service-account', instance: 'argocd' }],
    ]);
  });

  it('decides the same Job differently for two instances in two namespaces', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    server.put(controller('team-b', 'mirror.example.com:5000/argoproj/argocd:3.4.1', 'Deployment'));
    const { discovery, app } = discover(server.kubeConfig());
    await eventually(() => discovery.instances().size === 2, 'two instances');

    const optedOut = argoHookJob({ 'hookguard.io/skip': 'min-runtime' });
    const fromArgocd = await review(app, '/validate', optedOut, controllerOf('argocd'));
    const fromTeamB = await review(app, '/validate', optedOut, controllerOf('team-b'));
    expect(fromArgocd.allowed).toBe(false);
    expect(fromArgocd.status?.message).toMatch(/races with Argo CD 2\.14\.3 \(argocd-fast-hook-finalizer-race/);
    expect(fromTeamB).toMatchObject({ allowed: true });
    expect(await mutatePatch(app, argoHookJob(), controllerOf('team-b'))).toEqual([]);
    // A Job whose tracking id names team-b's apps, applied by a person: team-b's version.
    const tracked = argoHookJob({ 'argocd.argoproj.io/tracking-id': 'team-b_web:batch/Job:apps/migrate' });
    expect(await mutatePatch(app, tracked, 'kubernetes-admin')).toEqual([]);
    expect(await mutatePatch(app, argoHookJob(), controllerOf('argocd'))).toEqual([...GUARDED, REMOVE_FINALIZER]);
  });

  it('counts a discovered controller in any namespace as Argo CD, so its plain Helm hooks get its version', async () => {
    const server = await fakeServer();
    server.put(controller('team-c', 'quay.io/argoproj/argocd:v2.14.3'));
    const { discovery, app } = discover(server.kubeConfig());
    await eventually(() => versionOf(discovery, 'team-c') === '2.14.3', 'team-c at 2.14.3');
    const helmHook = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'migrate',
        namespace: 'apps',
        annotations: {
          'helm.sh/hook': 'pre-upgrade',
          'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
        },
      },
      spec: {
        ttlSecondsAfterFinished: 600,
        activeDeadlineSeconds: 1800,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'main', image: 'alpine:3.20', command: ['sh', '-c', 'echo migrated'] }],
          },
        },
      },
    };
    // Applied by team-c's controller: an Argo CD hook on 2.14.3, so the guard. Applied by a person: plain Helm.
    // (fast-json-patch's compare lists the ops in the object's key order: the template before the deadline here.)
    expect(await mutatePatch(app, helmHook, controllerOf('team-c'))).toEqual([GUARD, GUARDED[0]]);
    expect(await mutatePatch(app, helmHook, 'kubernetes-admin')).toEqual([]);
  });

  it('resumes a dropped watch from its resourceVersion, and re-lists after 410 Gone (event and HTTP status)', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    const { discovery, app, lines } = discover(server.kubeConfig());
    await eventually(() => discovery.status().enabled && server.openWatches === 2, 'two open watches');
    server.bookmark();

    // Dropped: the change made while it is down arrives when the watch resumes, without a new list.
    server.dropWatches();
    server.modify('StatefulSet', 'argocd', 'argocd-application-controller', (workload) => {
      ((workload.spec as any).template.spec.containers[0] as { image: string }).image =
        'quay.io/argoproj/argocd:v2.14.4';
    });
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.4', 'version 2.14.4 after the drop');
    const listsAfterDrop = server.requests.filter((request) => request.query.watch === undefined).length;
    expect(listsAfterDrop).toBe(2);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'lost the watch on the API server; using the last known Argo CD versions',
      }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ level: 30, msg: 'regained the watch on the API server' }));

    // 410 as an ERROR event on the open watch: the history is gone, so a new list is the only way back.
    await eventually(() => server.openWatches === 2, 'watches reopened');
    server.expireWatches();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.5'));
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.5', 'version 2.14.5 after the 410 event');
    expect(server.requests.filter((request) => request.query.watch === undefined).length).toBeGreaterThanOrEqual(3);

    // 410 as the HTTP status of the watch request itself, and a deleted instance seen through the re-list.
    await eventually(() => server.openWatches === 2, 'watches reopened again');
    server.goneAsHttpStatus = true;
    server.compact();
    server.dropWatches();
    server.remove('StatefulSet', 'argocd', 'argocd-application-controller');
    await eventually(() => discovery.instances().size === 0, 'the instance gone');
    expect(server.requests.some((request) => request.status === 410)).toBe(true);
    expect(
      lines.filter((line) => line.msg === 'watch resourceVersion expired (410 Gone): re-listing').length,
    ).toBeGreaterThanOrEqual(2);
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'Argo CD instance gone', namespace: 'argocd' }));
    // With no instance left the version is unknown: mutations, no denial.
    expect(
      (await review(app, '/validate', argoHookJob({ 'hookguard.io/skip': 'min-runtime' }), controllerOf('argocd')))
        .allowed,
    ).toBe(true);
  });

  it('serves with an unknown version while the API server is down at start, then syncs when it comes up', async () => {
    const port = await freePort();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions(kubeConfigOptions(`http://127.0.0.1:${port}`, 'hookguard'));
    const { discovery, app, lines } = discover(kubeConfig);
    await eventually(
      () =>
        lines.find((line) => line.msg === 'lost the watch on the API server; using the last known Argo CD versions'),
      'the lost-watch warning',
    );

    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({
      status: 'ready',
      discovery: {
        enabled: true,
        synced: false,
        watching: false,
        lastError: expect.stringContaining('ECONNREFUSED'),
        instances: [],
      },
    });
    // Unknown version: the guard is added (mutations), the finalizer kept, and nothing denied.
    expect(await mutatePatch(app, argoHookJob(), controllerOf('argocd'))).toEqual(GUARDED);
    expect(
      (await review(app, '/validate', argoHookJob({ 'hookguard.io/skip': 'min-runtime' }), controllerOf('argocd')))
        .allowed,
    ).toBe(true);

    const server = await fakeServer(port);
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.3', 'sync once the API server is up', 10_000);
    await eventually(
      () => discovery.status().enabled && (discovery.status() as { watching: boolean }).watching,
      'watching',
    );
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual(
      readyWithController('2.14.3', 'quay.io/argoproj/argocd:v2.14.3'),
    );
    expect(await mutatePatch(app, argoHookJob(), controllerOf('argocd'))).toEqual([...GUARDED, REMOVE_FINALIZER]);

    // Down again after the sync: the last known versions keep deciding, and /readyz stays 200.
    await server.stop();
    await eventually(
      () => discovery.status().enabled && !(discovery.status() as { watching: boolean }).watching,
      'watch lost',
    );
    const stillReady = await app.inject({ method: 'GET', url: '/readyz' });
    expect(stillReady.statusCode).toBe(200);
    expect(stillReady.json()).toMatchObject({
      discovery: { synced: true, watching: false, instances: [{ namespace: 'argocd', version: '2.14.3' }] },
    });
    expect(await mutatePatch(app, argoHookJob(), controllerOf('argocd'))).toEqual([...GUARDED, REMOVE_FINALIZER]);
  });

  it('resumes a watch the API server ended at its timeout, quietly and without a new list', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    const { discovery, lines } = discover(server.kubeConfig(), { ...SETTINGS, watchTimeoutSeconds: 1 });
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.3', 'version 2.14.3');
    const watchesOf = () =>
      server.requests.filter(
        (request) => request.query.watch === 'true' && request.path === '/apis/apps/v1/statefulsets',
      );
    await eventually(() => watchesOf().length >= 3, 'two watch renewals', 5000);
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.4'));
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.4', 'version 2.14.4 on a renewed watch');
    expect(watchesOf().every((request) => request.query.timeoutSeconds === '1')).toBe(true);
    expect(server.requests.filter((request) => request.query.watch === undefined)).toHaveLength(2);
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);
  });

  it('backs off, rather than spinning, when every watch ends at once without an event', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    server.watchFault = 'end-at-once';
    const { discovery, lines } = discover(server.kubeConfig());
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.3', 'the list still syncs');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const watches = server.requests.filter((request) => request.query.watch === 'true').length;
    // Two watch paths, backing off 10-20 ms, doubling to at most 200 ms: a few dozen tries in half a second, not thousands.
    expect(watches).toBeGreaterThanOrEqual(4);
    expect(watches).toBeLessThan(40);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'lost the watch on the API server; using the last known Argo CD versions',
        error: 'watch closed by the server early, before any event',
      }),
    );
  });

  it.each([
    ['stays open and silent past its timeout', 'never-end'],
    ['never even answers', 'no-answer'],
  ] as const)('restarts a watch that %s, and stops cleanly', async (_name, fault) => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    server.watchFault = fault;
    const { discovery, lines } = discover(server.kubeConfig(), {
      ...SETTINGS,
      watchTimeoutSeconds: 1,
      stallGraceMs: 200,
    });
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.3', 'the list still syncs');
    await eventually(
      () =>
        server.requests.filter(
          (request) => request.query.watch === 'true' && request.path === '/apis/apps/v1/statefulsets',
        ).length >= 2,
      'a second watch',
      5000,
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, error: 'watch silent for over 1200 ms: restarting it' }),
    );
    // Back to a healthy API server: the next watch delivers.
    server.watchFault = 'none';
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.4'));
    await eventually(() => versionOf(discovery, 'argocd') === '2.14.4', 'version 2.14.4', 8000);
    await discovery.stop();
  });

  it('watches only the configured namespaces, on their namespaced paths', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    server.put(controller('elsewhere', 'quay.io/argoproj/argocd:v2.13.0'));
    const { discovery } = discover(server.kubeConfig(), { ...SETTINGS, clusterWide: false, namespaces: ['argocd'] });
    await eventually(() => discovery.status().enabled && (discovery.status() as { synced: boolean }).synced, 'synced');
    expect([...discovery.instances().keys()]).toEqual(['argocd']);
    expect(new Set(server.requests.map((request) => request.path))).toEqual(
      new Set(['/apis/apps/v1/namespaces/argocd/deployments', '/apis/apps/v1/namespaces/argocd/statefulsets']),
    );
  });
});

describe('Argo CD discovery of OpenShift GitOps, through its published version table', () => {
  // argocd-rhel8 is tagged with the GitOps version; argocd.openshiftGitopsVersions (by default the rows of Red Hat's
  // compatibility matrix read in openshift/openshift-docs) says which Argo CD that release ships.
  it('reads the Argo CD version of OpenShift GitOps 1.9.0 from the table, and judges its hooks with it', async () => {
    const server = await fakeServer();
    const image = 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.9.0';
    server.put(operatorController('openshift-gitops', 'openshift-gitops', image));
    const gitopsVersions = loadConfig().argocd.openshiftGitopsVersions;
    const { discovery, app } = discover(server.kubeConfig(), { ...SETTINGS, gitopsVersions });
    await eventually(() => versionOf(discovery, 'openshift-gitops') === '2.7.2', 'OpenShift GitOps 1.9.0 at 2.7.2');
    expect(discovery.instances().get('openshift-gitops')?.source).toBe(
      `StatefulSet openshift-gitops-application-controller: image ${image}: OpenShift GitOps 1.9.0 ships Argo CD 2.7.2 (argocd.openshiftGitopsVersions)`,
    );
    // 2.7.2 has no hook finalizer: no guard, and a TTL of 0 is raised to the floor (argocd-hook-ttl-race).
    const job = argoHookJob();
    delete job.metadata!.finalizers;
    (job.spec as { ttlSecondsAfterFinished: number }).ttlSecondsAfterFinished = 0;
    expect(await mutatePatch(app, job, OPENSHIFT_CONTROLLER)).toEqual([
      { op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 },
    ]);
  });
});

describe('Argo CD discovery where Argo CD is installed (the default: discovery.namespaces, not cluster-wide)', () => {
  // A tenant who may create Deployments in their own namespace copies Argo CD's labels onto one running an old
  // Argo CD image. An Argo CD hook applied by an identity nothing attributes (here a CI deployer) is judged with
  // every discovered instance as a candidate: cluster-wide, the tenant's "2.14.3" joins the real 3.4.0 and changes
  // how another team's hook is judged (the union gets the guard); by default it is never seen.
  const DEPLOYER = 'system:serviceaccount:ci:deployer';
  const defaults = () => ({ ...loadConfig().discovery, backoffInitialMs: 20, backoffMaxMs: 200 });

  async function withTenantLookAlike(settings: DiscoverySettings) {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v3.4.0'));
    server.put(controller('tenant-a', 'quay.io/argoproj/argocd:v2.14.3', 'Deployment'));
    const { discovery, app } = discover(server.kubeConfig(), settings);
    await eventually(() => (discovery.status() as { synced?: boolean }).synced === true, 'synced');
    return { server, discovery, app };
  }

  it('ignores a Deployment with Argo CD labels in a tenant namespace', async () => {
    const { server, discovery, app } = await withTenantLookAlike(defaults());
    expect([...discovery.instances().keys()]).toEqual(['argocd']);
    expect(new Set(server.requests.map((request) => request.path))).toEqual(
      new Set([
        '/apis/apps/v1/namespaces/argocd/deployments',
        '/apis/apps/v1/namespaces/argocd/statefulsets',
        '/apis/apps/v1/namespaces/openshift-gitops/deployments',
        '/apis/apps/v1/namespaces/openshift-gitops/statefulsets',
      ]),
    );
    // Judged with the one real Argo CD, 3.4.0: its races are fixed, so nothing to add.
    expect(await mutatePatch(app, argoHookJob(), DEPLOYER)).toEqual([]);
  });

  it('sees it only when discovery.clusterWide is opted into, and the union then guards the hook', async () => {
    const { discovery, app } = await withTenantLookAlike({ ...defaults(), clusterWide: true });
    expect([...discovery.instances().keys()]).toEqual(['argocd', 'tenant-a']);
    expect(await mutatePatch(app, argoHookJob(), DEPLOYER)).toEqual(GUARDED);
  });
});

const configDirectory = mkdtempSync(join(tmpdir(), 'hookguard-discovery-'));
afterAll(() => rmSync(configDirectory, { recursive: true, force: true }));
let configFiles = 0;
function configFrom(yaml: string): Readonly<Config> {
  const file = join(configDirectory, `config-${++configFiles}.yaml`);
  writeFileSync(file, yaml);
  return loadConfig({
    file,
    overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false' },
  });
}

const synced = (discovery: ArgoDiscovery) => {
  const status = discovery.status();
  return status.enabled && status.synced;
};

const auditLines = (lines: LogLine[]) =>
  lines.filter((line) => line.audit !== undefined).map((line) => line.audit as Record<string, unknown>);

const OPENSHIFT_IMAGE = 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0';
const OPENSHIFT_CONTROLLER = 'system:serviceaccount:openshift-gitops:openshift-gitops-argocd-application-controller';
const ARGOCD_MANAGER = 'system:serviceaccount:kube-system:argocd-manager';

describe('Argo CD discovery: every install layout', () => {
  it('finds the upstream, argo-helm, operator, OpenShift GitOps and Deployment controllers, and nothing else of Argo', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    server.put(argoHelmController('gitops', 'platform', 'v3.4.4'));
    server.put(operatorController('example-argocd', 'team-x'));
    server.put(operatorController('openshift-gitops', 'openshift-gitops', OPENSHIFT_IMAGE));
    for (const workload of upstreamDeploymentController('team-d', 'quay.io/argoproj/argocd:v3.1.0'))
      server.put(workload);
    for (const workload of [...otherArgoControllers('argo'), ...otherArgoControllers('argocd')]) server.put(workload);
    const { discovery, app, lines } = discover(server.kubeConfig(), {
      ...SETTINGS,
      labelSelector: loadConfig().discovery.labelSelector,
    });
    await eventually(() => synced(discovery), 'synced');

    expect(
      [...discovery.instances().values()].map(({ namespace, version, controllerUsernames }) => [
        namespace,
        version,
        controllerUsernames,
      ]),
    ).toEqual([
      ['argocd', '2.14.3', [controllerOf('argocd')]],
      ['openshift-gitops', undefined, [OPENSHIFT_CONTROLLER]],
      ['platform', '3.4.4', ['system:serviceaccount:platform:argocd-application-controller']],
      ['team-d', '3.1.0', [controllerOf('team-d')]],
      ['team-x', undefined, ['system:serviceaccount:team-x:example-argocd-argocd-application-controller']],
    ]);
    expect(server.requests.every((request) => request.query.labelSelector === CONTROLLER_SELECTOR)).toBe(true);

    // /readyz and the log say why OpenShift GitOps' version is unknown, and how to give it.
    const ready = (await app.inject({ method: 'GET', url: '/readyz' })).json<{ discovery: { instances: unknown[] } }>();
    expect(ready.discovery.instances).toContainEqual({
      namespace: 'openshift-gitops',
      version: null,
      source: `StatefulSet openshift-gitops-application-controller: unknown: OpenShift GitOps 1.16.0 (image ${OPENSHIFT_IMAGE}) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give`,
    });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'Argo CD instance version unknown: hooks it applies get mutations only, never denials',
        namespace: 'openshift-gitops',
        fix: 'give its version in the config: argocd.instanceVersions: {openshift-gitops: X.Y.Z}',
      }),
    );

    // Each controller's service account is Argo CD's: its hook judged with its own instance's version.
    expect(await mutatePatch(app, argoHookJob(), controllerOf('argocd'))).toEqual([...GUARDED, REMOVE_FINALIZER]);
    expect(await mutatePatch(app, argoHookJob(), OPENSHIFT_CONTROLLER)).toEqual(GUARDED);
    expect(
      await mutatePatch(
        app,
        argoHookJob(),
        'system:serviceaccount:team-x:example-argocd-argocd-application-controller',
      ),
    ).toEqual(GUARDED);
    expect(await mutatePatch(app, argoHookJob(), controllerOf('team-d'))).toEqual(GUARDED);
    expect(
      await mutatePatch(app, argoHookJob(), 'system:serviceaccount:platform:argocd-application-controller'),
    ).toEqual([]);
    expect(auditLines(lines).map((audit) => audit.argocdVersionFrom)).toEqual([
      { by: 'service-account', instance: 'argocd' },
      { by: 'service-account', instance: 'openshift-gitops' },
      { by: 'service-account', instance: 'team-x' },
      { by: 'service-account', instance: 'team-d' },
      { by: 'service-account', instance: 'platform' },
    ]);
  });

  it('judges OpenShift GitOps with the version argocd.instanceVersions gives it, denials included', async () => {
    const server = await fakeServer();
    server.put(operatorController('openshift-gitops', 'openshift-gitops', OPENSHIFT_IMAGE));
    const optedOut = argoHookJob({ 'hookguard.io/skip': 'min-runtime' });

    const unpinned = discover(server.kubeConfig());
    await eventually(() => synced(unpinned.discovery), 'synced');
    expect((await review(unpinned.app, '/validate', optedOut, OPENSHIFT_CONTROLLER)).allowed).toBe(true);

    const pinned = discover(server.kubeConfig(), { ...SETTINGS, instanceVersions: { 'openshift-gitops': '3.1.0' } });
    await eventually(() => synced(pinned.discovery), 'synced');
    expect(pinned.discovery.status()).toMatchObject({
      instances: [
        {
          namespace: 'openshift-gitops',
          version: '3.1.0',
          source: expect.stringMatching(
            /^argocd\.instanceVersions: 3\.1\.0 \(discovered: StatefulSet openshift-gitops-application-controller: unknown: /,
          ),
        },
      ],
    });
    const denied = await review(pinned.app, '/validate', optedOut, OPENSHIFT_CONTROLLER);
    expect(denied.allowed).toBe(false);
    expect(denied.status?.message).toMatch(/races with Argo CD 3\.1\.0 \(argocd-fast-hook-finalizer-race/);
  });

  it('judges a remote Argo CD by the identity and version the config gives it, never by the local instance', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));

    // By default argocd-manager is Argo CD's, of unknown version: the guard, and the finalizer kept (2.14.3 would
    // remove it).
    const byDefault = discover(server.kubeConfig());
    await eventually(() => versionOf(byDefault.discovery, 'argocd') === '2.14.3', 'version 2.14.3');
    expect(await mutatePatch(byDefault.app, argoHookJob(), ARGOCD_MANAGER)).toEqual(GUARDED);

    const configured = discover(
      server.kubeConfig(),
      SETTINGS,
      configFrom(`argocd:\n  remote:\n    ${ARGOCD_MANAGER}: 3.4.0\n`),
    );
    await eventually(() => versionOf(configured.discovery, 'argocd') === '2.14.3', 'version 2.14.3');
    // Its Helm hooks are Argo CD's too: no tracking, no Argo CD annotation, only the identity.
    const helmHook = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': 'before-hook-creation' });
    expect(await mutatePatch(configured.app, argoHookJob(), ARGOCD_MANAGER)).toEqual([]);
    // Nothing for 3.4.0's races: only what every such hook Job gets (no delete-on-success policy: a TTL).
    expect(await mutatePatch(configured.app, helmHook, ARGOCD_MANAGER)).toEqual([
      { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
    ]);
    expect(await mutatePatch(configured.app, argoHookJob(), controllerOf('argocd'))).toEqual([
      ...GUARDED,
      REMOVE_FINALIZER,
    ]);
    expect(auditLines(configured.lines).map((audit) => [audit.argocdVersion, audit.argocdVersionFrom])).toEqual([
      ['3.4.0', { by: 'remote', remote: ARGOCD_MANAGER }],
      ['3.4.0', { by: 'remote', remote: ARGOCD_MANAGER }],
      ['2.14.3', { by: 'service-account', instance: 'argocd' }],
    ]);
  });

  it('judges a hook no instance can be told to have applied with the union of the candidates', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    server.put(argoHelmController('argocd', 'team-b', 'v3.1.0'));
    const { discovery, app, lines } = discover(server.kubeConfig());
    await eventually(() => discovery.instances().size === 2, 'two instances');

    // Applied by a person: 2.14.3 or 3.1.0. The guard (both race with a fast Job), the finalizer kept (3.1.0 needs
    // it), and no denial (that needs one known version).
    expect(await mutatePatch(app, argoHookJob(), 'kubernetes-admin')).toEqual(GUARDED);
    const optedOut = argoHookJob({ 'hookguard.io/skip': 'min-runtime' });
    expect((await review(app, '/validate', optedOut, 'kubernetes-admin')).allowed).toBe(true);
    const candidates = [
      { instance: 'argocd', version: '2.14.3' },
      { instance: 'team-b', version: '3.1.0' },
    ];
    expect(auditLines(lines).map((audit) => [audit.argocdVersion, audit.argocdVersionFrom])).toEqual([
      [null, { by: 'union', candidates }],
      [null, { by: 'union', candidates }],
    ]);
  });

  it('narrows the union to the Argo CD that adds the hook finalizer a CREATE carries', async () => {
    const server = await fakeServer();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.8'));
    server.put(argoHelmController('argocd', 'team-b', 'v3.1.0'));
    const { discovery, app, lines } = discover(server.kubeConfig());
    await eventually(() => discovery.instances().size === 2, 'two instances');

    // 2.14.8 never adds the finalizer: the hook that carries it came from 3.1.0, and is judged (and denied) as such.
    const denied = await review(
      app,
      '/validate',
      argoHookJob({ 'hookguard.io/skip': 'min-runtime' }),
      'kubernetes-admin',
    );
    expect(denied.allowed).toBe(false);
    expect(denied.status?.message).toMatch(/races with Argo CD 3\.1\.0/);
    expect(auditLines(lines).at(-1)).toMatchObject({
      argocdVersion: '3.1.0',
      argocdVersionFrom: { by: 'hook-finalizer', instance: 'team-b' },
    });
  });
});
