// A race of Argo CD's hook finalizer made with Argo CD's own sync engine (argo-sync, as in argo-sync.test.ts) on the
// real control plane: a sync that fails while its hook Job runs. The engine puts argocd.argoproj.io/hook-finalizer on
// every hook it applies (getSyncTasks) and removes it only from hooks it has seen complete (Sync, hooksCompleted) or
// on Terminate(); an apply the API server refuses in the hook's wave ends the operation at once (Sync, runTasks
// failed, setOperationFailed) with the Job still running, and nothing removes its finalizer (argo-cd#25916 made the
// engine do so, in 3.4.0). The next sync's BeforeHookCreation (the default delete policy) deletes the Job, which the
// finalizer keeps, and waits for it for ever (runTasks: deleted, so pending, every round), unless the engine first
// removes what a previous sync left (gitops-engine#770: runTasks, from the engines of 3.0.16, 3.1.4 and 3.2.0).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { GUARD_CONTAINER_NAME } from '../../src/core/annotations.js';
import { runCliAsync } from '../support/cli.js';
import {
  grantControllerRole,
  hookJob,
  installArgoCd,
  removeArgoCd,
  scratch,
  succeeded,
  sync,
  type Operation,
} from './support/argo-sync.js';
import { describeCluster, kubectlJson } from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';
import { HOOK_FINALIZER, jobsFinished, steady, sweepToken, SWEEP_ACTOR } from './support/sweep.js';

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

interface LiveJob {
  metadata: { finalizers?: string[]; deletionTimestamp?: string };
  spec: { template: { spec: { initContainers?: Array<{ name: string }> } } };
}

describeCluster('A sync that fails while its hook Job runs (the real gitops-engine)', () => {
  const space = scratch();
  const proxies: FaultProxy[] = [];
  const files = mkdtempSync(join(tmpdir(), 'argo-sync-races-'));
  const sweepConfig = join(files, 'config.yaml');
  let token = '';

  beforeAll(async () => {
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

  const job = (ns: string) => kubectlJson<LiveJob>(['get', 'job', HOOK, '-n', ns]);

  /** The first sync fails; the hook Job completes after it, and keeps the finalizer or not. */
  async function failWhileHookRuns(engine: string, ns: string): Promise<{ operation: Operation; live: LiveJob }> {
    const dir = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature flag'));
    const operation = await sync(engine, ns, dir, 60);
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
  async function leftoverHangsUntilSwept(engine: string, ns: string): Promise<unknown[]> {
    const seen: unknown[] = [];
    const { operation, live } = await failWhileHookRuns(engine, ns);
    seen.push(operation, live.metadata.finalizers);
    const fixed = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature-flag'));
    seen.push(await sync(engine, ns, fixed, WAIT_SECONDS));
    const held = await job(ns);
    seen.push([held.metadata.deletionTimestamp !== undefined, held.metadata.finalizers]);
    seen.push(await sweepApply(ns));
    seen.push(await sync(engine, ns, fixed, 60));
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

  describe.concurrent('Argo CD 3.0.0 known to hookguard', () => {
    beforeAll(() => installArgoCd('3.0.0'), 60_000);

    it.for(['3.0.0', '2.14.3'])(
      'Argo CD %s: the finalizer stays, the next sync waits for the Job it deleted; hookguard sweep --apply frees it',
      async (engine, { expect }) => {
        const ns = await space.namespace(false);
        expect(await leftoverHangsUntilSwept(engine, ns)).toEqual(hangsUntilSwept(ns));
      },
    );

    it.for(['3.1.16', '3.2.12'])(
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

    // hookguard's guard for 3.0.0 (min-runtime) keeps a fast hook's Pod alive; the finalizer is the engine's, and
    // only the sweep removes it.
    it('Argo CD 3.0.0 with hookguard: the same, the guard in the Pod', async ({ expect }) => {
      const ns = await space.namespace(true);
      expect(await leftoverHangsUntilSwept('3.0.0', ns)).toEqual(hangsUntilSwept(ns));
      const initContainers = ((await job(ns)).spec.template.spec.initContainers ?? []).map((c) => c.name);
      expect(initContainers).toEqual([GUARD_CONTAINER_NAME]);
    });
  });

  // 2.14.3 added the finalizer by mistake: hookguard takes it off at CREATE (hook-finalizer), so the failed sync leaves
  // none, and the next sync's BeforeHookCreation deletes the Job and runs the hook again.
  it('Argo CD 2.14.3 with hookguard: no finalizer is left, and the next sync completes', async ({ expect }) => {
    await installArgoCd('2.14.3');
    const ns = await space.namespace(true);
    const { operation, live } = await failWhileHookRuns('2.14.3', ns);
    const fixed = space.manifests(hookJob(HOOK, { phase: 'Sync' }), settings('feature-flag'));
    expect([operation, live.metadata.finalizers, await sync('2.14.3', ns, fixed, 60)]).toEqual([
      FAILED,
      undefined,
      succeeded(HOOK, 'no more tasks'),
    ]);
  });
});
