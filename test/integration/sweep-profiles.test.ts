// The sweep's profiles, Events and summary against a stand-in for kube-apiserver (test/support/fake-apiserver.ts): the
// argo-workflows profile reads the pod's Workflow (argoproj.io/v1alpha1) there, every removal and failed removal
// creates an events.k8s.io/v1 Event there, checked as kube-apiserver checks them.
import { afterEach, describe, expect, it } from 'vitest';
import type { SweepProfileId } from '../../src/config/keys.js';
import {
  argoWorkflow,
  argoWorkflowPod,
  NODE_ID,
  WORKFLOW_FINALIZER,
  WORKFLOW_NAME,
  type Mutable,
} from '../support/argo-workflows.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { HOOK_FINALIZER } from '../support/objects.js';
import { KEEP, stuckJob, stuckPod } from '../support/stuck-hooks.js';
import { ACTOR, REPORTING_INSTANCE, runSweep } from '../support/sweep-run.js';

let servers: FakeApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  servers = [];
});

async function emptyCluster(): Promise<FakeApiServer> {
  const server = await new FakeApiServer().start();
  servers.push(server);
  return server;
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
const POD = 'hello-world-x7k2p-main-2841577425';
const WORKFLOW_PATH = `/apis/argoproj.io/v1alpha1/namespaces/argo/workflows/${WORKFLOW_NAME}`;
const patches = (server: FakeApiServer) => server.requests.filter((request) => request.method === 'PATCH');

/** A finished workflow pod deleting for 15 minutes, holding someone else's finalizer too. */
function workflowPod(change: (pod: Mutable) => void = () => {}): Mutable {
  const pod = argoWorkflowPod({ deletionTimestamp: minutesAgo(15), finalizers: [KEEP, WORKFLOW_FINALIZER] });
  change(pod);
  return pod;
}

function workflow(change: (workflow: Mutable) => void): Mutable {
  const found = argoWorkflow();
  change(found);
  return found;
}

describe('the argo-workflows profile, against the stand-in', () => {
  it.each<[string, Mutable | undefined]>([
    ['its Workflow is gone', undefined],
    ['its Workflow has another UID', workflow((w) => (w.metadata.uid = 'f00d'))],
    ['its Workflow is being deleted', workflow((w) => (w.metadata.deletionTimestamp = minutesAgo(1)))],
    [
      'its Workflow is labelled completed',
      workflow((w) => (w.metadata.labels['workflows.argoproj.io/completed'] = 'true')),
    ],
    ['its node is in a final phase', workflow((w) => (w.status.nodes[NODE_ID].phase = 'Succeeded'))],
  ])('removes only workflows.argoproj.io/status when %s', async (_name, found) => {
    const server = await emptyCluster();
    server.put(workflowPod());
    if (found) server.put(found);
    const { report } = await runSweep(server, { profiles: ['argo-workflows'] });
    expect(report.results).toEqual([
      expect.objectContaining({
        name: POD,
        profile: 'argo-workflows',
        finalizer: WORKFLOW_FINALIZER,
        action: 'removed',
      }),
    ]);
    expect(server.get('Pod', 'argo', POD)?.metadata.finalizers).toEqual([KEEP]);
    expect(patches(server).map((request) => request.body)).toEqual([
      [
        { op: 'test', path: '/metadata/finalizers', value: [KEEP, WORKFLOW_FINALIZER] },
        { op: 'replace', path: '/metadata/finalizers', value: [KEEP] },
      ],
    ]);
    expect(server.requests.filter((request) => request.path === WORKFLOW_PATH)).toHaveLength(1);
  });

  it.each<[string, Mutable, Mutable | undefined, RegExp]>([
    [
      'its Workflow still runs its node',
      workflowPod(),
      argoWorkflow(),
      /node .* is Running: its result is not recorded yet$/,
    ],
    [
      'its node finished but its result is not synced yet',
      workflowPod(),
      workflow((w) => Object.assign(w.status.nodes[NODE_ID], { phase: 'Succeeded', taskResultSynced: false })),
      /taskResultSynced: false\)$/,
    ],
    ['it still runs', workflowPod((p) => (p.status.phase = 'Running')), undefined, /^Pod Running, not finished/],
    [
      'it has been deleting for less than the grace period',
      workflowPod((p) => (p.metadata.deletionTimestamp = minutesAgo(5))),
      undefined,
      /under 10m0s: Argo Workflows removes it itself/,
    ],
  ])('leaves the pod alone when %s, and says why', async (_name, pod, found, reason) => {
    const server = await emptyCluster();
    server.put(pod);
    if (found) server.put(found);
    const before = server.get('Pod', 'argo', POD);
    const { report } = await runSweep(server, { profiles: ['argo-workflows'] });
    expect(report.results).toEqual([
      expect.objectContaining({ name: POD, action: 'skipped', reasons: [expect.stringMatching(reason)] }),
    ]);
    expect(server.get('Pod', 'argo', POD)).toEqual(before);
    expect(patches(server)).toEqual([]);
    expect(server.events).toEqual([]);
  });

  it('reads the Workflow only of a pod that passes the checks of the pod itself', async () => {
    const server = await emptyCluster();
    server.put(workflowPod((p) => (p.status.phase = 'Running')));
    await runSweep(server, { profiles: ['argo-workflows'] });
    expect(server.requests.filter((request) => request.path.includes('/workflows/'))).toEqual([]);
  });

  it('reports a Workflow it cannot read (403) as failed, and changes nothing', async () => {
    const server = await emptyCluster();
    server.put(workflowPod());
    server.fail({ method: 'GET', pathIncludes: '/workflows/', status: 403 });
    const { report } = await runSweep(server, { profiles: ['argo-workflows'] });
    expect(report.results).toEqual([
      expect.objectContaining({
        action: 'failed',
        reasons: [expect.stringMatching(/^could not be judged: HTTP 403: /)],
      }),
    ]);
    expect(patches(server)).toEqual([]);
    expect(server.get('Pod', 'argo', POD)?.metadata.finalizers).toEqual([KEEP, WORKFLOW_FINALIZER]);
  });
});

describe('a profile removes its own finalizer and no other', () => {
  /** A stuck hook Job, a stuck hook Pod, a stuck workflow pod, a Pod stuck on both, and one on neither. */
  function mixedCluster(server: FakeApiServer): void {
    server.put(stuckJob({ name: 'hook-job', deletedSecondsAgo: 360, finalizers: [KEEP, HOOK_FINALIZER] }));
    server.put(stuckPod({ name: 'hook-pod', deletedSecondsAgo: 360, finalizers: [HOOK_FINALIZER, KEEP] }));
    server.put(workflowPod());
    // A workflow step that is also an Argo CD hook: both finalizers, both stuck.
    server.put(
      argoWorkflowPod({
        name: 'both',
        deletionTimestamp: minutesAgo(15),
        finalizers: [HOOK_FINALIZER, KEEP, WORKFLOW_FINALIZER],
        annotations: { 'argocd.argoproj.io/hook': 'PostSync', 'workflows.argoproj.io/node-id': NODE_ID },
      }),
    );
    server.put(stuckPod({ name: 'keep-only', deletedSecondsAgo: 3000, finalizers: [KEEP] }));
  }

  it.each<[SweepProfileId[], Record<string, string[] | undefined>]>([
    [
      ['argocd-hook'],
      {
        'hook-job': [KEEP],
        'hook-pod': [KEEP],
        [POD]: [KEEP, WORKFLOW_FINALIZER],
        both: [KEEP, WORKFLOW_FINALIZER],
        'keep-only': [KEEP],
      },
    ],
    [
      ['argo-workflows'],
      {
        'hook-job': [KEEP, HOOK_FINALIZER],
        'hook-pod': [HOOK_FINALIZER, KEEP],
        [POD]: [KEEP],
        both: [HOOK_FINALIZER, KEEP],
        'keep-only': [KEEP],
      },
    ],
    [
      ['argocd-hook', 'argo-workflows'],
      { 'hook-job': [KEEP], 'hook-pod': [KEEP], [POD]: [KEEP], both: [KEEP], 'keep-only': [KEEP] },
    ],
  ])('with --profile %j', async (profiles, finalizers) => {
    const server = await emptyCluster();
    mixedCluster(server);
    const { report } = await runSweep(server, { profiles });
    const after = Object.fromEntries(
      ['hook-job', 'hook-pod', POD, 'both', 'keep-only'].map((name) => [
        name,
        (server.get('Job', 'apps', name) ?? server.get('Pod', 'apps', name) ?? server.get('Pod', 'argo', name))
          ?.metadata.finalizers,
      ]),
    );
    expect(after).toEqual(finalizers);
    // Each patch takes out exactly one finalizer the run's profiles handle, and nothing else.
    for (const request of patches(server)) {
      const [test, replace] = request.body as Array<{ value: string[] }>;
      const removed = test!.value.filter((finalizer) => !replace!.value.includes(finalizer));
      expect(removed).toHaveLength(1);
      expect(profiles.map((profile) => (profile === 'argocd-hook' ? HOOK_FINALIZER : WORKFLOW_FINALIZER))).toContain(
        removed[0],
      );
    }
    expect(report.results.every((result) => profiles.includes(result.profile))).toBe(true);
    // Objects holding no finalizer of the run's profiles are never read in full.
    expect(server.requests.some((request) => request.path.endsWith('/keep-only'))).toBe(false);
    // A run for Pods only does not list Jobs.
    expect(server.requests.some((request) => request.path === '/apis/batch/v1/jobs')).toBe(
      profiles.includes('argocd-hook'),
    );
  });

  it.each<[SweepProfileId, string, () => Mutable | Record<string, unknown>, string]>([
    [
      'argocd-hook',
      'Job',
      () => stuckJob({ name: 'x', deletedSecondsAgo: 360, finalizers: [KEEP, HOOK_FINALIZER] }),
      HOOK_FINALIZER,
    ],
    ['argo-workflows', 'Pod', () => workflowPod((p) => (p.metadata.name = 'x')), WORKFLOW_FINALIZER],
  ])(
    '%s: keeps a finalizer added meanwhile (the test op fails with 422; judged again on the new list)',
    async (profile, kind, object, finalizer) => {
      const server = await emptyCluster();
      const created = server.put(object());
      const namespace = created.metadata.namespace ?? '';
      let raced = false;
      server.beforePatch = () => {
        if (raced) return;
        raced = true;
        server.modify(kind, namespace, 'x', (changed) =>
          (changed.metadata.finalizers as string[]).push('example.com/late'),
        );
      };
      const { report } = await runSweep(server, { profiles: [profile] });
      expect(patches(server).map((request) => request.status)).toEqual([422, 200]);
      expect(report.results).toEqual([
        expect.objectContaining({ action: 'removed', finalizersBefore: [KEEP, finalizer, 'example.com/late'] }),
      ]);
      expect(server.get(kind, namespace, 'x')?.metadata.finalizers).toEqual([KEEP, 'example.com/late']);
    },
  );

  it.each<[SweepProfileId, string, () => Mutable | Record<string, unknown>, string]>([
    [
      'argocd-hook',
      'Job',
      () => stuckJob({ name: 'x', deletedSecondsAgo: 360, finalizers: [KEEP, HOOK_FINALIZER] }),
      HOOK_FINALIZER,
    ],
    ['argo-workflows', 'Pod', () => workflowPod((p) => (p.metadata.name = 'x')), WORKFLOW_FINALIZER],
  ])(
    '%s: leaves the object alone when its owner removed the finalizer meanwhile',
    async (profile, kind, object, finalizer) => {
      const server = await emptyCluster();
      const created = server.put(object());
      const namespace = created.metadata.namespace ?? '';
      server.beforePatch = (stored) => {
        if ((stored.metadata.finalizers as string[]).includes(finalizer))
          server.modify(kind, namespace, 'x', (changed) => (changed.metadata.finalizers = [KEEP]));
      };
      const { report } = await runSweep(server, { profiles: [profile] });
      expect(report.results).toEqual([
        expect.objectContaining({ action: 'skipped', reasons: [`changed meanwhile: no ${finalizer}`] }),
      ]);
      expect(server.get(kind, namespace, 'x')?.metadata.finalizers).toEqual([KEEP]);
      expect(patches(server).map((request) => request.status)).toEqual([422]);
    },
  );
});

describe('every removal on the record', () => {
  it('creates an Event on each object it removed a finalizer from: who, which, why', async () => {
    const server = await emptyCluster();
    const job = server.put(stuckJob({ name: 'migrate', deletedSecondsAgo: 390, finalizers: [KEEP, HOOK_FINALIZER] }));
    server.put(workflowPod());
    await runSweep(server, { profiles: ['argocd-hook', 'argo-workflows'] });
    const events = server.events;
    expect(events).toHaveLength(2);
    const [onJob, onPod] = events;
    expect(onJob).toEqual({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        name: expect.stringMatching(/^migrate-[a-z0-9]{5}$/),
        generateName: 'migrate-',
        namespace: 'apps',
        uid: expect.any(String),
        resourceVersion: expect.any(String),
        creationTimestamp: expect.any(String),
      },
      eventTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}000Z$/),
      reportingController: 'hookguard.io/sweep',
      reportingInstance: REPORTING_INSTANCE,
      action: 'RemoveFinalizer',
      reason: 'FinalizerRemoved',
      type: 'Normal',
      note: expect.stringMatching(
        new RegExp(
          `^Removed ${HOOK_FINALIZER} \\(hookguard sweep as ${ACTOR}\\): Argo CD PreSync hook; Job Complete; deleting for 6m3\\ds, at least 5m0s\\. Finalizers \\[${KEEP}, ${HOOK_FINALIZER}\\] -> \\[${KEEP}\\]\\.$`,
        ),
      ),
      regarding: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        name: 'migrate',
        namespace: 'apps',
        uid: job.metadata.uid,
        resourceVersion: job.metadata.resourceVersion,
      },
    });
    expect(onPod).toMatchObject({
      metadata: { namespace: 'argo' },
      reason: 'FinalizerRemoved',
      note: expect.stringContaining(
        `Removed ${WORKFLOW_FINALIZER} (hookguard sweep as ${ACTOR}): Argo Workflows pod of Workflow ${WORKFLOW_NAME}`,
      ),
      regarding: {
        apiVersion: 'v1',
        kind: 'Pod',
        name: POD,
        namespace: 'argo',
        uid: '0b6e51f2-77c9-4d3e-a0b4-5e1f9c2d8a70',
      },
    });
  });

  it('creates a Warning Event for a removal that failed, with the reason', async () => {
    const server = await emptyCluster();
    server.put(stuckJob({ name: 'migrate', deletedSecondsAgo: 390 }));
    server.fail({ method: 'PATCH', pathIncludes: '/migrate', status: 500, times: 10 });
    const { report } = await runSweep(server, { retry: { maxAttempts: 2, backoff: { initialMs: 1, maxMs: 2 } } });
    expect(report.results).toEqual([expect.objectContaining({ action: 'failed' })]);
    expect(server.events).toEqual([
      expect.objectContaining({
        reason: 'FinalizerRemovalFailed',
        type: 'Warning',
        note: expect.stringMatching(
          /^Could not remove argocd\.argoproj\.io\/hook-finalizer .*; patch failed: HTTP 500: injected failure 500\.$/,
        ),
      }),
    ]);
  });

  it('keeps going when an Event cannot be written: the removal stands, the summary counts it', async () => {
    const server = await emptyCluster();
    server.put(stuckJob({ name: 'first', deletedSecondsAgo: 390 }));
    server.put(stuckJob({ name: 'second', deletedSecondsAgo: 390 }));
    server.fail({ method: 'POST', pathIncludes: '/events', status: 403 });
    const { report, lines } = await runSweep(server);
    expect(report.results.map((result) => [result.name, result.action])).toEqual([
      ['first', 'removed'],
      ['second', 'removed'],
    ]);
    expect(server.get('Job', 'apps', 'first')).toBeUndefined();
    expect(server.events.map((event) => (event.regarding as { name: string }).name)).toEqual(['second']);
    expect(report.summary.eventsFailed).toBe(1);
    expect(lines.find((line) => line.msg === 'could not write the Event')).toMatchObject({
      level: 40,
      name: 'first',
      reason: 'FinalizerRemoved',
      error: expect.stringMatching(/^HTTP 403: /),
    });
  });

  it('writes no Event in a dry run', async () => {
    const server = await emptyCluster();
    server.put(stuckJob({ name: 'migrate', deletedSecondsAgo: 390 }));
    await runSweep(server, { apply: false });
    expect(server.events).toEqual([]);
  });

  it('ends with one summary line: per profile the candidates and what became of them', async () => {
    const server = await emptyCluster();
    server.put(stuckJob({ name: 'done', deletedSecondsAgo: 390 }));
    server.put(stuckJob({ name: 'running', deletedSecondsAgo: 390, status: { active: 1 } }));
    server.put(stuckJob({ name: 'live' }));
    server.put(workflowPod());
    server.put(argoWorkflow());
    const { lines } = await runSweep(server, { profiles: ['argocd-hook', 'argo-workflows'] });
    const summaries = lines.filter((line) => line.summary !== undefined);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({
      level: 30,
      msg: 'sweep finished',
      summary: {
        dryRun: false,
        namespace: null,
        profiles: {
          'argocd-hook': { candidates: 2, removed: 1, skipped: 1, failed: 0, gone: 0, 'would-remove': 0 },
          'argo-workflows': { candidates: 1, removed: 0, skipped: 1, failed: 0, gone: 0, 'would-remove': 0 },
        },
        listed: { Job: { objects: 3, pages: 1, restarts: 0 }, Pod: { objects: 1, pages: 1, restarts: 0 } },
        eventsFailed: 0,
        durationMs: expect.any(Number),
      },
    });
    expect(lines.at(-1)).toBe(summaries[0]);
  });
});
