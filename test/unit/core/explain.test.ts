// explainHook() beyond the golden fixtures: the threshold's edges, hookguard's guard, input that is not what a
// cluster writes, the Event shapes, a Job between attempts, and hooks Argo CD recorded that are gone.
import { describe, expect, it } from 'vitest';
import { explainHook, explainRecordedHook, FAILING_STATES } from '../../../src/core/explain/index.js';
import { GUARD_CONTAINER_NAME } from '../../../src/core/annotations.js';
import { whyFixture, type WhyFixture } from '../../support/why-fixtures.js';

const at = (fixture: WhyFixture, stuckAfterSeconds: number) =>
  explainHook(fixture, { now: Date.parse(fixture.now), stuckAfterSeconds });

describe('the stuck threshold', () => {
  it('a Pod waiting exactly stuckAfterSeconds is Stuck; a second less, Running with the same reason', () => {
    const fixture = whyFixture('stuck-image-pull'); // waiting for 1195 s
    expect([at(fixture, 1195).state, at(fixture, 1195).reason]).toEqual(['Stuck', 'ImagePullBackOff']);
    expect([at(fixture, 1196).state, at(fixture, 1196).reason]).toEqual(['Running', 'ImagePullBackOff']);
    // The next step is the fix already: a tag that does not exist will not appear by waiting.
    expect(at(fixture, 1196).nextStep).toBe(at(fixture, 1195).nextStep);
  });

  it('a Job refused for 1200 s is Blocked at 1200 and Running at 1201', () => {
    const fixture = whyFixture('blocked-quota');
    expect(at(fixture, 1200).state).toBe('Blocked');
    expect(at(fixture, 1201).state).toBe('Running');
  });

  it('a Job suspended for exactly stuckAfterSeconds is Stuck (it has not run); a second less, Suspended', () => {
    const fixture = whyFixture('stuck-suspended'); // suspended for 1200 s
    expect([at(fixture, 1200).state, at(fixture, 1200).reason]).toEqual(['Stuck', 'Suspended']);
    expect([at(fixture, 1201).state, at(fixture, 1201).reason]).toEqual(['Suspended', 'Suspended']);
  });

  it('a Job with spec.suspend and no Suspended condition yet: Argo CD calls it Progressing, and it is stuck all the same', () => {
    const fixture = whyFixture('stuck-suspended');
    (fixture.hook as { status: Record<string, unknown> }).status = {};
    const explained = at(fixture, 300);
    expect([explained.state, explained.reason, explained.since]).toEqual([
      'Stuck',
      'Suspended',
      '2026-11-27T09:40:00Z',
    ]);
    expect(explained.message).toBe(
      "Job db-migrate is suspended (Kueue queue batch-queue): no Pod runs until it is resumed; Argo CD's health calls it Progressing and a sync waits for it",
    );
  });

  it('only Failed, Stuck and Blocked call for action', () => {
    expect([...FAILING_STATES].sort()).toEqual(['Blocked', 'Failed', 'Stuck']);
  });
});

const GUARD_IMAGE = 'gcr.io/distroless/static-debian12:debug-nonroot';

/** The `running` fixture's Pod with hookguard's guard as its init container, in `guard` state, the hook's waiting. */
function guarded(guard: Record<string, unknown>, phase = 'Pending'): WhyFixture {
  const fixture = whyFixture('running');
  const pod = fixture.pods[0] as { spec: Record<string, unknown>; status: Record<string, unknown> };
  pod.spec.initContainers = [{ name: GUARD_CONTAINER_NAME, image: GUARD_IMAGE, command: ['/busybox/sleep', '10'] }];
  pod.status = {
    phase,
    startTime: '2026-11-27T09:40:01Z',
    conditions: [
      {
        type: 'Initialized',
        status: 'False',
        lastTransitionTime: '2026-11-27T09:40:01Z',
        reason: 'ContainersNotInitialized',
      },
    ],
    initContainerStatuses: [{ name: GUARD_CONTAINER_NAME, image: GUARD_IMAGE, ...guard }],
    containerStatuses: [{ name: 'migrate', state: { waiting: { reason: 'PodInitializing' } } }],
  };
  return fixture;
}

describe("hookguard's guard init container, when it cannot start", () => {
  it("an image not mirrored: the guard is named, with the fix in hookguard's configuration, not the hook's container", () => {
    const fixture = guarded({
      state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${GUARD_IMAGE}"` } },
    });
    fixture.events = [
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'db-migrate-7xk2p.pull', namespace: 'shop', uid: 'e-guard-pull' },
        involvedObject: { kind: 'Pod', name: 'db-migrate-7xk2p', namespace: 'shop' },
        reason: 'Failed',
        type: 'Warning',
        message: `Failed to pull image "${GUARD_IMAGE}": dial tcp 142.250.1.82:443: i/o timeout`,
        source: { component: 'kubelet' },
        firstTimestamp: '2026-11-27T09:40:05Z',
        lastTimestamp: '2026-11-27T09:59:00Z',
      },
    ];
    const explanation = at(fixture, 300);
    expect(explanation).toMatchObject({
      state: 'Stuck',
      reason: 'ImagePullBackOff',
      container: GUARD_CONTAINER_NAME,
      containerRole: 'init',
      image: GUARD_IMAGE,
      message: `hookguard's guard init container hookguard-min-runtime of Pod db-migrate-7xk2p cannot pull image ${GUARD_IMAGE} (ImagePullBackOff)`,
      quoted: `Failed to pull image "${GUARD_IMAGE}": dial tcp 142.250.1.82:443: i/o timeout`,
      nextStep: `hookguard adds it (rule min-runtime), so the hook has not started: mirror image ${GUARD_IMAGE} into a registry the nodes can pull from and set rules.minRuntime.image to it (docs/image.md, the guard image).`,
    });
  });

  it('a command the image lacks (StartError): the guard is named, with the setting to fix', () => {
    const fixture = guarded(
      {
        state: {
          terminated: {
            exitCode: 128,
            reason: 'StartError',
            message:
              'failed to create containerd task: exec: "/busybox/sleep": stat /busybox/sleep: no such file or directory',
            finishedAt: '2026-11-27T09:40:09Z',
          },
        },
      },
      'Failed',
    );
    (fixture.hook as { status: Record<string, unknown> }).status = {
      failed: 1,
      conditions: [
        {
          type: 'Failed',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
          lastTransitionTime: '2026-11-27T09:40:10Z',
        },
      ],
    };
    const explanation = at(fixture, 300);
    expect(explanation).toMatchObject({
      state: 'Failed',
      reason: 'ContainerFailed',
      container: GUARD_CONTAINER_NAME,
      exitCode: 128,
      message:
        "hookguard's guard init container hookguard-min-runtime of Pod db-migrate-7xk2p exited with code 128 (StartError); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)",
      nextStep: `hookguard adds it (rule min-runtime), so the hook has not started: set rules.minRuntime.command to a sleep that rules.minRuntime.image (${GUARD_IMAGE}) has, as the default image has /busybox/sleep.`,
    });
  });
});

describe("hookguard's guard init container is never the cause otherwise", () => {
  it('a guard that failed is passed over for the Pod itself', () => {
    const fixture = whyFixture('failed-init-container');
    const pod = fixture.hook as { status: { initContainerStatuses: Array<Record<string, unknown>> } };
    pod.status.initContainerStatuses = [
      {
        name: GUARD_CONTAINER_NAME,
        state: { terminated: { exitCode: 1, reason: 'Error', finishedAt: '2026-11-27T09:40:08Z' } },
      },
    ];
    const explanation = at(fixture, 300);
    expect(explanation.container).toBeUndefined();
    expect(explanation.message).toBe('Pod schema-check failed');
  });

  it('a guard still waiting leaves the Pod Starting, not Stuck on the guard', () => {
    const fixture = whyFixture('running');
    const pod = fixture.pods[0] as { status: Record<string, unknown> };
    pod.status = {
      phase: 'Pending',
      startTime: '2026-11-27T09:59:50Z',
      initContainerStatuses: [
        { name: GUARD_CONTAINER_NAME, state: { running: { startedAt: '2026-11-27T09:59:51Z' } } },
      ],
      containerStatuses: [{ name: 'migrate', state: { waiting: { reason: 'PodInitializing' } } }],
    };
    const explanation = at(fixture, 300);
    expect([explanation.state, explanation.reason, explanation.container]).toEqual(['Running', 'Starting', 'migrate']);
  });
});

describe('input that is not what a cluster writes', () => {
  it('no hook, junk Pods and Events: a Job with no Pod yet, no exception', () => {
    expect(
      explainHook({ hook: null, pods: [1, 'x', null], events: [null, {}, []] }, { now: 0, stuckAfterSeconds: 300 }),
    ).toEqual({
      kind: 'Job',
      name: '<unnamed>',
      state: 'Running',
      reason: 'Starting',
      message: 'Job <unnamed> has no Pod yet',
      nextStep: 'Wait: it is called stuck after 300s.',
    });
  });

  it('a termination message longer than the kubelet keeps is cut at 4096 characters', () => {
    const fixture = whyFixture('failed-oomkilled');
    const pod = fixture.pods[0] as {
      status: { containerStatuses: Array<{ state: { terminated: Record<string, unknown> } }> };
    };
    const status = pod.status.containerStatuses[0];
    if (status) status.state.terminated.message = 'x'.repeat(10_000);
    expect(at(fixture, 300).terminationMessage).toBe(`${'x'.repeat(4096)}…`);
  });

  it('a Job with no Pod for longer than the threshold and no Event: Stuck, NoPods, naming where to look', () => {
    const fixture = whyFixture('blocked-quota');
    fixture.events = [];
    expect(at(fixture, 300)).toMatchObject({
      state: 'Stuck',
      reason: 'NoPods',
      message: 'Job db-migrate has no Pod and no Event says why',
      nextStep: "Read the Job's Events (kubectl events -n shop --for job/db-migrate) and the job controller's log.",
    });
  });

  it('a Job another controller manages (spec.managedBy) is named as such', () => {
    const fixture = whyFixture('blocked-quota');
    fixture.events = [];
    (fixture.hook as { spec: Record<string, unknown> }).spec.managedBy = 'kueue.x-k8s.io/multikueue';
    expect(at(fixture, 300)).toMatchObject({
      message: 'Job db-migrate has no Pod: it is managed by kueue.x-k8s.io/multikueue, not the built-in job controller',
      nextStep: 'Check kueue.x-k8s.io/multikueue, which runs this Job.',
    });
  });
});

describe('Events', () => {
  it('an events.k8s.io/v1 Event written with eventTime and a series (no deprecated timestamps) dates the refusal', () => {
    const fixture = whyFixture('blocked-quota');
    const [event] = fixture.events as Array<Record<string, unknown>>;
    fixture.events = [
      {
        ...event,
        eventTime: '2026-11-27T09:50:00.000000Z',
        series: { count: 9, lastObservedTime: '2026-11-27T09:59:00.000000Z' },
        deprecatedFirstTimestamp: null,
        deprecatedLastTimestamp: null,
        deprecatedCount: 0,
      },
    ];
    expect(at(fixture, 300)).toMatchObject({ state: 'Blocked', since: '2026-11-27T09:50:00.000000Z', forSeconds: 600 });
  });

  it("the recorder's combined Event (the tenth refusal on): what the latest try was told, without the recorder's prefix", () => {
    const fixture = whyFixture('blocked-quota');
    const [event] = fixture.events as Array<Record<string, unknown>>;
    const note = String(event?.note);
    fixture.events = [{ ...event, note: `(combined from similar events): ${note}`, deprecatedCount: 16 }];
    expect(at(fixture, 300)).toMatchObject({
      state: 'Blocked',
      blockedBy: 'ResourceQuota',
      message: `Job db-migrate cannot create its Pod: ${note}`,
      quoted: note,
      nextStep: "Raise ResourceQuota compute-resources in shop or lower the hook's requests and limits.",
    });
  });

  it('an Event about another object is not quoted', () => {
    const fixture = whyFixture('stuck-image-pull');
    for (const event of fixture.events as Array<Record<string, Record<string, unknown>>>) {
      if (event.involvedObject) event.involvedObject.name = 'someone-else';
      if (event.regarding) event.regarding.name = 'someone-else';
    }
    expect(at(fixture, 300)).toMatchObject({
      quoted: 'Back-off pulling image "registry.example.com/shop/migrate:2.4.l"',
      quotedFrom: 'container status',
    });
  });
});

describe('a Job past its deadline', () => {
  it('with a Pod left that waited for its image: the deadline, and why it was slow', () => {
    const fixture = whyFixture('failed-deadline');
    fixture.pods = whyFixture('stuck-image-pull').pods;
    fixture.events = [...fixture.events, ...whyFixture('stuck-image-pull').events];
    expect(at(fixture, 300)).toMatchObject({
      state: 'Failed',
      reason: 'DeadlineExceeded',
      pod: 'db-migrate-x2v7c',
      container: 'migrate',
      image: 'registry.example.com/shop/migrate:2.4.l',
      message:
        'Job db-migrate failed: DeadlineExceeded (Job was active longer than specified deadline); container migrate of Pod db-migrate-x2v7c cannot pull image registry.example.com/shop/migrate:2.4.l (ImagePullBackOff)',
      nextStep:
        'Check that image registry.example.com/shop/migrate:2.4.l exists and that the Pod may pull it (the tag, imagePullSecrets, registry access). Then rerun the hook.',
    });
  });
});

describe('a Job between attempts', () => {
  it('a failed Pod and a new one running: Running, saying what the last attempt did', () => {
    const fixture = whyFixture('failed-exit-code');
    const job = fixture.hook as { status: Record<string, unknown>; spec: Record<string, unknown> };
    job.status = { startTime: '2026-11-27T09:40:00Z', active: 1, failed: 1 };
    job.spec.backoffLimit = 3;
    const running = whyFixture('running').pods[0] as { metadata: Record<string, unknown> };
    fixture.pods = [fixture.pods[1], running];
    expect(at(fixture, 300)).toMatchObject({
      state: 'Running',
      reason: 'Running',
      message:
        'Pod db-migrate-7xk2p is running; earlier attempt failed: container migrate of Pod db-migrate-9tq2w exited with code 1 (Error) (1 failed of backoffLimit 3)',
    });
  });
});

describe('explainRecordedHook: a hook Argo CD recorded whose object is gone', () => {
  const resource = (hookPhase: string | undefined) => ({
    group: 'batch',
    kind: 'Job',
    namespace: 'shop',
    name: 'db-seed',
    hookType: 'PreSync',
    ...(hookPhase ? { hookPhase } : {}),
    message: 'Job has reached the specified backoff limit',
  });
  it.each([
    ['Succeeded', 'Failed', 'Succeeded'],
    ['Failed', 'Failed', 'Failed'],
    ['Error', 'Error', 'Failed'],
    ['Running', 'Running', 'Stuck'],
    [undefined, 'Running', 'Stuck'],
    ['Running', 'Failed', 'Failed'],
  ])('hook %s, operation %s: %s', (hookPhase, operationPhase, state) => {
    const explanation = explainRecordedHook(resource(hookPhase), operationPhase);
    expect([explanation.state, explanation.reason, explanation.kind, explanation.namespace, explanation.name]).toEqual([
      state,
      'Deleted',
      'Job',
      'shop',
      'db-seed',
    ]);
  });
  it('waiting for a hook that is gone names argo-cd#21055', () => {
    expect(explainRecordedHook(resource('Running'), 'Running')).toEqual({
      kind: 'Job',
      namespace: 'shop',
      name: 'db-seed',
      state: 'Stuck',
      reason: 'Deleted',
      message:
        'Job db-seed no longer exists; Argo CD recorded it as Running: Job has reached the specified backoff limit',
      nextStep: 'Argo CD waits for a hook that is gone: terminate the operation and sync again (argo-cd#21055).',
      quoted: 'Job has reached the specified backoff limit',
      quotedFrom: 'Argo CD syncResult',
    });
  });
});
