// Argo CD's own sync engine against the real control plane (issue 41): argo-sync (test/cluster/tools/argo-sync) runs a
// sync operation through the gitops-engine each Argo CD release pins, as that release's application controller does,
// impersonating the controller's ServiceAccount. Each seed runs twice: in a namespace out of hookguard's reach, and in
// one hookguard's webhooks see. hookguard learns the Argo CD version as in a real cluster, from the application
// controller's image (a StatefulSet at zero replicas in namespace argocd, which discovery watches).
import { BatchV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { GUARD_CONTAINER_NAME } from '../../src/core/annotations.js';
import { cliPath } from '../support/cli.js';
import {
  argoSync,
  grantControllerRole,
  hookJob,
  installArgoCd,
  removeArgoCd,
  scratch,
  succeeded,
  sync,
} from './support/argo-sync.js';
import { adminApi, describeCluster, kubectl, kubectlJson, run, waitUntil } from './support/cluster.js';

interface LiveJob {
  metadata: { finalizers?: string[]; deletionTimestamp?: string };
  spec: { template: { spec: { initContainers?: Array<{ name: string }> } }; ttlSecondsAfterFinished?: number };
}

const appConfig = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app' }, data: { ready: 'true' } };

describeCluster("Argo CD's sync engine with and without hookguard (the real gitops-engine)", () => {
  const space = scratch();
  let engines: string[] = [];

  beforeAll(async () => {
    engines = (await run(argoSync, ['--versions'])).stdout.trim().split('\n');
    await grantControllerRole();
  });

  afterAll(async () => {
    await removeArgoCd();
    await space.cleanup();
  });

  /**
   * Runs `guarded`, a sync that creates hook Job `hook` in `ns`, with "Argo CD VERSION" installed: the cluster has one
   * controller StatefulSet, and hookguard decides by the version it names. It decides at the Job's CREATE (the
   * UPDATEs that follow change only its finalizers and status, which it admits at every version), so the next version
   * is installed once the engine has created the Job, and the guarded syncs overlap from there. The syncs out of
   * hookguard's reach need no version and run beside.
   */
  let argoCdInUse: Promise<unknown> = Promise.resolve();
  function withArgoCd<T>(version: string, ns: string, hook: string, guarded: () => Promise<T>): Promise<T> {
    const installed = argoCdInUse.then(() => installArgoCd(version));
    const result = installed.then(guarded);
    let settled = false;
    void result
      .finally(() => {
        settled = true;
      })
      .catch(() => undefined);
    // The wait starts once the version is installed; a sync that ends without creating the Job ends it too.
    argoCdInUse = installed
      .then(() =>
        waitUntil(`the engine of Argo CD ${version} to create Job ${ns}/${hook}`, async () =>
          settled ? true : adminApi(BatchV1Api).readNamespacedJob({ name: hook, namespace: ns }),
        ),
      )
      .catch(() => undefined);
    return result;
  }

  const job = (ns: string, name: string) => kubectlJson<LiveJob>(['get', 'job', name, '-n', ns]);

  it('lists the engines it carries', () => {
    expect(engines).toEqual(['2.14.21', '2.14.3', '3.0.0', '3.1.16', '3.2.12']);
  });

  // The race of kyverno#13149 and argo-cd#23226 (a hook done before Argo CD looks keeps the finalizer) did not show
  // here: the engine removed the finalizer and the sync completed, with a round on every change and with one every 5 s
  // (docs/testing.md). The test holds what the engines did, and that hookguard's guard changes none of it.
  it.concurrent.for(['3.0.0', '3.1.16', '3.2.12', '2.14.3'])(
    'Argo CD %s: a PreSync hook Job done in one second completes, and leaves no finalizer',
    { timeout: 300_000 },
    async (engine, { expect }) => {
      const dir = space.manifests(hookJob('fast-hook'), appConfig);
      const syncIn = async (ns: string) => {
        expect(await sync(engine, ns, dir, 90)).toEqual(succeeded('fast-hook'));
        const live = await job(ns, 'fast-hook');
        expect(live.metadata.finalizers ?? []).toEqual([]);
        return (live.spec.template.spec.initContainers ?? []).map((container) => container.name);
      };
      expect(await syncIn(await space.namespace(false))).toEqual([]);
      // hookguard's guard (min-runtime), on the versions that carry the finalizer.
      const guarded = await space.namespace(true);
      expect(await withArgoCd(engine, guarded, 'fast-hook', () => syncIn(guarded))).toEqual([GUARD_CONTAINER_NAME]);
    },
  );

  // argo-cd#21055, the reason the hook finalizer exists: without it, a Job the TTL controller deletes before the
  // controller's next look leaves the sync waiting for good. A controller that looks every 5 s (a busy one) is enough.
  it.concurrent(
    'Argo CD 2.14.21 (no hook finalizer): a hook Job with ttlSecondsAfterFinished 0 hangs the sync; the TTL floor ends it',
    async ({ expect }) => {
      const dir = space.manifests(hookJob('short-lived', { ttl: 0 }), appConfig);
      const bare = await space.namespace(false);
      expect(await sync('2.14.21', bare, dir, 45, ['--observe-every', '5'])).toEqual({
        phase: 'Running',
        message: 'waiting for completion of hook batch/Job/short-lived',
        hooks: [{ kind: 'Job', name: 'short-lived', phase: 'Running', message: 'job.batch/short-lived created' }],
      });
      const guarded = await space.namespace(true);
      expect(
        await withArgoCd('2.14.21', guarded, 'short-lived', () =>
          sync('2.14.21', guarded, dir, 90, ['--observe-every', '5']),
        ),
      ).toEqual(succeeded('short-lived'));
      expect((await job(guarded, 'short-lived')).spec.ttlSecondsAfterFinished).toBe(60);
    },
    300_000,
  );

  // With the finalizer, the same Job waits for the engine: deleted by its TTL, it stays until the engine has its result.
  // Out of hookguard's reach, so whichever Argo CD version hookguard knows of meanwhile does not matter.
  it.concurrent.for(['3.0.0', '3.1.16', '3.2.12', '2.14.3'])(
    'Argo CD %s: the hook finalizer keeps a ttlSecondsAfterFinished 0 Job until the engine has read it',
    { timeout: 240_000 },
    async (engine, { expect }) => {
      const dir = space.manifests(hookJob('short-lived', { ttl: 0 }), appConfig);
      const bare = await space.namespace(false);
      expect(await sync(engine, bare, dir, 60, ['--observe-every', '5'])).toEqual(succeeded('short-lived'));
    },
  );

  // pkg/health as an oracle for what hookguard says Argo CD reports: the Job states made by the real Job controller
  // (or, for a Job another controller manages, left alone by it), read by each engine's GetResourceHealth and by
  // `hookguard why`.
  it.concurrent('says of each Job state what hookguard says Argo CD reports', async ({ expect }) => {
    const ns = await space.namespace(false);
    const jobs: Array<[string, object]> = [
      ['suspended', { suspend: true }],
      // The built-in controller leaves a Job managed by another alone (KEP-4368): suspended, it never gets a condition.
      ['suspended-elsewhere', { suspend: true, managedBy: 'kueue.x-k8s.io/multikueue' }],
      ['complete', {}],
    ];
    for (const [name, spec] of jobs) {
      const manifest = hookJob(name);
      Object.assign(manifest.spec, spec);
      await kubectl(['create', '-n', ns, '-f', '-'], stringify(manifest));
    }
    await waitUntil('the Job controller to write Suspended and Complete', async () => {
      const conditions = await kubectl([
        'get',
        'jobs',
        '-n',
        ns,
        '-o',
        'jsonpath={.items[*].status.conditions[*].type}',
      ]);
      return conditions.includes('Suspended') && conditions.includes('Complete');
    });
    const live = await Promise.all(jobs.map(([name]) => kubectl(['get', 'job', name, '-n', ns, '-o', 'yaml'])));
    const healthByEngine: Record<string, Record<string, string>> = {};
    for (const engine of engines) {
      const health = await run(argoSync, ['--argocd', engine, '--health', '-'], { input: live.join('---\n') });
      expect(health.status, health.stderr).toBe(0);
      healthByEngine[engine] = Object.fromEntries(
        health.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Json)
          .map((line) => [line.name, `${String(line.status)}: ${String(line.message)}`]),
      );
    }
    // The same at every engine (pkg/health/health_job.go), and what `why` says Argo CD's health calls the Job.
    const expected = {
      complete: 'Healthy: Reached expected number of succeeded pods',
      suspended: 'Suspended: ',
      'suspended-elsewhere': 'Progressing: ',
    };
    expect(healthByEngine).toEqual(Object.fromEntries(engines.map((engine) => [engine, expected])));
    for (const [name, status] of [
      ['suspended', 'Suspended'],
      ['suspended-elsewhere', 'Progressing'],
    ] as const) {
      const why = await run(process.execPath, [cliPath, 'why', `job/${name}`, '-n', ns, '-o', 'json']);
      const [hook] = (JSON.parse(why.stdout) as { hooks: Json[] }).hooks;
      expect(hook?.message).toBe(
        `Job ${name} is suspended: no Pod runs until it is resumed; Argo CD's health calls it ${status} and a sync waits for it`,
      );
    }
  });
});

type Json = Record<string, unknown>;
