// The hook watcher on the real control plane: `hookguard serve` from the checkout's build, as the chart's identity,
// watching through the fault proxy (support/watcher.ts) hook Jobs and Pods the cluster's hookguard admitted (its
// webhook gives them the hookguard.io/hook label), which the real Job controller fails and the kubelet simulator runs
// (exit code, image pull, run time, termination message and log from annotations: docs/testing.md). What is asserted
// is what the API server stores: the HookFailed and HookStuck Events on the Job, the Pod and the Argo CD Application
// (made from Argo CD's own CRD, test/cluster/argocd), their exact notes, the 1024-byte limit, and one Event per hook
// and state through a restart, a dropped watch and a 410 Expired re-list.
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeEvent } from '../../src/controllers/events.js';
import { eventName } from '../../src/controllers/hooks/triage.js';
import { repoRoot } from '../support/k8s-tools.js';
import { describeCluster, kubectl, kubectlJson, kubectlPath, run, waitUntil } from './support/cluster.js';
import { keepClusterWatcherOut, startWatcher, type RunningWatcher, type WatcherRun } from './support/watcher.js';

type Json = Record<string, any>;

const applicationCrd = join(repoRoot, 'test', 'cluster', 'argocd', 'application-crd.yaml');
const helmReleaseCrd = join(repoRoot, 'test', 'cluster', 'flux', 'helm.toolkit.fluxcd.io_helmreleases.yaml');
const REPORTING_CONTROLLER = 'hookguard.io/hook-watcher';
const IMAGE = 'registry.example.com/shop/migrate:2.4.1';
/** The least why.stuckAfterSeconds accepts. */
const STUCK_AFTER_SECONDS = 30;
/** events.k8s.io/v1 eventTime: a MicroTime, six fractional digits. */
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

interface Hook {
  name: string;
  kind?: 'Job' | 'Pod';
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** For the kubelet simulator, on the Pod (a Job's template). */
  podAnnotations?: Record<string, string>;
}

function manifest(hook: Hook): Json {
  const container = {
    name: 'migrate',
    image: IMAGE,
    command: ['/app/migrate', 'up'],
    resources: { limits: { memory: '128Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
  };
  const metadata = {
    name: hook.name,
    labels: hook.labels ?? {},
    annotations: { 'helm.sh/hook': 'pre-upgrade', ...hook.annotations },
  };
  if (hook.kind === 'Pod')
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...metadata, annotations: { ...metadata.annotations, ...hook.podAnnotations } },
      spec: { restartPolicy: 'Never', containers: [container] },
    };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata,
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations: hook.podAnnotations ?? {} },
        spec: { restartPolicy: 'Never', containers: [container] },
      },
    },
  };
}

/** Creates the hook through the API server, the cluster's hookguard in front; returns it as stored. */
async function create(namespace: string, hook: Hook): Promise<Json> {
  const created = JSON.parse(
    await kubectl(['create', '-n', namespace, '-o', 'json', '-f', '-'], JSON.stringify(manifest(hook))),
  ) as Json;
  // The cluster's webhook labelled it (rule hook-label): what the watcher selects.
  expect(created.metadata.labels?.['hookguard.io/hook'], `${hook.name} admitted by the cluster's hookguard`).toBe(
    'admitted',
  );
  return created;
}

/** The hook watcher's Events in a namespace (events.k8s.io/v1, as stored). */
async function watcherEvents(namespace: string): Promise<Json[]> {
  const list = await kubectlJson<{ items: Json[] }>(['get', 'events.events.k8s.io', '-n', namespace]);
  return list.items.filter((event) => event.reportingController === REPORTING_CONTROLLER);
}

async function eventsAbout(namespace: string, name: string): Promise<Json[]> {
  return (await watcherEvents(namespace)).filter((event) => event.regarding?.name === name);
}

/** The first Pod of a Job. */
async function podOf(namespace: string, job: string): Promise<string> {
  return waitUntil(`a Pod of ${job}`, async () => {
    const pods = await kubectlJson<{ items: Json[] }>(['get', 'pods', '-n', namespace, '-l', `job-name=${job}`]);
    return pods.items[0]?.metadata.name as string | undefined;
  });
}

/** What an Event stored by the API server holds, besides its metadata's bookkeeping. */
function stored(event: Json): Json {
  const { metadata, ...rest } = event;
  return { ...rest, metadata: { name: metadata.name, namespace: metadata.namespace } };
}

function expectedEvent(
  hook: Json,
  reason: 'HookFailed' | 'HookStuck',
  note: string,
  on: { namespace: string; regarding: Json; of: string },
): Json {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: {
      name: eventName(on.regarding.name, hook.metadata.uid, reason, on.of),
      namespace: on.namespace,
    },
    eventTime: expect.stringMatching(MICRO_TIME),
    // The API server's conversion from the core Event it stores (v1.37.2 pkg/apis/events/v1/conversion.go) fills these.
    deprecatedFirstTimestamp: null,
    deprecatedLastTimestamp: null,
    deprecatedSource: {},
    type: 'Warning',
    reason,
    action: 'ExplainHook',
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: hostname(),
    note,
    regarding: { ...on.regarding, resourceVersion: expect.stringMatching(/^\d+$/) },
  };
}

describeCluster('the hook watcher on the real control plane', () => {
  let runOf: WatcherRun;
  let hooks = '';
  let apps = '';
  let watcher: RunningWatcher;
  let application: Json;
  /** A second watcher, with hookWatch.helmReleaseEvents, over hooks of its own. */
  let fluxHooks = '';
  let flux = '';
  let fluxWatcher: RunningWatcher;
  /** A third, over hooks of its own, whose watches the proxy cuts and expires. */
  let faultHooks = '';
  let faultWatcher: RunningWatcher;

  beforeAll(async () => {
    [runOf] = await Promise.all([
      keepClusterWatcherOut(),
      kubectl(['apply', '--server-side', '--force-conflicts', '-f', applicationCrd, '-f', helmReleaseCrd]),
    ]);
    await kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/applications.argoproj.io',
      'crd/helmreleases.helm.toolkit.fluxcd.io',
    ]);
    [hooks, apps, fluxHooks, flux, faultHooks] = await Promise.all([
      runOf.namespace('hooks'),
      runOf.namespace('apps'),
      runOf.namespace('flux-hooks'),
      runOf.namespace('flux'),
      runOf.namespace('fault-hooks'),
    ]);
    application = JSON.parse(
      await kubectl(
        ['create', '-o', 'json', '-f', '-'],
        JSON.stringify({
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Application',
          metadata: { name: 'shop', namespace: apps },
          spec: {
            project: 'default',
            source: { repoURL: 'https://git.example.com/shop.git', path: 'deploy', targetRevision: 'HEAD' },
            destination: { server: 'https://kubernetes.default.svc', namespace: hooks },
          },
        }),
      ),
    ) as Json;
    [watcher, fluxWatcher, faultWatcher] = await Promise.all([
      startWatcher(runOf, {
        watched: [hooks],
        eventLogs: true,
        config: [`why: { stuckAfterSeconds: ${STUCK_AFTER_SECONDS} }`],
      }),
      startWatcher(runOf, { watched: [fluxHooks], helmReleaseEvents: true }),
      startWatcher(runOf, { watched: [faultHooks] }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await watcher?.stop();
    await fluxWatcher?.stop();
    await faultWatcher?.stop();
    await runOf?.cleanup();
  });

  const posts = (of: RunningWatcher, from = 0) =>
    of.proxy.requests.slice(from).filter((request) => request.method === 'POST' && request.path.endsWith('/events'));

  describe.concurrent('writes', () => {
    it('one HookFailed Event on the failed Job and one on its Argo CD Application, with the explanation', async () => {
      const job = await create(hooks, {
        name: 'db-migrate',
        // Argo CD's instance label names the Application (NAMESPACE_NAME); helm-controller's labels name a
        // HelmRelease, which the watcher leaves alone without hookWatch.helmReleaseEvents.
        labels: {
          'app.kubernetes.io/instance': `${apps}_shop`,
          'helm.toolkit.fluxcd.io/name': 'web',
          'helm.toolkit.fluxcd.io/namespace': apps,
        },
        podAnnotations: { 'test.hookguard.io/exit-code': '1' },
      });
      const [onJob] = await waitUntil('the Event on the Job', async () => {
        const events = await eventsAbout(hooks, 'db-migrate');
        return events.length > 0 && events;
      });
      const [onApp] = await waitUntil('the Event on the Application', async () => {
        const events = await eventsAbout(apps, 'shop');
        return events.length > 0 && events;
      });
      const pod = await podOf(hooks, 'db-migrate');
      const note = `Job db-migrate failed (ContainerFailed): container migrate of Pod ${pod} exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit). Next: Read its log: kubectl logs -n ${hooks} ${pod} -c migrate`;
      expect(stored(onJob!)).toEqual(
        expectedEvent(job, 'HookFailed', note, {
          namespace: hooks,
          of: 'hook',
          regarding: {
            apiVersion: 'batch/v1',
            kind: 'Job',
            name: 'db-migrate',
            namespace: hooks,
            uid: job.metadata.uid,
          },
        }),
      );
      expect(stored(onApp!)).toEqual(
        expectedEvent(job, 'HookFailed', note, {
          namespace: apps,
          of: `${apps}/shop`,
          regarding: {
            apiVersion: 'argoproj.io/v1alpha1',
            kind: 'Application',
            name: 'shop',
            namespace: apps,
            uid: application.metadata.uid,
          },
        }),
      );
      // What `kubectl describe job` and `kubectl get events` read: the core v1 view of the same Event.
      const described = await kubectlJson<{ items: Json[] }>([
        'get',
        'events',
        '-n',
        hooks,
        '--field-selector',
        `involvedObject.uid=${job.metadata.uid},reason=HookFailed`,
      ]);
      expect(described.items).toHaveLength(1);
      expect(described.items[0]).toMatchObject({
        type: 'Warning',
        message: note,
        reportingComponent: REPORTING_CONTROLLER,
        involvedObject: { kind: 'Job', name: 'db-migrate', uid: job.metadata.uid },
      });
      expect(watcher.proxy.requests.filter((request) => request.path.includes('helmreleases'))).toEqual([]);
    });

    it('with hookWatch.helmReleaseEvents, the same Event on the Flux HelmRelease that owns the hook (its labels)', async () => {
      const helmRelease = JSON.parse(
        await kubectl(
          ['create', '-o', 'json', '-f', '-'],
          JSON.stringify({
            apiVersion: 'helm.toolkit.fluxcd.io/v2',
            kind: 'HelmRelease',
            metadata: { name: 'web', namespace: flux },
            spec: { interval: '10m', chartRef: { kind: 'OCIRepository', name: 'web' } },
          }),
        ),
      ) as Json;
      // helm-controller's origin labels (v1.6.3 internal/postrender/common_renderer.go), on hooks under
      // postRenderStrategy combined; no Argo CD instance label, so the HelmRelease is the only owner.
      const job = await create(fluxHooks, {
        name: 'web-migrate',
        labels: { 'helm.toolkit.fluxcd.io/name': 'web', 'helm.toolkit.fluxcd.io/namespace': flux },
        podAnnotations: { 'test.hookguard.io/exit-code': '1' },
      });
      const [onRelease] = await waitUntil('the Event on the HelmRelease', async () => {
        const events = await eventsAbout(flux, 'web');
        return events.length > 0 && events;
      });
      const [onJob] = await eventsAbout(fluxHooks, 'web-migrate');
      expect(onJob?.note).toMatch(/^Job web-migrate failed \(ContainerFailed\): /);
      expect(stored(onRelease!)).toEqual(
        expectedEvent(job, 'HookFailed', onJob!.note, {
          namespace: flux,
          of: `HelmRelease ${flux}/web`,
          regarding: {
            apiVersion: 'helm.toolkit.fluxcd.io/v2',
            kind: 'HelmRelease',
            name: 'web',
            namespace: flux,
            uid: helmRelease.metadata.uid,
          },
        }),
      );
    });

    it('one HookFailed Event on a failed bare hook Pod', async () => {
      const pod = await create(hooks, {
        name: 'db-check',
        kind: 'Pod',
        podAnnotations: { 'test.hookguard.io/exit-code': '3' },
      });
      const events = await waitUntil('the Event on the Pod', async () => {
        const found = await eventsAbout(hooks, 'db-check');
        return found.length > 0 && found;
      });
      expect(events.map(stored)).toEqual([
        expectedEvent(
          pod,
          'HookFailed',
          `Pod db-check failed (ContainerFailed): container migrate of Pod db-check exited with code 3 (Error). Next: Read its log: kubectl logs -n ${hooks} db-check -c migrate`,
          {
            namespace: hooks,
            of: 'hook',
            regarding: { apiVersion: 'v1', kind: 'Pod', name: 'db-check', namespace: hooks, uid: pod.metadata.uid },
          },
        ),
      ]);
    });

    it(
      `HookStuck on a Job whose image never pulls, once it has waited ${STUCK_AFTER_SECONDS} s; nothing on one that runs long or succeeds`,
      async () => {
        const ok = await create(hooks, { name: 'db-ok' });
        const long = await create(hooks, {
          name: 'db-long',
          podAnnotations: { 'test.hookguard.io/run-seconds': '600' },
        });
        const job = await create(hooks, {
          name: 'db-pull',
          podAnnotations: { 'test.hookguard.io/image-pull': 'fail' },
        });
        const events = await waitUntil(
          'the HookStuck Event',
          async () => {
            const found = await eventsAbout(hooks, 'db-pull');
            return found.length > 0 && found;
          },
          STUCK_AFTER_SECONDS + 60,
        );
        const pod = await podOf(hooks, 'db-pull');
        expect(events.map(stored)).toEqual([
          expectedEvent(
            job,
            'HookStuck',
            `Job db-pull stuck (ImagePullBackOff): container migrate of Pod ${pod} cannot pull image ${IMAGE} (ImagePullBackOff) (Event Failed (kubelet): Failed to pull image "${IMAGE}": rpc error: code = NotFound desc = failed to pull and unpack image "${IMAGE}": failed to resolve reference "${IMAGE}": ${IMAGE}: not found). Next: Check that image ${IMAGE} exists and that the Pod may pull it (the tag, imagePullSecrets, registry access).`,
            {
              namespace: hooks,
              of: 'hook',
              regarding: {
                apiVersion: 'batch/v1',
                kind: 'Job',
                name: 'db-pull',
                namespace: hooks,
                uid: job.metadata.uid,
              },
            },
          ),
        ]);
        // The long run was looked at (its Pods read: it was overdue) and found running; the success never was.
        const read = (uid: string) =>
          watcher.proxy.requests.filter((request) => request.query.labelSelector?.includes(uid));
        expect(read(long.metadata.uid).length).toBeGreaterThan(0);
        expect(read(ok.metadata.uid)).toEqual([]);
        expect(await eventsAbout(hooks, 'db-long')).toEqual([]);
        expect(await eventsAbout(hooks, 'db-ok')).toEqual([]);
        expect(watcher.proxy.requests.filter((request) => request.query.fieldSelector?.includes('db-ok'))).toEqual([]);
      },
      (STUCK_AFTER_SECONDS + 90) * 1000,
    );

    it('with log lines asked for, the termination message redacted, escaped and cut to 1024 bytes of UTF-8', async () => {
      const secretLine = 'Authorization: Bearer abc.def password=hunter2 token=ghp_0123456789abcdefghijABCDEFGHIJ';
      const message = `${'Datenbankfehler — 数据库不可用 😀\n'.repeat(60)}${secretLine}\nERROR: migration 42 failed\n`;
      await create(hooks, {
        name: 'db-seed',
        annotations: { 'hookguard.io/event-logs': 'true' },
        podAnnotations: { 'test.hookguard.io/exit-code': '1', 'test.hookguard.io/termination-message': message },
      });
      const events = await waitUntil('the Event on the Job', async () => {
        const found = await eventsAbout(hooks, 'db-seed');
        return found.length > 0 && found;
      });
      expect(events).toHaveLength(1);
      const note = String(events[0]!.note);
      expect(Buffer.byteLength(note, 'utf8')).toBeLessThanOrEqual(1024);
      expect(Buffer.byteLength(note, 'utf8')).toBeGreaterThan(1000);
      expect(note).toContain('Log lines included (redacted) from migrate: …');
      // The end of the message, where the error is, with its line breaks escaped as `hookguard why` shows them.
      expect(note.endsWith('😀\\nAuthorization: [redacted]\\nERROR: migration 42 failed')).toBe(true);
      expect(note).not.toContain('hunter2');
      expect(note).not.toContain('ghp_');
      expect(note).toContain('数据库不可用');
    });

    it('with log lines asked for and no termination message, the last lines of the log, redacted before they are cut', async () => {
      // The watcher reads at most 2 KiB of a log: the last 2 KiB of this one begin inside `password`, so that what a
      // cut first would leave, `rd=hunter2-horse-staple`, no pattern knows. What follows redacts short (base64).
      const encoded = `${'QUJD'.repeat(16)}\n`.repeat(31);
      const log = `${'ok\n'.repeat(10)}db login password=hunter2-horse-staple\n${encoded}step done`;
      expect(log.slice(-2048).startsWith('rd=hunter2')).toBe(true);
      await create(hooks, {
        name: 'db-report',
        annotations: { 'hookguard.io/event-logs': 'true' },
        podAnnotations: { 'test.hookguard.io/exit-code': '1', 'test.hookguard.io/log': log },
      });
      const events = await waitUntil('the Event on the Job', async () => {
        const found = await eventsAbout(hooks, 'db-report');
        return found.length > 0 && found;
      });
      expect(events).toHaveLength(1);
      const note = String(events[0]!.note);
      expect(note).not.toContain('hunter2');
      expect(note.slice(note.indexOf('Log lines included'))).toBe(
        `Log lines included (redacted) from migrate: ${'[redacted]\\n'.repeat(31)}step done`,
      );
    });

    it('the API server keeps an Event whose fields kubeEvent() cut to their limits in bytes, and refuses fields over them in bytes though not in characters', async () => {
      const regarding = {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'migrate', namespace: hooks, uid: 'u-1' },
      };
      const event = kubeEvent({
        regarding,
        apiVersion: 'batch/v1',
        kind: 'Job',
        type: 'Warning',
        reason: 'Ü'.repeat(100),
        action: 'Ä'.repeat(100),
        note: '数'.repeat(400),
        reportingController: 'hookguard.io/hooks',
        reportingInstance: 'ö'.repeat(100),
        now: new Date(),
        name: 'limits',
      });
      const kept = JSON.parse(await kubectl(['create', '-o', 'json', '-f', '-'], JSON.stringify(event))) as Json;
      expect(kept).toMatchObject({
        reason: `${'Ü'.repeat(62)}…`,
        action: `${'Ä'.repeat(62)}…`,
        reportingInstance: `${'ö'.repeat(62)}…`,
        note: `${'数'.repeat(340)}…`,
      });
      for (const field of ['reason', 'action', 'reportingInstance']) expect(Buffer.byteLength(kept[field])).toBe(127);
      expect(Buffer.byteLength(kept.note)).toBe(1023);
      // Over in bytes though not in characters: the API server counts bytes (Go's len(); v1.37.2
      // pkg/apis/core/validation/events.go legacyValidateEvent), and names the note by its core field, message.
      const over = await run(kubectlPath, ['create', '-f', '-'], {
        input: JSON.stringify({
          ...event,
          metadata: { name: 'over', namespace: hooks },
          reason: 'Ü'.repeat(65),
          note: 'é'.repeat(513),
        }),
      });
      expect(over.status).toBe(1);
      expect(over.stderr).toBe(
        [
          'The Event "over" is invalid: ',
          '* reason: Invalid value: "": can have at most 128 characters',
          '* message: Invalid value: "": can have at most 1024 characters',
          '',
        ].join('\n'),
      );
    });

    it('after a dropped watch it resumes without a re-list; after 410 Expired it re-lists; neither posts twice', async () => {
      const count = async () => (await watcherEvents(faultHooks)).length;
      const before = await count();
      const jobLists = (from: number) =>
        faultWatcher.proxy.requests
          .slice(from)
          .filter((request) => request.path === '/apis/batch/v1/jobs' && !request.watch && request.status === 200);

      const watching = () =>
        waitUntil('its watches of Jobs and Pods', async () => faultWatcher.proxy.openWatches === 2);
      await watching();
      const dropped = faultWatcher.proxy.requests.length;
      faultWatcher.proxy.dropWatches();
      await create(faultHooks, { name: 'after-drop', podAnnotations: { 'test.hookguard.io/exit-code': '1' } });
      await waitUntil('the Event on the hook failed after the drop', async () => {
        return (await eventsAbout(faultHooks, 'after-drop')).length === 1;
      });
      expect(jobLists(dropped)).toEqual([]);
      expect(posts(faultWatcher, dropped).map((post) => post.status)).toEqual([201]);

      // Watched again from where it was, not listed anew.
      expect(
        faultWatcher.proxy.requests
          .slice(dropped)
          .filter((request) => request.path === '/apis/batch/v1/jobs' && request.watch)
          .map((request) => request.query.resourceVersion),
      ).toContainEqual(expect.stringMatching(/^\d+$/));
      await watching();
      const expired = faultWatcher.proxy.requests.length;
      faultWatcher.proxy.expireWatches();
      await waitUntil('a re-list', async () => jobLists(expired).length > 0);
      await create(faultHooks, { name: 'after-expiry', podAnnotations: { 'test.hookguard.io/exit-code': '1' } });
      await waitUntil('the Event on the hook failed after the expiry', async () => {
        return (await eventsAbout(faultHooks, 'after-expiry')).length === 1;
      });
      expect(posts(faultWatcher, expired).map((post) => post.status)).toEqual([201]);
      expect(await count()).toBe(before + 2);
      expect(faultWatcher.serve.lines).toContainEqual(
        expect.objectContaining({ msg: 'watch resourceVersion expired (410 Gone): re-listing' }),
      );
    });

    it('looks again at once when a hook fails while a pass is explaining another, not a pass interval (10 s) later', async () => {
      let reached!: () => void;
      const held = new Promise<void>((resolve) => (reached = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      // (On the HelmRelease watcher: a held pass of the first would delay the Events the other cases wait for.)
      // The pass is held while it reads the Events about held-first, until held-second has failed.
      fluxWatcher.proxy.beforeForward = async (request) => {
        if (request.query.fieldSelector?.includes('held-first')) {
          reached();
          await released;
        }
      };
      try {
        await create(fluxHooks, { name: 'held-first', podAnnotations: { 'test.hookguard.io/exit-code': '1' } });
        await held;
        await create(fluxHooks, { name: 'held-second', podAnnotations: { 'test.hookguard.io/exit-code': '1' } });
        await waitUntil('held-second to fail', async () => {
          const job = await kubectlJson<Json>(['get', 'job', 'held-second', '-n', fluxHooks]);
          return (job.status?.conditions as Json[] | undefined)?.some(
            (condition) => condition.type === 'Failed' && condition.status === 'True',
          );
        });
        // Its watch event reaches the watcher while the pass is still held.
        await new Promise((resolve) => setTimeout(resolve, 500));
      } finally {
        release();
      }
      const releasedAt = Date.now();
      await waitUntil(
        'the Event on held-second',
        async () => (await eventsAbout(fluxHooks, 'held-second')).length === 1,
        10,
      );
      expect(Date.now() - releasedAt).toBeLessThan(5000);
      fluxWatcher.proxy.beforeForward = undefined;
    });
  });

  describe('once the Events are out', () => {
    it('a new leader after a restart tries each Event again and is refused (409): none is posted twice', async () => {
      const before = [...(await watcherEvents(hooks)), ...(await watcherEvents(apps))];
      expect(before.length).toBeGreaterThanOrEqual(6);
      const from = watcher.proxy.requests.length;
      await watcher.restart();
      await waitUntil(
        'the new leader to try every Event again',
        async () => posts(watcher, from).length >= before.length,
      );
      // A moment for any further (duplicate) post to show.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(posts(watcher, from).map((post) => post.status)).toEqual(before.map(() => 409));
      const after = [...(await watcherEvents(hooks)), ...(await watcherEvents(apps))];
      expect(after).toEqual(before);
      // It counts no new failure: the Events were there.
      const metrics = await (await fetch(`http://127.0.0.1:${watcher.serve.probePort}/metrics`)).text();
      expect(metrics.split('\n').filter((line) => /^hookguard_hook_failures_total\{.*\} [1-9]/.test(line))).toEqual([]);
    });
  });
});
