// Argo CD's own sync engine against the real control plane (issue 41): argo-sync (test/cluster/tools/argo-sync) runs a
// sync operation through the gitops-engine each Argo CD release pins, as that release's application controller does,
// impersonating the controller's ServiceAccount. Each seed runs twice: in a namespace out of hookguard's reach, and in
// one hookguard's webhooks see. hookguard learns the Argo CD version as in a real cluster, from the application
// controller's image (a StatefulSet at zero replicas in namespace argocd, which discovery watches).
//
// Then a race of Argo CD's hook finalizer made with the same engines: a sync that fails while its hook Job runs. The
// engine puts argocd.argoproj.io/hook-finalizer on every hook it applies (getSyncTasks) and removes it only from hooks
// it has seen complete (Sync, hooksCompleted) or on Terminate(); an apply the API server refuses in the hook's wave
// ends the operation at once (Sync, runTasks failed, setOperationFailed) with the Job still running, and nothing removes
// its finalizer (argo-cd#25916 made the engine do so, in 3.4.0). The next sync's BeforeHookCreation (the default delete policy) deletes the Job, which the
// finalizer keeps, and waits for it for ever (runTasks: deleted, so pending, every round), unless the engine first
// removes what a previous sync left (gitops-engine#770: runTasks, from the engines of 3.0.16, 3.1.4 and 3.2.0).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { GUARD_CONTAINER_NAME } from '../../src/core/annotations.js';
import { cliPath, runCliAsync } from '../support/cli.js';
import {
  argoCdTurns,
  argoSync,
  grantControllerRole,
  hookJob,
  removeArgoCd,
  scratch,
  succeeded,
  sync,
  type Operation,
} from './support/argo-sync.js';
import { describeCluster, kubectl, kubectlJson, run, waitUntil } from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';
import { HOOK_FINALIZER, jobsFinished, steady, sweepToken, SWEEP_ACTOR } from './support/sweep.js';

interface LiveJob {
  metadata: { finalizers?: string[]; deletionTimestamp?: string };
  spec: { template: { spec: { initContainers?: Array<{ name: string }> } }; ttlSecondsAfterFinished?: number };
}

const liveJob = (ns: string, name: string) => kubectlJson<LiveJob>(['get', 'job', name, '-n', ns]);

const appConfig = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app' }, data: { ready: 'true' } };

const HOOK = 'migrate';

/**
 * A ConfigMap of the hook's wave: first with a key the API server refuses (client-side dry-run lets it by), then fixed.
 * Its value is no YAML 1.1 boolean (`on` would be read as true by the engine's YAML 1.1 and refused as not a string).
 */
const settings = (key: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings' },
  data: { [key]: 'enabled' },
});

/** The first sync: the ConfigMap refused, the operation Failed, the hook Job created and left running. */
const FAILED: Operation = {
  phase: 'Failed',
  message:
    "one or more objects failed to apply, reason: ConfigMap \"settings\" is invalid: data[feature flag]: Invalid value: \"feature flag\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
  hooks: [{ kind: 'Job', name: HOOK, phase: 'Running', message: `job.batch/${HOOK} created` }],
};

/** The next sync, on the engines without gitops-engine#770: the Job deleted and held, the operation waiting. */
const WAITING: Operation = { phase: 'Running', message: 'one or more tasks are running', hooks: [] };

/** Long enough for many rounds of the engine (one a second, and one on every change of the Job). */
const WAIT_SECONDS = 15;

describeCluster("Argo CD's sync engine with and without hookguard (the real gitops-engine)", () => {
  const space = scratch();
  const proxies: FaultProxy[] = [];
  const files = mkdtempSync(join(tmpdir(), 'argo-sync-'));
  const sweepConfig = join(files, 'config.yaml');
  let engines: string[] = [];
  let token = '';

  beforeAll(async () => {
    engines = (await run(argoSync, ['--versions'])).stdout.trim().split('\n');
    await grantControllerRole();
    token = await sweepToken();
    writeFileSync(sweepConfig, 'sweep:\n  finishedGraceSeconds: 0\n');
  });

  afterAll(async () => {
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await removeArgoCd();
    await space.cleanup();
    rmSync(files, { recursive: true, force: true });
  });

  // One turn at a time at the installed Argo CD version, for the syncs of both groups below, which run side by side.
  const withArgoCd = argoCdTurns();

  describe.concurrent('syncs', () => {
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
          const live = await liveJob(ns, 'fast-hook');
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
        expect((await liveJob(guarded, 'short-lived')).spec.ttlSecondsAfterFinished).toBe(60);
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

  describe.concurrent('a sync that fails while its hook Job runs', () => {
    const job = (ns: string) => liveJob(ns, HOOK);

    /**
     * A sync that creates the hook Job: in a namespace hookguard sees (`guarded`), with that Argo CD version installed
     * until the Job is created; elsewhere, at once.
     */
    const syncCreating = (engine: string, ns: string, guarded: boolean, dir: string, timeoutSeconds: number) =>
      guarded
        ? withArgoCd(engine, ns, HOOK, () => sync(engine, ns, dir, timeoutSeconds))
        : sync(engine, ns, dir, timeoutSeconds);

    /** The first sync fails; the hook Job completes after it, and keeps the finalizer or not. */
    async function failWhileHookRuns(
      engine: string,
      ns: string,
      guarded = false,
    ): Promise<{ operation: Operation; live: LiveJob }> {
      const dir = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature flag'));
      const operation = await syncCreating(engine, ns, guarded, dir, 60);
      await jobsFinished(ns, { [HOOK]: 'Complete' });
      return { operation, live: await job(ns) };
    }

    /** `hookguard sweep --apply` as the chart's CronJob runs it (its ServiceAccount), with no grace period. */
    async function sweepApply(ns: string): Promise<string> {
      const proxy = await FaultProxy.start();
      proxies.push(proxy);
      const kubeconfig = join(files, `kubeconfig-${ns}`);
      writeFileSync(kubeconfig, proxy.kubeConfig(token).exportConfig());
      const result = await runCliAsync(['sweep', '--apply', '--namespace', ns, '--config', sweepConfig], {
        KUBECONFIG: kubeconfig,
      });
      if (result.status !== 0) throw new Error(`hookguard sweep failed (${result.status}): ${result.stderr}`);
      return steady(result.stdout);
    }

    const swept = (ns: string) =>
      [
        `Job ${ns}/${HOOK}: removed ${HOOK_FINALIZER} (Argo CD Sync hook; Job Complete; deleting for AGE, at least 0s; no Application found (argocd/argo-sync, openshift-gitops/argo-sync)); finalizers [${HOOK_FINALIZER}] -> []`,
        `applied over namespace ${ns} as ${SWEEP_ACTOR}: 1 removed, 0 already gone, 0 left alone, 0 failed`,
        '',
      ].join('\n');

    /**
     * The finalizer stays; the next sync (the ConfigMap fixed) deletes the Job and waits for it; the sweep frees the
     * Job, and a sync after it completes.
     */
    async function leftoverHangsUntilSwept(engine: string, ns: string, guarded = false): Promise<unknown[]> {
      const seen: unknown[] = [];
      const { operation, live } = await failWhileHookRuns(engine, ns, guarded);
      seen.push(operation, live.metadata.finalizers);
      const fixed = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature-flag'));
      seen.push(await sync(engine, ns, fixed, WAIT_SECONDS));
      const held = await job(ns);
      seen.push([held.metadata.deletionTimestamp !== undefined, held.metadata.finalizers]);
      seen.push(await sweepApply(ns));
      seen.push(await syncCreating(engine, ns, guarded, fixed, 60));
      return seen;
    }

    const hangsUntilSwept = (ns: string) => [
      FAILED,
      [HOOK_FINALIZER],
      WAITING,
      [true, [HOOK_FINALIZER]],
      swept(ns),
      succeeded(HOOK, 'no more tasks'),
    ];

    // Out of hookguard's reach: whichever Argo CD version hookguard knows of meanwhile does not matter.
    it.concurrent.for(['3.0.0', '2.14.3'])(
      'Argo CD %s: the finalizer stays, the next sync waits for the Job it deleted; hookguard sweep --apply frees it',
      async (engine, { expect }) => {
        const ns = await space.namespace(false);
        expect(await leftoverHangsUntilSwept(engine, ns)).toEqual(hangsUntilSwept(ns));
      },
    );

    it.concurrent.for(['3.1.16', '3.2.12'])(
      'Argo CD %s: the finalizer stays, and the next sync removes it (gitops-engine#770) and completes',
      async (engine, { expect }) => {
        const ns = await space.namespace(false);
        const { operation, live } = await failWhileHookRuns(engine, ns);
        const fixed = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature-flag'));
        expect([operation, live.metadata.finalizers, await sync(engine, ns, fixed, 60)]).toEqual([
          FAILED,
          [HOOK_FINALIZER],
          succeeded(HOOK, 'no more tasks'),
        ]);
      },
    );

    // hookguard's guard for 3.0.0 (min-runtime) keeps a fast hook's Pod alive; the finalizer is the engine's, and only
    // the sweep removes it.
    it.concurrent('Argo CD 3.0.0 with hookguard: the same, the guard in the Pod', async ({ expect }) => {
      const ns = await space.namespace(true);
      expect(await leftoverHangsUntilSwept('3.0.0', ns, true)).toEqual(hangsUntilSwept(ns));
      const initContainers = ((await job(ns)).spec.template.spec.initContainers ?? []).map((c) => c.name);
      expect(initContainers).toEqual([GUARD_CONTAINER_NAME]);
    });

    // 2.14.3 added the finalizer by mistake: hookguard takes it off at CREATE (hook-finalizer), so the failed sync leaves
    // none, and the next sync's BeforeHookCreation deletes the Job and runs the hook again.
    it.concurrent(
      'Argo CD 2.14.3 with hookguard: no finalizer is left, and the next sync completes',
      async ({ expect }) => {
        const ns = await space.namespace(true);
        const { operation, live } = await failWhileHookRuns('2.14.3', ns, true);
        const fixed = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature-flag'));
        expect([operation, live.metadata.finalizers, await syncCreating('2.14.3', ns, true, fixed, 60)]).toEqual([
          FAILED,
          undefined,
          succeeded(HOOK, 'no more tasks'),
        ]);
      },
    );
  });
});

type Json = Record<string, unknown>;
