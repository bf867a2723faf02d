// The hook watcher against the stand-in API server (test/support/fake-apiserver.ts), which stores events.k8s.io/v1
// Events only as kube-apiserver's ValidateEventCreate accepts them (note and reason limits in UTF-8 bytes), serves the
// label and field selectors the watcher sends, and refuses a second Event of the same name with 409 AlreadyExists.
// The hooks are the realistic Job, Pod and Event shapes of test/golden/why/ (provenance in each file).
import { afterEach, describe, expect, it } from 'vitest';
import { HookWatcher, type HookWatchSettings } from '../../src/controllers/hooks/watcher.js';
import { kubeHookWatchClient } from '../../src/controllers/hooks/client.js';
import { CallBudget } from '../../src/kube/call-budget.js';
import { FakeApiServer, type KubeItem } from '../support/fake-apiserver.js';
import { capturedLogger, eventually } from '../support/log-sink.js';
import { relocated, seedWhy, whyFixture, type WhyFixture } from '../support/why-fixtures.js';

const SETTINGS: Omit<HookWatchSettings, 'eventLogs' | 'helmReleaseEvents'> = {
  stuckAfterSeconds: 300,
  recheckSeconds: 60,
  reportingInstance: 'hookguard-7d9f-abcde',
  applicationLookup: { instanceLabels: ['app.kubernetes.io/instance'], controlPlaneNamespaces: ['argocd'] },
  reflector: { backoff: { initialMs: 50, maxMs: 200 }, watchTimeoutSeconds: 30 },
};
/** The defaults of hookWatch.maxConcurrentCalls, callsPerSecond and callBurst. */
const budget = () => new CallBudget({ maxConcurrent: 4, perSecond: 20, burst: 30 });
const APPLICATION = {
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name: 'shop', namespace: 'argocd', uid: 'app-uid-shop' },
  spec: {},
};

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** A why fixture as hookguard admitted it: the hook carries rule hook-label's label. */
function admitted(name: string, change: (fixture: WhyFixture) => void = () => undefined): WhyFixture {
  const fixture = relocated(whyFixture(name), Date.now());
  const hook = fixture.hook as KubeItem;
  hook.metadata.labels = { ...(hook.metadata.labels ?? {}), 'hookguard.io/hook': 'admitted' };
  change(fixture);
  return fixture;
}

async function cluster(...fixtures: WhyFixture[]): Promise<FakeApiServer> {
  const fake = await new FakeApiServer().start();
  cleanup.push(() => fake.stop());
  fake.put(APPLICATION);
  for (const fixture of fixtures) seedWhy(fake, fixture);
  return fake;
}

/** A leader's watcher, running until the test ends. */
function lead(fake: FakeApiServer, eventLogs = false, helmReleaseEvents = false) {
  const failures: string[] = [];
  const failing: number[] = [];
  const { logger, lines } = capturedLogger('debug');
  const kubeConfig = fake.kubeConfig('hookguard');
  const watcher = new HookWatcher(
    kubeConfig,
    kubeHookWatchClient(kubeConfig, budget()),
    { ...SETTINGS, eventLogs, helmReleaseEvents },
    logger,
    {
      failure: (reason) => failures.push(reason),
      failing: (count) => failing.push(count),
    },
  );
  const stop = new AbortController();
  const running = watcher.run(stop.signal);
  cleanup.push(async () => {
    stop.abort();
    await running;
  });
  return { failures, failing, lines };
}

const ours = (fake: FakeApiServer) =>
  fake.events.filter((event) => event.reportingController === 'hookguard.io/hook-watcher');
const eventPosts = (fake: FakeApiServer) =>
  fake.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/events'));

describe('the hook watcher', () => {
  it('posts one HookFailed Event on the failed Job and one on its Argo CD Application, with the explanation', async () => {
    const fake = await cluster(admitted('failed-exit-code'));
    const { failures, failing } = lead(fake);
    const events = await eventually(() => ours(fake).length === 2 && ours(fake), 'two Events');
    const onJob = events.find((event) => (event.regarding as { kind: string }).kind === 'Job')!;
    const onApp = events.find((event) => (event.regarding as { kind: string }).kind === 'Application')!;
    expect(onJob).toMatchObject({
      type: 'Warning',
      reason: 'HookFailed',
      action: 'ExplainHook',
      reportingInstance: 'hookguard-7d9f-abcde',
      regarding: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        name: 'db-migrate',
        namespace: 'shop',
        uid: '6a1c3f8e-3b1d-4c57-9d0e-2f4b7a9c1e01',
      },
      metadata: { namespace: 'shop' },
    });
    expect(onApp).toMatchObject({
      reason: 'HookFailed',
      regarding: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        name: 'shop',
        namespace: 'argocd',
        uid: 'app-uid-shop',
      },
      metadata: { namespace: 'argocd' },
    });
    expect(onApp.note).toBe(onJob.note);
    expect(onJob.note).toBe(
      'Job db-migrate failed (ContainerFailed): container migrate of Pod db-migrate-9tq2w exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit). Next: Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
    );
    // The container's own log tail stays out of the Event unless asked for.
    expect(onJob.note).not.toContain('Log lines included');
    await eventually(() => failing.includes(1), 'the failing count');
    expect(failures).toEqual(['ContainerFailed']);
  });

  it('with hookWatch.helmReleaseEvents, posts it also on the Flux HelmRelease that owns the hook (its labels)', async () => {
    const helmRelease = {
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      metadata: { name: 'web', namespace: 'flux-system', uid: 'hr-uid-web' },
      spec: { interval: '10m', chartRef: { kind: 'OCIRepository', name: 'web' } },
    };
    // helm-controller's origin labels (v1.6.3 internal/postrender/common_renderer.go), on hooks under postRenderStrategy
    // combined; no Argo CD instance label, so the HelmRelease is the only owner.
    const flux = (fixture: WhyFixture) => {
      const hook = fixture.hook as KubeItem;
      hook.metadata.labels = {
        'hookguard.io/hook': 'admitted',
        'helm.toolkit.fluxcd.io/name': 'web',
        'helm.toolkit.fluxcd.io/namespace': 'flux-system',
      };
    };
    const fake = await cluster(admitted('failed-exit-code', flux));
    fake.serve({ apiVersion: 'helm.toolkit.fluxcd.io/v2', kind: 'HelmRelease', plural: 'helmreleases' });
    fake.put(helmRelease);
    lead(fake, false, true);
    const events = await eventually(() => ours(fake).length === 2 && ours(fake), 'two Events');
    const onJob = events.find((event) => (event.regarding as { kind: string }).kind === 'Job')!;
    const onRelease = events.find((event) => (event.regarding as { kind: string }).kind === 'HelmRelease')!;
    expect(onRelease).toMatchObject({
      reason: 'HookFailed',
      regarding: {
        apiVersion: 'helm.toolkit.fluxcd.io/v2',
        kind: 'HelmRelease',
        name: 'web',
        namespace: 'flux-system',
        uid: 'hr-uid-web',
      },
      metadata: { namespace: 'flux-system' },
    });
    expect(onRelease.note).toBe(onJob.note);
  });

  it('without hookWatch.helmReleaseEvents, reads no HelmRelease', async () => {
    const fake = await cluster(
      admitted('failed-exit-code', (fixture) => {
        (fixture.hook as KubeItem).metadata.labels = {
          'hookguard.io/hook': 'admitted',
          'helm.toolkit.fluxcd.io/name': 'web',
          'helm.toolkit.fluxcd.io/namespace': 'flux-system',
        };
      }),
    );
    lead(fake);
    await eventually(() => ours(fake).length === 1, 'the Event on the Job');
    expect(fake.requests.filter((request) => request.path.includes('helmreleases'))).toEqual([]);
  });

  it('posts no second Event on a resync, a change of the Job, or a new leader (409 AlreadyExists on the fixed name)', async () => {
    const fixture = admitted('failed-exit-code');
    const fake = await cluster(fixture);
    const first = lead(fake);
    await eventually(() => ours(fake).length === 2, 'two Events');
    // A change of the Job (a MODIFIED watch event) and a second leader reading everything afresh.
    fake.put({
      ...(fixture.hook as KubeItem),
      metadata: { ...(fixture.hook as KubeItem).metadata, annotations: { touched: 'yes' } },
    });
    const second = lead(fake);
    await eventually(
      () => eventPosts(fake).filter((post) => post.status === 409).length === 2,
      'the new leader refused',
    );
    expect(ours(fake)).toHaveLength(2);
    expect(first.failures).toEqual(['ContainerFailed']);
    expect(second.failures).toEqual([]);
  });

  it('looks again at once when a hook arrives while a pass is explaining another, not a pass interval (10 s) later', async () => {
    const fake = await cluster(admitted('failed-exit-code'));
    const kubeConfig = fake.kubeConfig('hookguard');
    const client = kubeHookWatchClient(kubeConfig, budget());
    // The first pass is held while it reads the Pods and Events of the hook in shop, until a second failed hook has arrived.
    let reached!: () => void;
    const passHeld = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: typeof client = {
      ...client,
      async evidence(hook) {
        if (hook.metadata?.namespace === 'shop') {
          reached();
          await released;
        }
        return client.evidence(hook);
      },
    };
    const { logger } = capturedLogger('debug');
    const watcher = new HookWatcher(
      kubeConfig,
      held,
      { ...SETTINGS, eventLogs: false, helmReleaseEvents: false },
      logger,
      {
        failure: () => undefined,
        failing: () => undefined,
      },
    );
    const stop = new AbortController();
    const running = watcher.run(stop.signal);
    cleanup.push(async () => {
      stop.abort();
      await running;
    });
    await passHeld;
    // Another failed Job, in another namespace and with a uid of its own (the fixtures share theirs).
    const second = relocated(admitted('failed-oomkilled'), Date.now(), 'billing');
    (second.hook as KubeItem).metadata.uid = '0b5e2d7c-9a41-4f3e-8c6d-1e2f3a4b5c6d';
    seedWhy(fake, second);
    // The watch event reaches the watcher while its pass is still held.
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    const onJobs = () => ours(fake).filter((event) => (event.regarding as { kind: string }).kind === 'Job');
    await eventually(() => onJobs().length === 2, 'the second hook explained at once', 4000);
    expect(
      onJobs()
        .map((event) => (event.regarding as { namespace: string }).namespace)
        .sort(),
    ).toEqual(['billing', 'shop']);
  });

  it('posts nothing for a hook that succeeded, and reads no Pods or Events of it', async () => {
    const fake = await cluster(admitted('succeeded'));
    const { failing } = lead(fake);
    await eventually(() => failing.length > 0, 'a pass');
    expect(ours(fake)).toEqual([]);
    expect(
      fake.requests.filter(
        (request) => request.path.includes('/events') || request.query.labelSelector?.startsWith('job-name'),
      ),
    ).toEqual([]);
    expect(failing.at(-1)).toBe(0);
  });

  /** A failed-exit-code hook that asks for log lines, its container's termination message set to `message`. */
  function withLogLines(message: string): WhyFixture {
    return admitted('failed-exit-code', (each) => {
      const hook = each.hook as KubeItem;
      hook.metadata.annotations = { ...(hook.metadata.annotations ?? {}), 'hookguard.io/event-logs': 'true' };
      type Terminated = { state: { terminated?: { message?: string } } };
      for (const pod of each.pods as Array<{ status: { containerStatuses: Terminated[] } }>)
        for (const status of pod.status.containerStatuses)
          if (status.state.terminated) status.state.terminated.message = message;
    });
  }

  it('with log lines allowed and asked for, carries their tail redacted, escaped and cut to 1024 bytes of UTF-8', async () => {
    const secretLine = 'Authorization: Bearer abc.def password=hunter2 token=ghp_0123456789abcdefghijABCDEFGHIJ';
    const fake = await cluster(
      withLogLines(`${'Datenbankfehler — 数据库不可用 😀\n'.repeat(60)}${secretLine}\nERROR: migration 42 failed\n`),
    );
    lead(fake, true);
    const events = await eventually(() => ours(fake).length === 2 && ours(fake), 'two Events');
    for (const event of events) {
      const note = String(event.note);
      expect(Buffer.byteLength(note, 'utf8')).toBeLessThanOrEqual(1024);
      expect(note).toContain('Log lines included (redacted) from migrate: …');
      // The end of the log, where the error is, with its line breaks escaped as `hookguard why` shows them.
      expect(note.endsWith('😀\\nAuthorization: [redacted]\\nERROR: migration 42 failed')).toBe(true);
      expect(note).not.toContain('hunter2');
      expect(note).not.toContain('ghp_');
      expect(note).toContain('数据库不可用');
    }
    // Nothing was refused: every note went in on the first POST.
    expect(eventPosts(fake).map((post) => post.status)).toEqual([201, 201]);
  });

  it('redacts the log before it is cut: a password= at the edge of a cut stays hidden', async () => {
    // The last 2 KiB (what the watcher cut the log to before redacting it) begin inside `password`: a cut first leaves
    // `rd=hunter2-horse-staple`, which no pattern knows. What follows redacts short (base64), so the whole redacted log
    // fits the note and nothing else hides such a leak.
    const encoded = `${'QUJD'.repeat(16)}\n`.repeat(31);
    const log = `${'ok\n'.repeat(10)}db login password=hunter2-horse-staple\n${encoded}step done`;
    expect(log.slice(-2048).startsWith('rd=hunter2')).toBe(true);
    const fake = await cluster(withLogLines(log));
    lead(fake, true);
    const events = await eventually(() => ours(fake).length === 2 && ours(fake), 'two Events');
    for (const event of events) {
      const note = String(event.note);
      expect(note).not.toContain('hunter2');
      expect(note).toContain(
        `from migrate: ${'ok\\n'.repeat(10)}db login password=[redacted]\\n${'[redacted]\\n'.repeat(31)}step done`,
      );
    }
  });
});
