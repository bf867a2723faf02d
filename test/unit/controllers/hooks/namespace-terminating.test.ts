// A hook whose namespace is being deleted: the API server refuses its Event with 403 NamespaceTerminating (the body
// below is what kube-apiserver v1.37.2 answered, test/cluster, 2026-12-06); the watcher neither warns nor tries again.
import { ApiException, KubeConfig, type EventsV1Event } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { HookWatchClient } from '../../../../src/controllers/hooks/client.js';
import { HookWatcher } from '../../../../src/controllers/hooks/watcher.js';
import type { KubeObject } from '../../../../src/core/types.js';
import { namespaceTerminating } from '../../../../src/kube/api-failure.js';
import { capturedLogger } from '../../../support/log-sink.js';
import { relocated, whyFixture } from '../../../support/why-fixtures.js';

const TERMINATING = JSON.stringify({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message:
    'events.events.k8s.io "x" is forbidden: unable to create new content in namespace shop because it is being terminated',
  reason: 'Forbidden',
  details: {
    name: 'x',
    group: 'events.k8s.io',
    kind: 'events',
    causes: [
      { reason: 'NamespaceTerminating', message: 'namespace shop is being terminated', field: 'metadata.namespace' },
    ],
  },
  code: 403,
});
/** What RBAC's refusal looks like: a 403 with no cause. */
const RBAC = JSON.stringify({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message:
    'events.events.k8s.io is forbidden: User "system:serviceaccount:hookguard:hookguard" cannot create resource "events" in API group "events.k8s.io" in the namespace "shop"',
  reason: 'Forbidden',
  details: { group: 'events.k8s.io', kind: 'events' },
  code: 403,
});

const refusal = (body: string) => new ApiException(403, `HTTP-Code: 403\nMessage: …\nBody: ${body}`, body, {});

describe('namespaceTerminating', () => {
  it('tells a namespace being deleted from a grant RBAC lacks', () => {
    expect(namespaceTerminating(refusal(TERMINATING))).toBe(true);
    expect(namespaceTerminating(refusal(RBAC))).toBe(false);
    expect(namespaceTerminating(new ApiException(422, 'x', TERMINATING, {}))).toBe(false);
    expect(namespaceTerminating(new Error('socket hang up'))).toBe(false);
  });
});

describe('the hook watcher, when the hook namespace is being deleted', () => {
  function watcherWith(error: unknown) {
    const fixture = relocated(whyFixture('failed-exit-code'), Date.now());
    const posts: EventsV1Event[] = [];
    const client: HookWatchClient = {
      listHooks: async () => ({ items: [], resourceVersion: '1' }),
      evidence: async () => fixture,
      createEvent: async (_namespace, event) => {
        posts.push(event);
        throw error;
      },
      getApplication: async () => undefined,
      getHelmRelease: async () => undefined,
      namespaceAnnotations: async () => ({}),
      logTail: async () => '',
    };
    const { logger, lines } = capturedLogger('debug');
    const failing: number[] = [];
    const watcher = new HookWatcher(
      new KubeConfig(),
      client,
      {
        stuckAfterSeconds: 300,
        // The least the config allows; the passes below come sooner than that, and one is made to come later.
        recheckSeconds: 5,
        eventLogs: false,
        helmReleaseEvents: false,
        reportingInstance: 'hookguard-0',
        applicationLookup: { instanceLabels: [], controlPlaneNamespaces: [] },
        reflector: { backoff: { initialMs: 10, maxMs: 10 }, watchTimeoutSeconds: 30 },
      },
      logger,
      { failure: () => undefined, failing: (count) => failing.push(count) },
      () => clock,
    );
    let clock = Date.now();
    // What the Job reflector would hand it.
    (watcher as unknown as { objects: { Job: KubeObject[] } }).objects.Job = [fixture.hook as KubeObject];
    return {
      posts,
      lines,
      failing,
      pass: async (laterMs = 0) => {
        clock += laterMs;
        await watcher.pass();
      },
    };
  }

  it('neither warns nor tries again', async () => {
    const { posts, lines, failing, pass } = watcherWith(refusal(TERMINATING));
    await pass();
    await pass(60_000);
    expect(posts).toHaveLength(1);
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "the hook's namespace is being deleted: no Event", hook: 'Job shop/db-migrate' }),
    );
    expect(failing).toEqual([0, 0]);
  });

  it('still warns and tries again after a refusal RBAC made', async () => {
    const { posts, lines, pass } = watcherWith(refusal(RBAC));
    await pass();
    await pass(60_000);
    expect(posts).toHaveLength(2);
    expect(
      lines.filter((line) => line.msg === 'could not explain a hook or post its Event; trying again later'),
    ).toHaveLength(2);
  });
});
