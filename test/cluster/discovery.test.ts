// Argo CD discovery against the real API server: Argo CD's application controllers as each install lays them out
// (test/support/argocd-controllers.ts) are real StatefulSets and Deployments in namespaces of this file's own
// (support/discovery.ts: nothing runs them), read by hookguard's discovery as the chart's identity
// (support/identity.ts) through the fault proxy (support/fault-proxy.ts), which counts the calls and makes what the
// real API server does not do on demand: a watch cut, 410 Expired at will, a watch that ends at once or never
// answers, an API server that is away. Discovery looks only where a case says (discovery.namespaces), or cluster-wide
// with a selector narrowed to a label of the case's own, so what other tests leave in the cluster is never seen.
// Decisions go through the real /mutate and /validate of buildApp with inject().
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/keys.js';
import { DEFAULTS } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { argoCdKnown, helmControllerKnown } from '../../src/controllers/selftest/conditions.js';
import type { KubeObject } from '../../src/core/types.js';
import { ApiDiscovery } from '../../src/discovery/api-groups.js';
import type { DiscoverySettings } from '../../src/discovery/discovery.js';
import { HelmControllerDiscovery } from '../../src/discovery/helm-controllers.js';
import { NamespaceWatch, RULE_NAMESPACE_KEYS } from '../../src/discovery/namespaces.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { GUARD_CONTAINER_NAME } from '../../src/rules/min-runtime.js';
import {
  argoHelmController,
  controller,
  CONTROLLER_SELECTOR,
  OPERATOR_DEFAULT_IMAGE,
  operatorController,
  otherArgoControllers,
  upstreamDeploymentController,
} from '../support/argocd-controllers.js';
import { capturedLogger, eventually } from '../support/log-sink.js';
import { ARGOCD_CONTROLLER, DEFAULT_GUARD_CONTAINER, HOOK_FINALIZER, hookJob } from '../support/objects.js';
import { admissionReview, decodePatch } from '../support/reviews.js';
import { ServeProcess } from '../support/serve-process.js';
import { deleteNamespace, describeCluster, kubectl, newNamespace } from './support/cluster.js';
import {
  auditLines,
  controllerOf,
  discover,
  discoveryWithController,
  mutatePatch,
  place,
  review,
  setControllerImage,
  synced,
  versionOf,
  watching,
  type Discovering,
} from './support/discovery.js';
import { FaultProxy } from './support/fault-proxy.js';
import { chartIdentity, type ChartIdentity } from './support/identity.js';

const SETTINGS: DiscoverySettings = {
  labelSelector: CONTROLLER_SELECTOR,
  namespaces: [],
  clusterWide: false,
  backoffInitialMs: 20,
  backoffMaxMs: 200,
  watchTimeoutSeconds: 60,
};

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
const LOST = 'lost the watch on the API server; using the last known Argo CD versions';
const IMAGE = (tag: string) => `quay.io/argoproj/argocd:${tag}`;
const OPENSHIFT_IMAGE = 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.16.0';
const ARGOCD_MANAGER = 'system:serviceaccount:kube-system:argocd-manager';
const DEPLOYER = 'system:serviceaccount:ci:deployer';
/** The denial of argoHookJob() opted out of the guard, for a version with the fast-finalizer race. */
const racesWith = (version: string) => ({
  code: 403,
  reason: 'Forbidden',
  message: `hookguard denied: Job apps/migrate races with Argo CD ${version} (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.`,
});

let identity: ChartIdentity;
const namespaces: string[] = [];
const running: Array<() => Promise<void>> = [];

const FIXTURES = [
  'argocd2143',
  'teamB',
  'elsewhere',
  'gitops190',
  'gitops1160',
  'platform',
  'teamX',
  'teamD',
  'helm310',
  'argocd2148',
  'argocd340',
  'tenant',
] as const;
/** Namespaces holding controllers no case changes, by what they hold, shared by the cases that only read them. */
const fixture = {} as Record<(typeof FIXTURES)[number], string>;
/** A label only this file's objects of the cluster-wide cases carry, and the selector narrowed to it. */
const RUN_LABEL = { 'hookguard.test/discovery-run': randomBytes(4).toString('hex') };
const RUN_SELECTOR = `${CONTROLLER_SELECTOR},hookguard.test/discovery-run=${RUN_LABEL['hookguard.test/discovery-run']}`;

async function namespace(prefix: string): Promise<string> {
  const name = await newNamespace(prefix);
  namespaces.push(name);
  return name;
}

/** A namespace holding these workloads (each built for that namespace). */
async function holding(
  prefix: string,
  workloads: (ns: string) => KubeObject[],
  labels: Record<string, string> = {},
): Promise<string> {
  const ns = await namespace(prefix);
  await place(workloads(ns), labels);
  return ns;
}

/** A proxy of the case's own, in front of the real API server. */
async function proxy(): Promise<FaultProxy> {
  const started = await FaultProxy.start();
  running.push(() => started.stop());
  return started;
}

function discovering(
  through: FaultProxy,
  settings: Partial<DiscoverySettings>,
  config?: Readonly<Config>,
): Discovering {
  const started = discover(through, identity.token, { ...SETTINGS, ...settings }, config);
  running.push(() => started.stop());
  return started;
}

const lists = (through: FaultProxy) => through.requests.filter((request) => !request.watch);
const watches = (through: FaultProxy, path?: string) =>
  through.requests.filter((request) => request.watch && (path === undefined || request.path === path));

const configDirectory = mkdtempSync(join(tmpdir(), 'hookguard-discovery-'));
let configFiles = 0;
function configFrom(yaml: string): Readonly<Config> {
  const file = join(configDirectory, `config-${++configFiles}.yaml`);
  writeFileSync(file, yaml);
  return loadConfig({
    file,
    overrides: { 'rules.hookLabel.enabled': 'false', 'rules.terminationMessagePolicy.enabled': 'false' },
  });
}

describeCluster('Argo CD discovery of real controllers', () => {
  beforeAll(async () => {
    const identityNamespace = await namespace('discovery');
    const made = await Promise.all([
      chartIdentity(identityNamespace),
      holding('argocd-2143', (ns) => [controller(ns, IMAGE('v2.14.3'), 'StatefulSet', 0), ...otherArgoControllers(ns)]),
      holding('team-b', (ns) => [controller(ns, 'mirror.example.com:5000/argoproj/argocd:3.4.1', 'Deployment', 0)]),
      holding('elsewhere', (ns) => [controller(ns, IMAGE('v2.13.0'), 'StatefulSet', 0)]),
      holding('gitops-190', (ns) => [
        operatorController('openshift-gitops', ns, 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.9.0'),
      ]),
      holding('gitops-1160', (ns) => [operatorController('openshift-gitops', ns, OPENSHIFT_IMAGE)]),
      holding('platform', (ns) => [argoHelmController('gitops', ns, 'v3.4.4')]),
      holding('team-x', (ns) => [operatorController('example-argocd', ns)]),
      holding('team-d', (ns) => upstreamDeploymentController(ns, IMAGE('v3.1.0'))),
      holding('helm-310', (ns) => [argoHelmController('argocd', ns, 'v3.1.0')]),
      holding('argocd-2148', (ns) => [controller(ns, IMAGE('v2.14.8'), 'StatefulSet', 0)]),
      holding('argocd-340', (ns) => [controller(ns, IMAGE('v3.4.0'), 'StatefulSet', 0)], RUN_LABEL),
      holding('tenant', (ns) => [controller(ns, IMAGE('v2.14.3'), 'Deployment', 0)], RUN_LABEL),
    ]);
    identity = made[0];
    FIXTURES.forEach((name, index) => (fixture[name] = made[index + 1] as string));
  });

  afterAll(async () => {
    await Promise.all(running.map((stop) => stop()));
    await identity?.release();
    await Promise.all(namespaces.map(deleteNamespace));
    rmSync(configDirectory, { recursive: true, force: true });
  });

  describe.concurrent('following the controllers', () => {
    it('follows an upgrade 2.14.3 -> 2.14.4 through watch events, and the decisions flip with it', async () => {
      const ns = await holding('upgrade', (name) => [controller(name, IMAGE('v2.14.3'), 'StatefulSet', 0)]);
      const through = await proxy();
      const { discovery, app, lines } = discovering(through, { namespaces: [ns] });
      await eventually(() => versionOf(discovery, ns) === '2.14.3', 'version 2.14.3', 15_000);

      // 2.14.3 ships the partial finalizer: hookguard removes it, and adds the fast-race guard.
      expect(await mutatePatch(app, argoHookJob(), controllerOf(ns))).toEqual([...GUARDED, REMOVE_FINALIZER]);

      await eventually(() => watching(discovery), 'both watches open', 15_000);
      await setControllerImage(ns, IMAGE('v2.14.4'));
      await eventually(() => versionOf(discovery, ns) === '2.14.4', 'version 2.14.4', 15_000);
      // 2.14.4 has no hook finalizer again, so no fast race and no guard; its TTL race needs only the TTL floor, and
      // 600 s is above it.
      const withoutFinalizer = argoHookJob();
      delete withoutFinalizer.metadata!.finalizers;
      expect(await mutatePatch(app, withoutFinalizer, controllerOf(ns))).toEqual([]);

      // One list of each, then watches resuming from the resourceVersion the list returned, with bookmarks.
      expect(lists(through).map((request) => `${request.method} ${request.path} ${request.status}`)).toEqual(
        expect.arrayContaining([
          `GET /apis/apps/v1/namespaces/${ns}/deployments 200`,
          `GET /apis/apps/v1/namespaces/${ns}/statefulsets 200`,
        ]),
      );
      expect(lists(through)).toHaveLength(2);
      expect(lists(through).every((request) => request.query.labelSelector === CONTROLLER_SELECTOR)).toBe(true);
      const watch = watches(through, `/apis/apps/v1/namespaces/${ns}/statefulsets`);
      expect(watch).toHaveLength(1);
      expect(watch[0]?.query).toEqual({
        watch: 'true',
        labelSelector: CONTROLLER_SELECTOR,
        resourceVersion: expect.stringMatching(/^[1-9]\d*$/),
        allowWatchBookmarks: 'true',
        timeoutSeconds: '60',
      });
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 30,
          msg: 'Argo CD instance version changed',
          namespace: ns,
          version: '2.14.4',
          previousVersion: '2.14.3',
          source: `StatefulSet argocd-application-controller: image ${IMAGE('v2.14.4')}`,
        }),
      );
      expect(auditLines(lines).map((audit) => [audit.argocdVersion, audit.argocdVersionFrom])).toEqual([
        ['2.14.3', { by: 'service-account', instance: ns }],
        ['2.14.4', { by: 'service-account', instance: ns }],
      ]);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
        status: 'ready',
        discovery: discoveryWithController(ns, '2.14.4', IMAGE('v2.14.4')),
      });
    });

    it('resumes a dropped watch from its resourceVersion, and re-lists after 410 Expired (event and HTTP status)', async () => {
      const ns = await holding('watch-faults', (name) => [controller(name, IMAGE('v2.14.3'), 'StatefulSet', 0)]);
      const through = await proxy();
      const { discovery, app, lines } = discovering(through, { namespaces: [ns] });
      await eventually(() => watching(discovery) && through.openWatches === 2, 'two open watches', 15_000);

      // Dropped: the change made while it is down arrives when the watch resumes, without a new list.
      through.dropWatches();
      await setControllerImage(ns, IMAGE('v2.14.4'));
      await eventually(() => versionOf(discovery, ns) === '2.14.4', 'version 2.14.4 after the drop', 15_000);
      expect(lists(through)).toHaveLength(2);
      expect(lines).toContainEqual(expect.objectContaining({ level: 40, msg: LOST }));
      expect(lines).toContainEqual(expect.objectContaining({ level: 30, msg: 'regained the watch on the API server' }));
      const resumed = watches(through, `/apis/apps/v1/namespaces/${ns}/statefulsets`);
      expect(resumed.length).toBeGreaterThanOrEqual(2);
      // The second watch starts where the first one had got to, not from a new list.
      expect(Number(resumed[1]?.query.resourceVersion)).toBeGreaterThanOrEqual(
        Number(resumed[0]?.query.resourceVersion),
      );

      // 410 as an ERROR event on the open watch: the history is gone, so a new list is the only way back.
      await eventually(() => through.openWatches === 2, 'watches reopened', 15_000);
      through.expireWatches();
      await setControllerImage(ns, IMAGE('v2.14.5'));
      await eventually(() => versionOf(discovery, ns) === '2.14.5', 'version 2.14.5 after the 410 event', 15_000);
      expect(lists(through).length).toBeGreaterThanOrEqual(3);

      // 410 as the HTTP status of the watch request itself, and a deleted instance seen through the re-list.
      await eventually(() => through.openWatches === 2, 'watches reopened again', 15_000);
      through.fail({ watch: true, status: 410, times: 2 });
      through.dropWatches();
      await kubectl(['delete', 'statefulset', 'argocd-application-controller', '-n', ns]);
      await eventually(() => discovery.instances().size === 0, 'the instance gone', 15_000);
      expect(through.requests.filter((request) => request.watch && request.status === 410).length).toBe(2);
      expect(
        lines.filter((line) => line.msg === 'watch resourceVersion expired (410 Gone): re-listing').length,
      ).toBeGreaterThanOrEqual(2);
      expect(lines).toContainEqual(expect.objectContaining({ msg: 'Argo CD instance gone', namespace: ns }));
      // With no instance left the version is unknown: mutations, no denial.
      expect(
        (await review(app, '/validate', argoHookJob({ 'hookguard.io/skip': 'min-runtime' }), controllerOf(ns))).allowed,
      ).toBe(true);
    });

    it('serves with an unknown version while the API server is down at start, then syncs when it comes up', async () => {
      const ns = await holding('down-at-start', (name) => [controller(name, IMAGE('v2.14.3'), 'StatefulSet', 0)]);
      const through = await proxy();
      await through.stop();
      const { discovery, app, lines } = discovering(through, { namespaces: [ns] });
      await eventually(() => lines.find((line) => line.msg === LOST), 'the lost-watch warning', 15_000);
      // /readyz names the first target's error: the Deployments' list, as client-node's fetch words a refusal.
      const refused = `request to ${through.url}/apis/apps/v1/namespaces/${ns}/deployments?labelSelector=${encodeURIComponent(CONTROLLER_SELECTOR)} failed, reason: connect ECONNREFUSED 127.0.0.1:${through.port}`;
      await eventually(() => JSON.stringify(discovery.status()).includes('/deployments?'), 'the lists refused', 15_000);

      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toEqual({
        status: 'ready',
        discovery: {
          enabled: true,
          synced: false,
          watching: false,
          lastError: refused,
          instances: [],
        },
      });
      expect(argoCdKnown(null, discovery.status())).toEqual({
        type: 'ArgoCDKnown',
        status: 'False',
        reason: 'NotSynced',
        message: `Argo CD discovery has not listed the controllers yet: ${refused}`,
      });
      // Unknown version: the guard is added (mutations), the finalizer kept, and nothing denied.
      expect(await mutatePatch(app, argoHookJob(), controllerOf(ns))).toEqual(GUARDED);
      expect(
        (await review(app, '/validate', argoHookJob({ 'hookguard.io/skip': 'min-runtime' }), controllerOf(ns))).allowed,
      ).toBe(true);

      await through.restart();
      await eventually(() => versionOf(discovery, ns) === '2.14.3', 'sync once the API server is up', 15_000);
      await eventually(() => watching(discovery), 'watching', 15_000);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
        status: 'ready',
        discovery: discoveryWithController(ns, '2.14.3', IMAGE('v2.14.3')),
      });
      expect(argoCdKnown(null, discovery.status())).toEqual({
        type: 'ArgoCDKnown',
        status: 'True',
        reason: 'Discovered',
        message: `Argo CD ${ns}: 2.14.3`,
      });
      expect(await mutatePatch(app, argoHookJob(), controllerOf(ns))).toEqual([...GUARDED, REMOVE_FINALIZER]);

      // Down again after the sync: the last known versions keep deciding, and /readyz stays 200.
      await through.stop();
      await eventually(() => !watching(discovery), 'watch lost', 15_000);
      const stillReady = await app.inject({ method: 'GET', url: '/readyz' });
      expect(stillReady.statusCode).toBe(200);
      expect(stillReady.json()).toMatchObject({
        discovery: { synced: true, watching: false, instances: [{ namespace: ns, version: '2.14.3' }] },
      });
      expect(await mutatePatch(app, argoHookJob(), controllerOf(ns))).toEqual([...GUARDED, REMOVE_FINALIZER]);
    });

    it('resumes a watch the API server ended at its timeout, quietly and without a new list', async () => {
      const ns = await holding('watch-timeout', (name) => [controller(name, IMAGE('v2.14.3'), 'StatefulSet', 0)]);
      const through = await proxy();
      const { discovery, lines } = discovering(through, { namespaces: [ns], watchTimeoutSeconds: 1 });
      await eventually(() => versionOf(discovery, ns) === '2.14.3', 'version 2.14.3', 15_000);
      const path = `/apis/apps/v1/namespaces/${ns}/statefulsets`;
      // The real API server ends each watch after the timeoutSeconds it was asked for.
      await eventually(() => watches(through, path).length >= 3, 'two watch renewals', 15_000);
      await setControllerImage(ns, IMAGE('v2.14.4'));
      await eventually(() => versionOf(discovery, ns) === '2.14.4', 'version 2.14.4 on a renewed watch', 15_000);
      expect(watches(through).every((request) => request.query.timeoutSeconds === '1')).toBe(true);
      expect(lists(through)).toHaveLength(2);
      expect(lines.filter((line) => line.level >= 40)).toEqual([]);
    });

    it('backs off, rather than spinning, when every watch ends at once without an event', async () => {
      const through = await proxy();
      through.watchFault = 'end-at-once';
      const { discovery, lines } = discovering(through, { namespaces: [fixture.argocd2143] });
      await eventually(() => versionOf(discovery, fixture.argocd2143) === '2.14.3', 'the list still syncs', 15_000);
      const before = watches(through).length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      const during = watches(through).length - before;
      // Two watch paths, backing off 10-20 ms, doubling to at most 200 ms: a few in half a second, not thousands.
      expect(during).toBeGreaterThanOrEqual(2);
      expect(during).toBeLessThan(40);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: LOST,
          error: 'watch closed by the server early, before any event',
        }),
      );
    });

    it.each([
      ['stays open and silent past its timeout', 'never-end'],
      ['never even answers', 'no-answer'],
    ] as const)('restarts a watch that %s, and stops cleanly', async (_name, fault) => {
      const ns = await holding(`watch-${fault}`, (name) => [controller(name, IMAGE('v2.14.3'), 'StatefulSet', 0)]);
      const through = await proxy();
      through.watchFault = fault;
      const { discovery, lines } = discovering(through, {
        namespaces: [ns],
        watchTimeoutSeconds: 1,
        stallGraceMs: 200,
      });
      const path = `/apis/apps/v1/namespaces/${ns}/statefulsets`;
      await eventually(() => versionOf(discovery, ns) === '2.14.3', 'the list still syncs', 15_000);
      await eventually(() => watches(through, path).length >= 2, 'a second watch', 15_000);
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 40, msg: LOST, error: 'watch silent for over 1200 ms: restarting it' }),
      );
      // Back to a healthy API server: the next watch delivers.
      through.watchFault = 'none';
      await setControllerImage(ns, IMAGE('v2.14.4'));
      await eventually(() => versionOf(discovery, ns) === '2.14.4', 'version 2.14.4', 15_000);
      await discovery.stop();
    });
  });

  describe.concurrent('where and whom', () => {
    it('decides the same Job differently for two instances in two namespaces', async () => {
      const [argocd, teamB] = [fixture.argocd2143, fixture.teamB];
      const { discovery, app } = discovering(await proxy(), { namespaces: [argocd, teamB] });
      await eventually(() => synced(discovery) && discovery.instances().size === 2, 'two instances', 15_000);

      const optedOut = argoHookJob({ 'hookguard.io/skip': 'min-runtime' });
      const fromArgocd = await review(app, '/validate', optedOut, controllerOf(argocd));
      const fromTeamB = await review(app, '/validate', optedOut, controllerOf(teamB));
      expect(fromArgocd.allowed).toBe(false);
      expect(fromArgocd.status).toEqual(racesWith('2.14.3'));
      expect(fromTeamB).toMatchObject({ allowed: true });
      expect(await mutatePatch(app, argoHookJob(), controllerOf(teamB))).toEqual([]);
      // A Job whose tracking id names team-b's apps, applied by a person: team-b's version.
      const tracked = argoHookJob({ 'argocd.argoproj.io/tracking-id': `${teamB}_web:batch/Job:apps/migrate` });
      expect(await mutatePatch(app, tracked, 'kubernetes-admin')).toEqual([]);
      expect(await mutatePatch(app, argoHookJob(), controllerOf(argocd))).toEqual([...GUARDED, REMOVE_FINALIZER]);
    });

    it('counts a discovered controller in any namespace as Argo CD, so its plain Helm hooks get its version', async () => {
      const ns = fixture.argocd2143;
      const { discovery, app } = discovering(await proxy(), { namespaces: [ns] });
      await eventually(() => versionOf(discovery, ns) === '2.14.3', 'at 2.14.3', 15_000);
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
      // Applied by its controller: an Argo CD hook on 2.14.3, so the guard. Applied by a person: plain Helm.
      // (fast-json-patch's compare lists the ops in the object's key order: the template before the deadline here.)
      expect(await mutatePatch(app, helmHook, controllerOf(ns))).toEqual([GUARD, GUARDED[0]]);
      expect(await mutatePatch(app, helmHook, 'kubernetes-admin')).toEqual([]);
    });

    it('watches only the configured namespaces, on their namespaced paths', async () => {
      const through = await proxy();
      const { discovery } = discovering(through, { namespaces: [fixture.argocd2143] });
      await eventually(() => synced(discovery), 'synced', 15_000);
      expect([...discovery.instances().keys()]).toEqual([fixture.argocd2143]);
      expect(new Set(through.requests.map((request) => request.path))).toEqual(
        new Set([
          `/apis/apps/v1/namespaces/${fixture.argocd2143}/deployments`,
          `/apis/apps/v1/namespaces/${fixture.argocd2143}/statefulsets`,
        ]),
      );
      // The Argo CD 2.13.0 of another namespace is not an instance.
      expect(discovery.instances().has(fixture.elsewhere)).toBe(false);
    });

    it('ignores a Deployment with Argo CD labels in a namespace it is not told to look in (the default)', async () => {
      // A tenant who may create Deployments in their own namespace copies Argo CD's labels onto one running an old
      // Argo CD image. An Argo CD hook applied by an identity nothing attributes (here a CI deployer) is judged with
      // every discovered instance as a candidate: cluster-wide, the tenant's "2.14.3" joins the real 3.4.0 and
      // changes how another team's hook is judged (the union gets the guard); by default it is never seen.
      const through = await proxy();
      const { discovery, app } = discovering(through, { namespaces: [fixture.argocd340] });
      await eventually(() => synced(discovery), 'synced', 15_000);
      expect([...discovery.instances().keys()]).toEqual([fixture.argocd340]);
      // Judged with the one real Argo CD, 3.4.0: its races are fixed, so nothing to add.
      expect(await mutatePatch(app, argoHookJob(), DEPLOYER)).toEqual([]);
    });

    it('sees it only when discovery.clusterWide is opted into, and the union then guards the hook', async () => {
      const through = await proxy();
      const { discovery, app } = discovering(through, { clusterWide: true, labelSelector: RUN_SELECTOR });
      await eventually(() => synced(discovery), 'synced', 15_000);
      expect([...discovery.instances().keys()]).toEqual([fixture.argocd340, fixture.tenant].sort());
      expect(new Set(through.requests.map((request) => request.path))).toEqual(
        new Set(['/apis/apps/v1/deployments', '/apis/apps/v1/statefulsets']),
      );
      expect(await mutatePatch(app, argoHookJob(), DEPLOYER)).toEqual(GUARDED);
    });

    it('reads the Argo CD version of OpenShift GitOps 1.9.0 from the table, and judges its hooks with it', async () => {
      // argocd-rhel8 is tagged with the GitOps version; argocd.openshiftGitopsVersions (by default the rows of Red
      // Hat's compatibility matrix read in openshift/openshift-docs) says which Argo CD that release ships.
      const ns = fixture.gitops190;
      const image = 'registry.redhat.io/openshift-gitops-1/argocd-rhel8:v1.9.0';
      const gitopsVersions = loadConfig().argocd.openshiftGitopsVersions;
      const { discovery, app } = discovering(await proxy(), { namespaces: [ns], gitopsVersions });
      await eventually(() => versionOf(discovery, ns) === '2.7.2', 'OpenShift GitOps 1.9.0 at 2.7.2', 15_000);
      expect(discovery.instances().get(ns)?.source).toBe(
        `StatefulSet openshift-gitops-application-controller: image ${image}: OpenShift GitOps 1.9.0 ships Argo CD 2.7.2 (argocd.openshiftGitopsVersions)`,
      );
      // 2.7.2 has no hook finalizer: no guard, and a TTL of 0 is raised to the floor (argocd-hook-ttl-race).
      const job = argoHookJob();
      delete job.metadata!.finalizers;
      (job.spec as { ttlSecondsAfterFinished: number }).ttlSecondsAfterFinished = 0;
      expect(
        await mutatePatch(app, job, `system:serviceaccount:${ns}:openshift-gitops-argocd-application-controller`),
      ).toEqual([{ op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 }]);
    });
  });

  describe.concurrent('every install layout', () => {
    it('finds the upstream, argo-helm, operator, OpenShift GitOps and Deployment controllers, and nothing else of Argo', async () => {
      const { argocd2143: argocd, gitops1160: gitops, platform, teamD, teamX } = fixture;
      const through = await proxy();
      const { discovery, app, lines } = discovering(through, {
        labelSelector: loadConfig().discovery.labelSelector,
        namespaces: [argocd, gitops, platform, teamD, teamX],
      });
      await eventually(() => synced(discovery), 'synced', 15_000);
      const gitopsController = `system:serviceaccount:${gitops}:openshift-gitops-argocd-application-controller`;
      const operatorUser = `system:serviceaccount:${teamX}:example-argocd-argocd-application-controller`;
      const helmUser = `system:serviceaccount:${platform}:argocd-application-controller`;

      const expected = new Map<string, [string | undefined, string[]]>([
        [argocd, ['2.14.3', [controllerOf(argocd)]]],
        [gitops, [undefined, [gitopsController]]],
        [platform, ['3.4.4', [helmUser]]],
        [teamD, ['3.1.0', [controllerOf(teamD)]]],
        [teamX, [undefined, [operatorUser]]],
      ]);
      expect(
        [...discovery.instances().values()].map(({ namespace, version, controllerUsernames }) => [
          namespace,
          version,
          controllerUsernames,
        ]),
      ).toEqual([...expected].sort(([a], [b]) => a.localeCompare(b)).map(([ns, [v, users]]) => [ns, v, users]));
      expect(through.requests.every((request) => request.query.labelSelector === CONTROLLER_SELECTOR)).toBe(true);
      // The upstream Deployment layout: the Deployment runs, the StatefulSet beside it at zero replicas does not count.
      expect(discovery.instances().get(teamD)?.source).toBe(
        `Deployment argocd-application-controller: image ${IMAGE('v3.1.0')}`,
      );

      // /readyz, the log and the HookGuard condition say why OpenShift GitOps' version is unknown, and how to give it.
      const gitopsSource = `StatefulSet openshift-gitops-application-controller: unknown: OpenShift GitOps 1.16.0 (image ${OPENSHIFT_IMAGE}) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give`;
      const ready = (await app.inject({ method: 'GET', url: '/readyz' })).json<{
        discovery: { instances: unknown[] };
      }>();
      expect(ready.discovery.instances).toContainEqual({ namespace: gitops, version: null, source: gitopsSource });
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: 'Argo CD instance version unknown: hooks it applies get mutations only, never denials',
          namespace: gitops,
          version: 'unknown',
          source: gitopsSource,
          fix: `give its version in the config: argocd.instanceVersions: {${gitops}: X.Y.Z}`,
        }),
      );
      const operatorSource = `StatefulSet example-argocd-application-controller: unknown: image ${OPERATOR_DEFAULT_IMAGE} is pinned by digest only and no app.kubernetes.io/version label`;
      expect(ready.discovery.instances).toContainEqual({ namespace: teamX, version: null, source: operatorSource });
      const listed = [...expected]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([ns, [version]]) => `${ns}: ${version ?? 'unknown'}`)
        .join(', ');
      const unknown = [
        [gitops, gitopsSource],
        [teamX, operatorSource],
      ]
        .sort(([a], [b]) => a!.localeCompare(b!))
        .map(([ns, source]) => `${ns} (${source})`)
        .join('; ');
      expect(argoCdKnown(null, discovery.status())).toEqual({
        type: 'ArgoCDKnown',
        status: 'False',
        reason: 'VersionUnknown',
        message: `Argo CD ${listed}; unknown: ${unknown}`,
      });

      // Each controller's service account is Argo CD's: its hook judged with its own instance's version.
      expect(await mutatePatch(app, argoHookJob(), controllerOf(argocd))).toEqual([...GUARDED, REMOVE_FINALIZER]);
      expect(await mutatePatch(app, argoHookJob(), gitopsController)).toEqual(GUARDED);
      expect(await mutatePatch(app, argoHookJob(), operatorUser)).toEqual(GUARDED);
      expect(await mutatePatch(app, argoHookJob(), controllerOf(teamD))).toEqual(GUARDED);
      expect(await mutatePatch(app, argoHookJob(), helmUser)).toEqual([]);
      expect(auditLines(lines).map((audit) => audit.argocdVersionFrom)).toEqual([
        { by: 'service-account', instance: argocd },
        { by: 'service-account', instance: gitops },
        { by: 'service-account', instance: teamX },
        { by: 'service-account', instance: teamD },
        { by: 'service-account', instance: platform },
      ]);
    });

    it('judges OpenShift GitOps with the version argocd.instanceVersions gives it, denials included', async () => {
      const ns = fixture.gitops1160;
      const user = `system:serviceaccount:${ns}:openshift-gitops-argocd-application-controller`;
      const optedOut = argoHookJob({ 'hookguard.io/skip': 'min-runtime' });

      const unpinned = discovering(await proxy(), { namespaces: [ns] });
      await eventually(() => synced(unpinned.discovery), 'synced', 15_000);
      expect((await review(unpinned.app, '/validate', optedOut, user)).allowed).toBe(true);

      const pinned = discovering(await proxy(), { namespaces: [ns], instanceVersions: { [ns]: '3.1.0' } });
      await eventually(() => synced(pinned.discovery), 'synced', 15_000);
      expect(pinned.discovery.status()).toMatchObject({
        instances: [
          {
            namespace: ns,
            version: '3.1.0',
            source: `argocd.instanceVersions: 3.1.0 (discovered: StatefulSet openshift-gitops-application-controller: unknown: OpenShift GitOps 1.16.0 (image ${OPENSHIFT_IMAGE}) is not in argocd.openshiftGitopsVersions; add the Argo CD version its release notes give)`,
          },
        ],
      });
      const denied = await review(pinned.app, '/validate', optedOut, user);
      expect(denied.allowed).toBe(false);
      expect(denied.status).toEqual(racesWith('3.1.0'));
    });

    it('judges a remote Argo CD by the identity and version the config gives it, never by the local instance', async () => {
      const ns = fixture.argocd2143;
      // By default argocd-manager is Argo CD's, of unknown version: the guard, and the finalizer kept (2.14.3 would
      // remove it).
      const byDefault = discovering(await proxy(), { namespaces: [ns] });
      await eventually(() => versionOf(byDefault.discovery, ns) === '2.14.3', 'version 2.14.3', 15_000);
      expect(await mutatePatch(byDefault.app, argoHookJob(), ARGOCD_MANAGER)).toEqual(GUARDED);

      const configured = discovering(
        await proxy(),
        { namespaces: [ns] },
        configFrom(`argocd:\n  remote:\n    ${ARGOCD_MANAGER}: 3.4.0\n`),
      );
      await eventually(() => versionOf(configured.discovery, ns) === '2.14.3', 'version 2.14.3', 15_000);
      // Its Helm hooks are Argo CD's too: no tracking, no Argo CD annotation, only the identity.
      const helmHook = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': 'before-hook-creation' });
      expect(await mutatePatch(configured.app, argoHookJob(), ARGOCD_MANAGER)).toEqual([]);
      // Nothing for 3.4.0's races: only what every such hook Job gets (no delete-on-success policy: a TTL).
      expect(await mutatePatch(configured.app, helmHook, ARGOCD_MANAGER)).toEqual([
        { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
      ]);
      expect(await mutatePatch(configured.app, argoHookJob(), controllerOf(ns))).toEqual([
        ...GUARDED,
        REMOVE_FINALIZER,
      ]);
      expect(auditLines(configured.lines).map((audit) => [audit.argocdVersion, audit.argocdVersionFrom])).toEqual([
        ['3.4.0', { by: 'remote', remote: ARGOCD_MANAGER }],
        ['3.4.0', { by: 'remote', remote: ARGOCD_MANAGER }],
        ['2.14.3', { by: 'service-account', instance: ns }],
      ]);
    });

    it('judges a hook no instance can be told to have applied with the union of the candidates', async () => {
      const [argocd, helm] = [fixture.argocd2143, fixture.helm310];
      const { discovery, app, lines } = discovering(await proxy(), { namespaces: [argocd, helm] });
      await eventually(() => synced(discovery) && discovery.instances().size === 2, 'two instances', 15_000);

      // Applied by a person: 2.14.3 or 3.1.0. The guard (both race with a fast Job), the finalizer kept (3.1.0 needs
      // it), and no denial (that needs one known version).
      expect(await mutatePatch(app, argoHookJob(), 'kubernetes-admin')).toEqual(GUARDED);
      const optedOut = argoHookJob({ 'hookguard.io/skip': 'min-runtime' });
      expect((await review(app, '/validate', optedOut, 'kubernetes-admin')).allowed).toBe(true);
      const candidates = [
        { instance: argocd, version: '2.14.3' },
        { instance: helm, version: '3.1.0' },
      ].sort((a, b) => a.instance.localeCompare(b.instance));
      expect(auditLines(lines).map((audit) => [audit.argocdVersion, audit.argocdVersionFrom])).toEqual([
        [null, { by: 'union', candidates }],
        [null, { by: 'union', candidates }],
      ]);
    });

    it('narrows the union to the Argo CD that adds the hook finalizer a CREATE carries', async () => {
      const [argocd, helm] = [fixture.argocd2148, fixture.helm310];
      const { discovery, app, lines } = discovering(await proxy(), { namespaces: [argocd, helm] });
      await eventually(() => synced(discovery) && discovery.instances().size === 2, 'two instances', 15_000);

      // 2.14.8 never adds the finalizer: the hook that carries it came from 3.1.0, and is judged (and denied) as such.
      const denied = await review(
        app,
        '/validate',
        argoHookJob({ 'hookguard.io/skip': 'min-runtime' }),
        'kubernetes-admin',
      );
      expect(denied.allowed).toBe(false);
      expect(denied.status).toEqual(racesWith('3.1.0'));
      expect(auditLines(lines).at(-1)).toMatchObject({
        argocdVersion: '3.1.0',
        argocdVersionFrom: { by: 'hook-finalizer', instance: helm },
      });
    });
  });

  it("finds Flux's helm-controller Deployment, running or not, and says its version", async () => {
    // flux2 v2.8 manifests/bases/helm-controller (the Deployment `helm-controller`, its `manager` container and the
    // component label the default flux.labelSelector reads), once running and once scaled to zero.
    const helmController = (ns: string, name: string, tag: string, replicas: number): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name,
        namespace: ns,
        labels: {
          'app.kubernetes.io/component': 'helm-controller',
          'app.kubernetes.io/instance': 'flux-system',
          'app.kubernetes.io/part-of': 'flux',
        },
      },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            serviceAccountName: 'helm-controller',
            containers: [{ name: 'manager', image: `ghcr.io/fluxcd/helm-controller:${tag}` }],
          },
        },
      },
    });
    const ns = await holding('flux', (name) => [
      helmController(name, 'helm-controller', 'v1.6.3', 1),
      helmController(name, 'helm-controller-old', 'v1.1.0', 0),
    ]);
    const through = await proxy();
    const { logger, lines } = capturedLogger();
    const flux = new HelmControllerDiscovery(
      through.kubeConfig(identity.token),
      { ...SETTINGS, labelSelector: DEFAULTS.flux.labelSelector, namespaces: [ns] },
      logger,
    );
    flux.start();
    running.push(() => flux.stop());
    await eventually(() => flux.status().enabled && (flux.status() as { watching: boolean }).watching, 'watching');
    const found = [
      {
        namespace: ns,
        name: 'helm-controller',
        version: '1.6.3',
        source: 'image ghcr.io/fluxcd/helm-controller:v1.6.3',
      },
    ];
    expect(flux.status()).toEqual({ enabled: true, synced: true, watching: true, helmControllers: found });
    expect(flux.helmControllers()).toEqual({ versions: ['1.6.3'], unknownVersion: false });
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'Flux helm-controllers discovered', helmControllers: found }),
    );
    expect(helmControllerKnown(flux.status())).toEqual({
      type: 'HelmControllerKnown',
      status: 'True',
      reason: 'Discovered',
      message: `Flux helm-controller ${ns}/helm-controller: 1.6.3`,
    });
    expect(
      new Set(through.requests.map((request) => `${request.path}?labelSelector=${request.query.labelSelector}`)),
    ).toEqual(
      new Set([`/apis/apps/v1/namespaces/${ns}/deployments?labelSelector=app.kubernetes.io/component=helm-controller`]),
    );
  });

  describe.concurrent('API discovery: OpenShift per cluster', () => {
    // Argo CD `CreateNamespace=true` then a PreSync hook reaches hookguard before cluster-policy-controller's
    // namespace-security-allocation controller has written openshift.io/sa.scc.uid-range: a guard with a user of its
    // own (65534) would be refused by restricted-v2 (openshift/apiserver-library-go
    // pkg/securitycontextconstraints/user/mustrunasrange.go Validate) and the Job would sit in FailedCreate. On an
    // OpenShift cluster the guard sets no user, annotated namespace or not; on a plain cluster a copied annotation
    // changes nothing. This cluster is a plain one: GET /apis is its real answer. OpenShift is the same answer with
    // the group OpenShift's API server adds (security.openshift.io), put in by the proxy: a CRD of that group would
    // make the whole shared cluster OpenShift, for the cluster's own hookguard too.
    const BACKOFF = { initialMs: 20, maxMs: 100 };
    /** A mirrored busybox, whose user is root, with the user hookguard used to give the guard: what this is about. */
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
    const SECURITY_GROUP = {
      name: 'security.openshift.io',
      versions: [{ groupVersion: 'security.openshift.io/v1', version: 'v1' }],
      preferredVersion: { groupVersion: 'security.openshift.io/v1', version: 'v1' },
    };

    /** The proxy answers GET /apis as OpenShift's API server would: the real groups and security.openshift.io. */
    function asOpenShift(through: FaultProxy): void {
      through.rewrite = {
        path: '/apis',
        body: (real) => {
          const list = JSON.parse(real) as { groups: unknown[] };
          return JSON.stringify({ ...list, groups: [...list.groups, SECURITY_GROUP] });
        },
      };
    }

    function serving(through: FaultProxy, config: Record<string, string>, pollMs = 60_000) {
      const { logger, lines } = capturedLogger();
      const kubeConfig = through.kubeConfig(identity.token);
      const discovery = new ApiDiscovery(kubeConfig, BACKOFF, logger, pollMs);
      discovery.start();
      const watch = new NamespaceWatch(
        kubeConfig,
        { backoff: BACKOFF, watchTimeoutSeconds: 60 },
        logger,
        RULE_NAMESPACE_KEYS,
      );
      watch.start();
      const app = buildApp(loadConfig({ overrides: config }), { logger, namespaces: watch, cluster: discovery });
      running.push(async () => {
        await discovery.stop();
        await watch.stop();
        await app.close();
      });
      return { discovery, app, watch, lines };
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

    it('an OpenShift cluster, a namespace not annotated yet: the guard sets no user, which restricted-v2 assigns', async () => {
      const through = await proxy();
      asOpenShift(through);
      const fresh = await namespace('fresh');
      const { discovery, app, lines } = serving(through, BUSYBOX_65534);
      await eventually(() => discovery.cluster() !== undefined, 'the first GET /apis', 15_000);
      expect(discovery.status()).toEqual({ enabled: true, read: true, openshift: true });
      expect(
        through.requests.filter((request) => request.path.startsWith('/apis')).map((request) => request.path),
      ).toEqual(['/apis']);
      expect(lines).toContainEqual(expect.objectContaining({ msg: 'API discovery: cluster facts', openshift: true }));
      expect(await guardContextIn(app, fresh)).toEqual(NO_IDS);
    });

    it('a plain cluster, a namespace carrying a copied uid-range annotation: the configured 65534, as before', async () => {
      const through = await proxy();
      const copied = await namespace('copied');
      await kubectl([
        'annotate',
        'namespace',
        copied,
        ...Object.entries(OPENSHIFT_ANNOTATIONS).map(([k, v]) => `${k}=${v}`),
      ]);
      const { discovery, app, watch } = serving(through, BUSYBOX_65534);
      await eventually(() => discovery.cluster() !== undefined, 'the first GET /apis', 15_000);
      await eventually(
        () => watch.status().enabled && (watch.status() as { synced: boolean }).synced,
        'namespaces listed',
        15_000,
      );
      expect(discovery.status()).toEqual({ enabled: true, read: true, openshift: false });
      expect(await guardContextIn(app, copied)).toEqual({
        ...NO_IDS,
        runAsNonRoot: true,
        runAsUser: 65534,
        runAsGroup: 65534,
      });
    });

    it('the default guard (distroless, its own user 65532) sets no user on either cluster', async () => {
      for (const openShift of [true, false]) {
        const through = await proxy();
        if (openShift) asOpenShift(through);
        const { discovery, app } = serving(through, { 'argocd.version': '3.1.0' });
        await eventually(() => discovery.cluster()?.openshift === openShift, 'the first GET /apis', 15_000);
        expect(await guardContextIn(app, 'fresh'), `openShift ${openShift}`).toEqual({ ...NO_IDS, runAsNonRoot: true });
      }
    });

    it('retries a failed read with backoff, keeps the last facts, and follows the cluster on each poll', async () => {
      const through = await proxy();
      through.fail({ method: 'GET', pathIncludes: '/apis', status: 503, times: 2 });
      const { discovery, app, lines } = serving(through, BUSYBOX_65534, 300);
      // Until the first answer nothing is known: the configured user, as on a plain cluster.
      expect(discovery.cluster()).toBeUndefined();
      await eventually(() => discovery.cluster()?.openshift === false, 'read after two 503s', 15_000);
      expect(discovery.status()).toEqual({ enabled: true, read: true, openshift: false });
      expect(
        lines.filter((line) => line.msg === 'API discovery failed; keeping the last facts').map((line) => line.error),
      ).toEqual([
        'HTTP 503: the server is currently unable to handle the request',
        'HTTP 503: the server is currently unable to handle the request',
      ]);
      expect(await guardContextIn(app, 'ns')).toMatchObject({ runAsUser: 65534 });
      asOpenShift(through);
      await eventually(() => discovery.cluster()?.openshift === true, 'the next poll', 15_000);
      expect(await guardContextIn(app, 'ns')).toEqual(NO_IDS);
      // A failure after that keeps what was known.
      through.fail({ method: 'GET', pathIncludes: '/apis', status: 503, times: 1 });
      await eventually(() => discovery.status().enabled && 'lastError' in discovery.status(), 'a failed poll', 15_000);
      expect(discovery.cluster()).toEqual({ openshift: true });
    });
  });

  it('hookguard serve (the built CLI) discovers the version, follows an upgrade, stays ready while the API server is down, and exits on SIGTERM', async () => {
    const ns = await holding('serve', (name) => [
      controller(name, IMAGE('v2.14.3'), 'StatefulSet', 0),
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {
          name: 'helm-controller',
          namespace: name,
          labels: { 'app.kubernetes.io/component': 'helm-controller' },
        },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'helm-controller' } },
          template: {
            metadata: { labels: { app: 'helm-controller' } },
            spec: { containers: [{ name: 'manager', image: 'ghcr.io/fluxcd/helm-controller:v1.6.3' }] },
          },
        },
      },
    ]);
    const through = await proxy();
    const kubeconfigFile = join(configDirectory, 'serve-kubeconfig');
    writeFileSync(kubeconfigFile, through.kubeConfig(identity.token).exportConfig());
    const config = join(configDirectory, 'serve-config.yaml');
    // No drain delay on SIGTERM: no endpoints controller needs time to drop this process. Only this namespace is
    // looked in, for Argo CD and Flux; its Lease is in the identity's namespace; nothing else of the leader's runs
    // (the self-test, the hook watcher, the namespace watch, API discovery have tests of their own).
    writeFileSync(
      config,
      [
        `discovery: { namespaces: [${ns}], backoffInitialMs: 20, backoffMaxMs: 100 }`,
        `flux: { namespaces: [${ns}] }`,
        `leaderElection: { leaseNamespace: ${namespaces[0]} }`,
        'server: { shutdownDelayMs: 0 }',
        'selfTest: { enabled: false }',
        'hookWatch: { enabled: false }',
        'rules: { meshSidecar: { action: "off" }, minRuntime: { openshift: "true" } }',
        '',
      ].join('\n'),
    );
    const serve = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfigFile });
    running.push(async () => serve.stop());
    const logged = (msg: string) => serve.waitForLog((line) => line.msg === msg);
    expect(await logged('hookguard ready')).toMatchObject({ argocdVersion: 'discovered per instance' });
    expect(await logged('Argo CD discovery on')).toMatchObject({
      from: `kubeconfig ${kubeconfigFile}`,
      labelSelector: 'app.kubernetes.io/component=application-controller,app.kubernetes.io/part-of=argocd',
      namespaces: [ns],
    });
    expect(await logged('Argo CD instance discovered')).toMatchObject({ namespace: ns, version: '2.14.3' });
    // That line is written when the lists are in; the watches open after it.
    const readyWatching = async () => {
      const answer = await readyz(serve.port);
      const body = answer.body as { discovery?: { watching?: boolean }; flux?: { watching?: boolean } };
      return body.discovery?.watching === true && body.flux?.watching === true ? answer : undefined;
    };
    expect(await eventually(readyWatching, 'discovery watching', 15_000)).toEqual({
      status: 200,
      body: {
        status: 'ready',
        discovery: discoveryWithController(ns, '2.14.3', IMAGE('v2.14.3')),
        flux: {
          enabled: true,
          synced: true,
          watching: true,
          helmControllers: [
            {
              namespace: ns,
              name: 'helm-controller',
              version: '1.6.3',
              source: 'image ghcr.io/fluxcd/helm-controller:v1.6.3',
            },
          ],
        },
        namespaces: { enabled: false, reason: 'rules.meshSidecar.action is off' },
        apiDiscovery: { enabled: false, reason: 'rules.minRuntime.openshift is true' },
        selfTest: { enabled: false, reason: 'selfTest.enabled is false' },
      },
    });

    await setControllerImage(ns, IMAGE('v2.14.4'));
    expect(await logged('Argo CD instance version changed')).toMatchObject({
      namespace: ns,
      version: '2.14.4',
      previousVersion: '2.14.3',
    });

    await through.stop();
    expect(await logged(LOST)).toMatchObject({ level: 40 });
    // The warning comes as the watch ends; /readyz says so once the watch's state follows (a moment later, loaded).
    const notWatching = async () => {
      const answer = await readyz(serve.port);
      return (answer.body as { discovery?: { watching?: boolean } }).discovery?.watching === false ? answer : undefined;
    };
    expect(await eventually(notWatching, 'discovery to say it is not watching', 15_000)).toMatchObject({
      status: 200,
      body: { discovery: { synced: true, watching: false, instances: [{ namespace: ns, version: '2.14.4' }] } },
    });

    // Exits only once discovery has stopped: an open watch would keep the process alive.
    serve.child.kill('SIGTERM');
    expect(await serve.exitWithin(5000)).toBe(0);
    // The chart's rights were enough for every call it made.
    expect(serve.lines.filter((line) => /HTTP 403|\bforbidden\b/i.test(JSON.stringify(line)))).toEqual([]);
  });
});

function readyz(port: number): Promise<{ status: number | undefined; body: unknown }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      response.on('end', () => resolve({ status: response.statusCode, body: JSON.parse(text) as unknown }));
    }).on('error', reject);
  });
}
