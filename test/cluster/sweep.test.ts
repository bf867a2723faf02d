// `hookguard sweep` against the real API server, as the chart's sweep identity (its ServiceAccount, ClusterRole and
// ValidatingAdmissionPolicy, charts/hookguard/templates/sweep-rbac.yaml): hook Jobs and Pods that really ran, deleted
// and held by Argo CD's hook finalizer, in namespaces of the test's own (out of the cluster hookguard's webhooks, so
// they stay as written); a namespace stuck deleting on them finishes after the sweep; Argo CD Applications (argo-cd
// v3.5.1's CRD) read for real; real paging (limit/continue), real 404 and 422 (the guarded patch's test op). Through
// the fault proxy (support/fault-proxy.ts) only what the real API server does not do on demand: 429, 5xx, 409 and a
// continue token expired (410). The sweep judges ages against a clock moved on (SweepOptions.now) where a case needs
// a hook deleted minutes ago; the built CLI runs with real time and a grace of 0 for finished hooks.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, PatchStrategy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCallError } from '../../src/errors.js';
import { MAX_LIST_RESTARTS } from '../../src/sweep/sweep.js';
import type { SweepProfileId } from '../../src/config/keys.js';
import { runCliAsync } from '../support/cli.js';
import {
  AUDIT_NAMESPACE_LABEL,
  adminApi,
  adminObjectApi,
  deleteNamespace,
  describeCluster,
  JSON_PATCH,
  kubectl,
  kubectlJson,
  newNamespace,
  unlessNotFound,
  waitUntil,
} from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';
import {
  create,
  deleteObjects,
  finalizersOf,
  HOOK_FINALIZER,
  hookJob,
  hookPod,
  inMinutes,
  jobsFinished,
  KEEP,
  podsIn,
  releaseFinalizers,
  REPORTING_INSTANCE,
  setFinalizers,
  steady,
  stored,
  sweepOnce,
  sweepToken,
  SWEEP_ACTOR,
  uidOf,
  workflow,
  WORKFLOW_FINALIZER,
  workflowPod,
  type HookShape,
} from './support/sweep.js';
import { repoRoot } from '../support/k8s-tools.js';

type Json = Record<string, any>;

const dir = mkdtempSync(join(tmpdir(), 'hookguard-sweep-cluster-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const applicationCrd = join(repoRoot, 'test', 'cluster', 'argocd', 'application-crd.yaml');
const workflowCrd = join(repoRoot, 'test', 'cluster', 'argo-workflows', 'workflows.argoproj.io.yaml');

describeCluster('hookguard sweep against the real API server, as the chart deploys it', () => {
  let token = '';
  const namespaces: string[] = [];
  const proxies: FaultProxy[] = [];

  beforeAll(async () => {
    token = await sweepToken();
    // Argo CD's Application and Argo Workflows' Workflow, as those projects ship them; left installed, like the
    // other CRDs of the cluster's tests.
    await kubectl(['apply', '--server-side', '-f', applicationCrd, '-f', workflowCrd]);
    await waitUntil('the Application and Workflow CRDs to be served', async () => {
      for (const kind of ['Application', 'Workflow']) await adminObjectApi().list('argoproj.io/v1alpha1', kind);
      return true;
    });
  });
  afterAll(async () => {
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    for (const ns of namespaces) {
      await releaseFinalizers(ns);
      await deleteNamespace(ns);
    }
  });

  async function ownNamespace(prefix: string): Promise<string> {
    const ns = await newNamespace(prefix, { [AUDIT_NAMESPACE_LABEL]: 'sweep' });
    namespaces.push(ns);
    return ns;
  }

  async function faultProxy(): Promise<FaultProxy> {
    const proxy = await FaultProxy.start();
    proxies.push(proxy);
    return proxy;
  }

  /** A kubeconfig file of the sweep's identity, through `proxy`. */
  function kubeconfigFile(proxy: FaultProxy): string {
    const path = join(dir, `kubeconfig-${proxy.port}`);
    writeFileSync(path, proxy.kubeConfig(token).exportConfig());
    return path;
  }

  /**
   * The mission: stuck hooks, and look-alikes that must not be touched, each after it ran. Sorted by name, as the API
   * server lists them.
   */
  async function mission(prefix: string): Promise<string> {
    const ns = await ownNamespace(prefix);
    await create([
      hookJob(ns, { name: 'failed-only-hook', exitCode: 1 }),
      hookJob(ns, { name: 'keeps-other', finalizers: [KEEP, HOOK_FINALIZER] }),
      hookJob(ns, { name: 'not-a-hook', annotations: {} }),
      hookJob(ns, { name: 'not-deleting' }),
      hookJob(ns, { name: 'other-finalizer-only', finalizers: [KEEP] }),
      hookJob(ns, { name: 'running', runSeconds: 3600 }),
      hookPod(ns, { name: 'pod-done' }),
    ]);
    await jobsFinished(ns, {
      'failed-only-hook': 'Failed',
      'keeps-other': 'Complete',
      'not-a-hook': 'Complete',
      'not-deleting': 'Complete',
      'other-finalizer-only': 'Complete',
    });
    await podsIn(ns, ['pod-done'], 'Succeeded');
    await waitUntil('the running hook to run', async () => {
      const job = await stored(ns, 'job', 'running');
      return (job?.status as Json | undefined)?.active === 1;
    });
    await deleteObjects(ns, 'job', [
      'failed-only-hook',
      'keeps-other',
      'not-a-hook',
      'other-finalizer-only',
      'running',
    ]);
    await deleteObjects(ns, 'pod', ['pod-done']);
    return ns;
  }

  /** The Events in NS, as events.k8s.io/v1 serves them. */
  async function eventsIn(ns: string): Promise<Json[]> {
    return (await kubectlJson<{ items: Json[] }>(['get', 'events.v1.events.k8s.io', '-n', ns])).items.filter(
      (event) => event.reportingController === 'hookguard.io/sweep',
    );
  }

  describe.concurrent('the built CLI', () => {
    it('dry run by default: lists what qualifies and why, changes nothing, exits 0', async () => {
      const ns = await mission('sweep-cli-dry');
      const proxy = await faultProxy();
      const config = join(dir, `config-${ns}.yaml`);
      writeFileSync(config, 'sweep:\n  finishedGraceSeconds: 0\n');
      const result = await runCliAsync(['sweep', '--namespace', ns, '--config', config], {
        KUBECONFIG: kubeconfigFile(proxy),
      });
      expect([result.status, steady(result.stdout)]).toEqual([
        0,
        [
          `Job ${ns}/failed-only-hook: would remove ${HOOK_FINALIZER} (Argo CD PreSync hook; Job Failed; deleting for AGE, at least 0s); finalizers [${HOOK_FINALIZER}] -> []`,
          `Job ${ns}/keeps-other: would remove ${HOOK_FINALIZER} (Argo CD PreSync hook; Job Complete; deleting for AGE, at least 0s); finalizers [${KEEP}, ${HOOK_FINALIZER}] -> [${KEEP}]`,
          `Job ${ns}/not-a-hook: left alone (not a hook: no Argo CD or Helm hook annotation)`,
          `Job ${ns}/running: left alone (still running and deleting for AGE, under 10m0s: Argo CD may still remove it)`,
          `Pod ${ns}/pod-done: would remove ${HOOK_FINALIZER} (Argo CD PreSync hook; Pod Succeeded; deleting for AGE, at least 0s); finalizers [${HOOK_FINALIZER}] -> []`,
          `dry run over namespace ${ns}: 3 would be changed, 2 left alone; run with --apply to remove the finalizers`,
          '',
        ].join('\n'),
      ]);
      expect(proxy.requests.filter((request) => request.method !== 'GET')).toEqual([]);
      expect(await finalizersOf(ns, 'job', 'keeps-other')).toEqual([KEEP, HOOK_FINALIZER]);
      expect(await eventsIn(ns)).toEqual([]);
    });

    it('--apply --output json removes the finalizers, writes one audit line and one Event per removal', async () => {
      const ns = await mission('sweep-cli-apply');
      const proxy = await faultProxy();
      const config = join(dir, `config-${ns}.yaml`);
      writeFileSync(config, 'sweep:\n  finishedGraceSeconds: 0\n');
      const result = await runCliAsync(
        ['sweep', '--apply', '--output', 'json', '--namespace', ns, '--config', config],
        { KUBECONFIG: kubeconfigFile(proxy) },
      );
      expect([result.status, result.stderr.includes('"level":50')]).toEqual([0, false]);
      const report = JSON.parse(result.stdout) as Json;
      expect(report).toMatchObject({ dryRun: false, actor: SWEEP_ACTOR, namespace: ns });
      expect(
        (report.results as Json[]).map((entry) => [entry.kind, entry.name, entry.action, entry.finalizersAfter]),
      ).toEqual([
        ['Job', 'failed-only-hook', 'removed', []],
        ['Job', 'keeps-other', 'removed', [KEEP]],
        ['Job', 'not-a-hook', 'skipped', [HOOK_FINALIZER]],
        ['Job', 'running', 'skipped', [HOOK_FINALIZER]],
        ['Pod', 'pod-done', 'removed', []],
      ]);
      expect(report.summary).toMatchObject({ eventsFailed: 0 });
      // The API server deleted what held no other finalizer; the other finalizer stays.
      expect(await stored(ns, 'job', 'failed-only-hook')).toBeUndefined();
      expect(await stored(ns, 'pod', 'pod-done')).toBeUndefined();
      expect(await finalizersOf(ns, 'job', 'keeps-other')).toEqual([KEEP]);
      const audits = result.stderr
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { audit?: Json })
        .flatMap((line) => (line.audit ? [line.audit] : []));
      expect(audits.map((audit) => [audit.name, audit.actor, audit.finalizersBefore, audit.finalizersAfter])).toEqual([
        ['failed-only-hook', SWEEP_ACTOR, [HOOK_FINALIZER], []],
        ['keeps-other', SWEEP_ACTOR, [KEEP, HOOK_FINALIZER], [KEEP]],
        ['pod-done', SWEEP_ACTOR, [HOOK_FINALIZER], []],
      ]);
      // Each removal on the record, as the API server stored it: a name it completed, the pod's host as the instance.
      const events = await eventsIn(ns);
      expect(
        events
          .map((event) => [
            event.regarding.kind,
            event.regarding.name,
            event.type,
            event.reason,
            event.reportingInstance,
            steady(event.note),
          ])
          .sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
      ).toEqual([
        [
          'Job',
          'failed-only-hook',
          'Normal',
          'FinalizerRemoved',
          hostname(),
          `Removed ${HOOK_FINALIZER} (hookguard sweep as ${SWEEP_ACTOR}): Argo CD PreSync hook; Job Failed; deleting for AGE, at least 0s. Finalizers [${HOOK_FINALIZER}] -> [].`,
        ],
        [
          'Job',
          'keeps-other',
          'Normal',
          'FinalizerRemoved',
          hostname(),
          `Removed ${HOOK_FINALIZER} (hookguard sweep as ${SWEEP_ACTOR}): Argo CD PreSync hook; Job Complete; deleting for AGE, at least 0s. Finalizers [${KEEP}, ${HOOK_FINALIZER}] -> [${KEEP}].`,
        ],
        [
          'Pod',
          'pod-done',
          'Normal',
          'FinalizerRemoved',
          hostname(),
          `Removed ${HOOK_FINALIZER} (hookguard sweep as ${SWEEP_ACTOR}): Argo CD PreSync hook; Pod Succeeded; deleting for AGE, at least 0s. Finalizers [${HOOK_FINALIZER}] -> [].`,
        ],
      ]);
    });

    it('exits 1 and says why when a patch fails, after doing the rest, and leaves a Warning Event', async () => {
      const ns = await mission('sweep-cli-fail');
      const proxy = await faultProxy();
      proxy.fail({ method: 'PATCH', pathIncludes: `/namespaces/${ns}/jobs/keeps-other`, status: 500, times: 5 });
      const config = join(dir, `config-${ns}.yaml`);
      writeFileSync(
        config,
        'sweep:\n  finishedGraceSeconds: 0\n  maxAttempts: 2\n  backoffInitialMs: 10\n  backoffMaxMs: 20\n',
      );
      const result = await runCliAsync(['sweep', '--apply', '--namespace', ns, '--config', config], {
        KUBECONFIG: kubeconfigFile(proxy),
      });
      expect(result.status).toBe(1);
      expect(steady(result.stdout).split('\n')).toEqual(
        expect.arrayContaining([
          `Job ${ns}/keeps-other: FAILED to remove ${HOOK_FINALIZER} (Argo CD PreSync hook; Job Complete; deleting for AGE, at least 0s; patch failed: HTTP 500: Internal error occurred: injected by the test fault proxy (HTTP 500))`,
          `applied over namespace ${ns} as ${SWEEP_ACTOR}: 2 removed, 0 already gone, 2 left alone, 1 failed`,
        ]),
      );
      expect(result.stderr).toContain(`"msg":"could not remove ${HOOK_FINALIZER}"`);
      expect(await finalizersOf(ns, 'job', 'keeps-other')).toEqual([KEEP, HOOK_FINALIZER]);
      const warnings = (await eventsIn(ns)).filter((event) => event.type === 'Warning');
      expect(warnings.map((event) => [event.regarding.name, event.reason, steady(event.note)])).toEqual([
        [
          'keeps-other',
          'FinalizerRemovalFailed',
          `Could not remove ${HOOK_FINALIZER} (hookguard sweep as ${SWEEP_ACTOR}): Argo CD PreSync hook; Job Complete; deleting for AGE, at least 0s; patch failed: HTTP 500: Internal error occurred: injected by the test fault proxy (HTTP 500).`,
        ],
      ]);
    });

    it('exits 1 when the cluster cannot be listed, and 2 with no cluster at all or a bad flag', async () => {
      const proxy = await faultProxy();
      const path = kubeconfigFile(proxy);
      await proxy.stop();
      const unreachable = await runCliAsync(['sweep', '--namespace', 'x'], { KUBECONFIG: path });
      expect(unreachable.status).toBe(1);
      expect(unreachable.stderr).toMatch(
        new RegExp(`hookguard sweep: cannot list hook Jobs and Pods \\(kubeconfig ${path}\\): .*ECONNREFUSED`),
      );
      const nowhere = await runCliAsync(['sweep'], { HOME: dir });
      expect([nowhere.status, nowhere.stdout, nowhere.stderr]).toEqual([
        2,
        '',
        'hookguard sweep: no cluster to sweep: set KUBECONFIG, or run in a pod with a service account\n',
      ]);
      const badOutput = await runCliAsync(['sweep', '--output', 'yaml'], { HOME: dir });
      expect([badOutput.status, badOutput.stderr]).toEqual([
        2,
        'hookguard sweep: --output must be text or json, got "yaml"\n',
      ]);
    });
  });

  describe.concurrent('one pass (in this process, through the fault proxy)', () => {
    it('removes only the hook finalizer of what qualifies, guarded by a test op; the rest stays as it was', async () => {
      const ns = await mission('sweep-apply');
      const proxy = await faultProxy();
      const untouched = async () =>
        Promise.all(
          ['not-a-hook', 'not-deleting', 'other-finalizer-only', 'running'].map(async (name) => {
            const job = await stored(ns, 'job', name);
            return [name, (job?.metadata as Json).resourceVersion, (job?.metadata as Json).finalizers];
          }),
        );
      const before = await untouched();
      const keepsOtherUid = ((await stored(ns, 'job', 'keeps-other'))?.metadata as Json).uid as string;
      // Six minutes on: the finished hooks are past their grace, the running one is not past its ten minutes.
      const first = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(6) });
      expect(first.outcome).toEqual({
        'failed-only-hook': 'removed',
        'keeps-other': 'removed',
        'not-a-hook': 'skipped',
        running: 'skipped',
        'pod-done': 'removed',
      });
      expect(first.report.results.find((result) => result.name === 'keeps-other')).toEqual({
        kind: 'Job',
        namespace: ns,
        name: 'keeps-other',
        profile: 'argocd-hook',
        finalizer: HOOK_FINALIZER,
        action: 'removed',
        reasons: [
          'Argo CD PreSync hook',
          'Job Complete',
          expect.stringMatching(/^deleting for 6m\d+s, at least 5m0s$/),
        ],
        ageSeconds: expect.any(Number),
        finalizersBefore: [KEEP, HOOK_FINALIZER],
        finalizersAfter: [KEEP],
      });
      expect(await untouched()).toEqual(before);
      expect(await finalizersOf(ns, 'job', 'keeps-other')).toEqual([KEEP]);
      expect(await stored(ns, 'job', 'failed-only-hook')).toBeUndefined();
      expect(await stored(ns, 'pod', 'pod-done')).toBeUndefined();
      // Lists of the namespace, full reads of the candidates only, one patch each, one Event each.
      const calls = proxy.requests.map((request) => `${request.method} ${request.path} ${request.status}`);
      expect(calls).toEqual([
        `GET /apis/batch/v1/namespaces/${ns}/jobs 200`,
        `GET /apis/batch/v1/namespaces/${ns}/jobs/failed-only-hook 200`,
        `PATCH /apis/batch/v1/namespaces/${ns}/jobs/failed-only-hook 200`,
        `POST /apis/events.k8s.io/v1/namespaces/${ns}/events 201`,
        `GET /apis/batch/v1/namespaces/${ns}/jobs/keeps-other 200`,
        `PATCH /apis/batch/v1/namespaces/${ns}/jobs/keeps-other 200`,
        `POST /apis/events.k8s.io/v1/namespaces/${ns}/events 201`,
        `GET /apis/batch/v1/namespaces/${ns}/jobs/not-a-hook 200`,
        `GET /apis/batch/v1/namespaces/${ns}/jobs/running 200`,
        `GET /api/v1/namespaces/${ns}/pods 200`,
        `GET /api/v1/namespaces/${ns}/pods/pod-done 200`,
        `PATCH /api/v1/namespaces/${ns}/pods/pod-done 200`,
        `POST /apis/events.k8s.io/v1/namespaces/${ns}/events 201`,
      ]);
      expect(proxy.requests[0]?.query).toEqual({ limit: '500' });
      const audits = first.lines.flatMap((line) => (line.audit ? [line.audit as Json] : []));
      expect(audits.find((audit) => audit.name === 'keeps-other')).toEqual({
        action: 'finalizer-removed',
        profile: 'argocd-hook',
        finalizer: HOOK_FINALIZER,
        kind: 'Job',
        namespace: ns,
        name: 'keeps-other',
        uid: keepsOtherUid,
        ageSeconds: expect.any(Number),
        reasons: [
          'Argo CD PreSync hook',
          'Job Complete',
          expect.stringMatching(/^deleting for 6m\d+s, at least 5m0s$/),
        ],
        finalizersBefore: [KEEP, HOOK_FINALIZER],
        finalizersAfter: [KEEP],
        actor: SWEEP_ACTOR,
      });
      // Eleven minutes on, the running hook is past its ten.
      const second = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(11) });
      expect(second.report.results.find((result) => result.name === 'running')).toMatchObject({
        action: 'removed',
        reasons: [
          'Argo CD PreSync hook',
          'not finished',
          expect.stringMatching(/^deleting for 11m\d+s, at least 10m0s$/),
        ],
      });
      expect(await stored(ns, 'job', 'running')).toBeUndefined();
    });

    it('the Event on the object is stored as written and reads as users see it', async () => {
      const ns = await ownNamespace('sweep-event');
      await create([hookJob(ns, { name: 'migrate', finalizers: [KEEP, HOOK_FINALIZER] })]);
      await jobsFinished(ns, { migrate: 'Complete' });
      await deleteObjects(ns, 'job', ['migrate']);
      const job = (await stored(ns, 'job', 'migrate')) as Json;
      const proxy = await faultProxy();
      // Real time, no grace: the Event's eventTime is now, as in a cluster, so its age reads as one.
      const { report } = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, finishedGraceSeconds: 0 });
      expect(report.summary.eventsFailed).toBe(0);
      const [event, ...more] = await eventsIn(ns);
      expect(more).toEqual([]);
      const note = (event as Json).note as string;
      expect(note).toMatch(
        new RegExp(
          `^Removed ${HOOK_FINALIZER} \\(hookguard sweep as ${SWEEP_ACTOR}\\): Argo CD PreSync hook; Job Complete; deleting for \\d+s, at least 0s\\. Finalizers \\[${KEEP}, ${HOOK_FINALIZER}\\] -> \\[${KEEP}\\]\\.$`,
        ),
      );
      expect(event).toEqual({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: {
          name: expect.stringMatching(/^migrate-[a-z0-9]{5}$/),
          generateName: 'migrate-',
          namespace: ns,
          uid: expect.any(String),
          resourceVersion: expect.any(String),
          creationTimestamp: expect.any(String),
        },
        // What events.k8s.io/v1 serves of the core Event's fields it has no say in.
        deprecatedFirstTimestamp: null,
        deprecatedLastTimestamp: null,
        deprecatedSource: {},
        eventTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
        reportingController: 'hookguard.io/sweep',
        reportingInstance: REPORTING_INSTANCE,
        action: 'RemoveFinalizer',
        reason: 'FinalizerRemoved',
        type: 'Normal',
        note,
        regarding: {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: 'migrate',
          namespace: ns,
          uid: job.metadata.uid,
          resourceVersion: job.metadata.resourceVersion,
        },
      });
      // What `kubectl events` prints for it (kubectl v0.37.2 pkg/cmd/events: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE).
      const printed = await kubectl(['events', '-n', ns, '--for', 'job/migrate']);
      // An age in its column, as AGE: the columns stay as wide as kubectl made them.
      const AGE_FIRST = /^()(\S+)( +)/;
      const AGE_THIRD = /^( {2}\S+ {2}\S+ {2})(\S+)( +)/;
      const masked = (line: string, column: RegExp) =>
        line.replace(
          column,
          (_all, before: string, age: string, spaces: string) => `${before}${'AGE'.padEnd(age.length + spaces.length)}`,
        );
      const message = `Removed ${HOOK_FINALIZER} (hookguard sweep as ${SWEEP_ACTOR}): Argo CD PreSync hook; Job Complete; deleting for AGE, at least 0s. Finalizers [${KEEP}, ${HOOK_FINALIZER}] -> [${KEEP}].`;
      // The sweep's own Event, among the Job controller's (SuccessfulCreate, Completed) when kubectl finds those: they
      // were there in one run of many, each a row of its own that leaves this one's columns as they are.
      const ownRows = (line: string, index: number, header: number) =>
        index < header || line === '' || !/\b(SuccessfulCreate|Completed)\b/.test(line);
      expect(
        steady(printed)
          .split('\n')
          .filter((line, index) => ownRows(line, index, 1))
          .map((line, index) => (index === 0 ? line : masked(line, AGE_FIRST))),
      ).toEqual([
        'LAST SEEN   TYPE     REASON             OBJECT        MESSAGE',
        `AGE         Normal   FinalizerRemoved   Job/migrate   ${message}`,
        '',
      ]);
      // And what `kubectl describe job` ends with (kubectl v0.37.2 pkg/describe/describe.go DescribeEvents).
      const described = steady(await kubectl(['describe', 'job', 'migrate', '-n', ns]));
      expect(
        described
          .slice(described.indexOf('Events:'))
          .split('\n')
          .filter((line, index) => ownRows(line, index, 3))
          .map((line, index) => (index === 3 ? masked(line, AGE_THIRD) : line)),
      ).toEqual([
        'Events:',
        '  Type    Reason            Age   From                Message',
        '  ----    ------            ----  ----                -------',
        `  Normal  FinalizerRemoved  AGE   hookguard.io/sweep  ${message}`,
        '',
      ]);
    });

    it('a namespace stuck deleting on hook finalizers finishes after the sweep: Pods first, then the rest', async () => {
      const ns = await ownNamespace('sweep-stuck-ns');
      await create([
        hookJob(ns, { name: 'migrate' }),
        hookPod(ns, { name: 'smoke', annotations: { 'argocd.argoproj.io/hook': 'PostSync' } }),
      ]);
      await jobsFinished(ns, { migrate: 'Complete' });
      await podsIn(ns, ['smoke'], 'Succeeded');
      // Background propagation, as `kubectl delete` asks.
      await adminApi(CoreV1Api).deleteNamespace({ name: ns, propagationPolicy: 'Background' });
      const conditions = async () =>
        Object.fromEntries(
          ((await adminApi(CoreV1Api).readNamespace({ name: ns })).status?.conditions ?? []).map((condition) => [
            condition.type,
            `${condition.status}: ${condition.message}`,
          ]),
        );
      // The namespace controller deletes the Pods first, and nothing else while one remains (kubernetes v1.37.2
      // pkg/controller/namespace/deletion/namespaced_resources_deleter.go deleteAllContent): the Job is not even
      // deleted, and the conditions, written before the remaining Pods are counted, say nothing remains.
      await waitUntil('the namespace controller to delete the Pod', async () => {
        const pod = await stored(ns, 'pod', 'smoke');
        return (
          (pod?.metadata as Json | undefined)?.deletionTimestamp !== undefined &&
          (await conditions()).NamespaceContentRemaining
        );
      });
      expect(await conditions()).toEqual({
        NamespaceDeletionDiscoveryFailure: 'False: All resources successfully discovered',
        NamespaceDeletionGroupVersionParsingFailure: 'False: All legacy kube types successfully parsed',
        NamespaceDeletionContentFailure: 'False: All content successfully deleted, may be waiting on finalization',
        NamespaceContentRemaining: 'False: All content successfully removed',
        NamespaceFinalizersRemaining: 'False: All content-preserving finalizers finished',
      });
      expect(((await stored(ns, 'job', 'migrate'))?.metadata as Json).deletionTimestamp).toBeUndefined();
      const proxy = await faultProxy();
      const first = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(6) });
      expect(first.outcome).toEqual({ smoke: 'removed' });
      // No Event can be written in a namespace being deleted: the removal stands, the summary counts it.
      expect(first.report.summary.eventsFailed).toBe(1);
      expect(
        first.lines.filter((line) => line.msg === 'could not write the Event').map((line) => [line.name, line.error]),
      ).toEqual([
        [
          'smoke',
          `HTTP 403: events.events.k8s.io "smoke-" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
        ],
      ]);
      // The Pod gone, the controller deletes the Job, which its hook finalizer holds in turn.
      await waitUntil('the namespace to wait on the Job', async () =>
        (await conditions()).NamespaceFinalizersRemaining?.startsWith('True'),
      );
      expect(await conditions()).toMatchObject({
        NamespaceContentRemaining: 'True: Some resources are remaining: jobs.batch has 1 resource instances',
        NamespaceFinalizersRemaining: `True: Some content in the namespace has finalizers remaining: ${HOOK_FINALIZER} in 1 resource instances`,
      });
      // Its deletion began only now: the next pass, past the Job's grace, frees the namespace.
      const second = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(6) });
      expect(second.outcome).toEqual({ migrate: 'removed' });
      await waitUntil(
        'the namespace to be gone',
        async () => (await unlessNotFound(adminApi(CoreV1Api).readNamespace({ name: ns }))) === undefined,
      );
    });
  });

  describe.concurrent('races and faults', () => {
    /** Finished hook Jobs in a namespace of their own, deleted, each with these finalizers. */
    async function finishedHooks(prefix: string, jobs: Record<string, string[]>): Promise<string> {
      const ns = await ownNamespace(prefix);
      await create(Object.entries(jobs).map(([name, finalizers]) => hookJob(ns, { name, finalizers })));
      await jobsFinished(ns, Object.fromEntries(Object.keys(jobs).map((name) => [name, 'Complete' as const])));
      await deleteObjects(ns, 'job', Object.keys(jobs));
      return ns;
    }
    /** The admin's JSON patch, as another controller's write. */
    const removeFirstFinalizer = (ns: string, name: string) =>
      adminApi(BatchV1Api).patchNamespacedJob(
        { name, namespace: ns, body: [{ op: 'remove', path: '/metadata/finalizers/0' }] },
        JSON_PATCH,
      );
    const patchStatuses = (proxy: FaultProxy, name: string) =>
      proxy.requests
        .filter((request) => request.method === 'PATCH' && request.path.endsWith(`/jobs/${name}`))
        .map((request) => request.status);

    it('judges again after the real 422 of its test op when the finalizers changed under it, and never drops one', async () => {
      const ns = await finishedHooks('sweep-races', {
        'lost-one': ['example.com/a', 'example.com/b', HOOK_FINALIZER],
        'argo-removed': [KEEP, HOOK_FINALIZER],
        'keeps-changing': ['example.com/a', 'example.com/b', 'example.com/c', HOOK_FINALIZER],
        'gone-before': [HOOK_FINALIZER],
      });
      const proxy = await faultProxy();
      let lostOne = false;
      // Another writer goes first, just before the sweep's patch reaches the API server.
      proxy.beforeForward = async ({ method, path }) => {
        if (method !== 'PATCH') return;
        const name = path.slice(path.lastIndexOf('/') + 1);
        if (name === 'lost-one' && !lostOne) {
          lostOne = true;
          await removeFirstFinalizer(ns, name);
        }
        if (name === 'argo-removed' && ((await finalizersOf(ns, 'job', name)) as string[]).includes(HOOK_FINALIZER))
          await setFinalizers(ns, 'job', name, [KEEP]);
        if (name === 'keeps-changing') await removeFirstFinalizer(ns, name);
        if (name === 'gone-before') await setFinalizers(ns, 'job', name, null);
      };
      const { report } = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(6) });
      const byName = (name: string) => report.results.find((result) => result.name === name);
      expect(byName('lost-one')).toMatchObject({
        action: 'removed',
        finalizersBefore: ['example.com/b', HOOK_FINALIZER],
        finalizersAfter: ['example.com/b'],
      });
      expect(patchStatuses(proxy, 'lost-one')).toEqual([422, 200]);
      expect(await finalizersOf(ns, 'job', 'lost-one')).toEqual(['example.com/b']);
      expect(byName('argo-removed')).toMatchObject({
        action: 'skipped',
        reasons: [`changed meanwhile: no ${HOOK_FINALIZER}`],
      });
      expect(await finalizersOf(ns, 'job', 'argo-removed')).toEqual([KEEP]);
      // The API server says no more of a failed test op (apiserver v0.37.2 pkg/endpoints/handlers/patch.go).
      expect(byName('keeps-changing')).toMatchObject({ action: 'failed' });
      expect(byName('keeps-changing')?.reasons.at(-1)).toBe(
        'patch failed: HTTP 422: the server rejected our request due to an error in our request',
      );
      expect(patchStatuses(proxy, 'keeps-changing')).toEqual([422, 422]);
      expect(await finalizersOf(ns, 'job', 'keeps-changing')).toEqual(['example.com/c', HOOK_FINALIZER]);
      expect(byName('gone-before')).toMatchObject({
        action: 'gone',
        reasons: expect.arrayContaining(['deleted before the patch reached it']),
        finalizersAfter: [],
      });
      expect(patchStatuses(proxy, 'gone-before')).toEqual([404]);
    });

    it('re-reads and retries once after 409 Conflict', async () => {
      const ns = await finishedHooks('sweep-conflict', { migrate: [HOOK_FINALIZER] });
      const proxy = await faultProxy();
      proxy.fail({ method: 'PATCH', pathIncludes: `/namespaces/${ns}/jobs/migrate`, status: 409 });
      const { outcome } = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(6) });
      expect(outcome).toEqual({ migrate: 'removed' });
      expect(patchStatuses(proxy, 'migrate')).toEqual([409, 200]);
    });

    it('retries 429 after its Retry-After, and 5xx with backoff', async () => {
      const ns = await finishedHooks('sweep-retries', { throttled: [HOOK_FINALIZER], unavailable: [HOOK_FINALIZER] });
      const proxy = await faultProxy();
      proxy.fail({ method: 'GET', pathIncludes: `/namespaces/${ns}/jobs`, status: 500 });
      proxy.fail({ method: 'PATCH', pathIncludes: `/jobs/throttled`, status: 429, retryAfterSeconds: 1 });
      proxy.fail({ method: 'PATCH', pathIncludes: `/jobs/unavailable`, status: 503, times: 2 });
      const started = Date.now();
      const { outcome, lines } = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, now: inMinutes(6) });
      expect(outcome).toEqual({ throttled: 'removed', unavailable: 'removed' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(patchStatuses(proxy, 'throttled')).toEqual([429, 200]);
      expect(patchStatuses(proxy, 'unavailable')).toEqual([503, 503, 200]);
      expect(
        lines
          .filter((line) => line.msg === 'API call failed; retrying')
          .map((line) => [line.status, line.call, line.error]),
      ).toEqual([
        [500, 'list Jobs', 'Internal error occurred: injected by the test fault proxy (HTTP 500)'],
        // The priority-and-fairness filter answers in plain text: the status is all there is to read.
        [429, `patch Job ${ns}/throttled`, 'HTTP 429'],
        [503, `patch Job ${ns}/unavailable`, 'the server is currently unable to handle the request'],
        [503, `patch Job ${ns}/unavailable`, 'the server is currently unable to handle the request'],
      ]);
      expect(lines.find((line) => line.status === 429)).toMatchObject({ retryInMs: 1000 });
    });

    it('gives up after sweep.maxAttempts on a persistent 5xx and says why; the others still get done', async () => {
      const ns = await finishedHooks('sweep-give-up', { broken: [HOOK_FINALIZER], fine: [HOOK_FINALIZER] });
      const proxy = await faultProxy();
      proxy.fail({ method: 'PATCH', pathIncludes: `/jobs/broken`, status: 500, times: 10 });
      const { report, outcome } = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        now: inMinutes(6),
        retry: { maxAttempts: 3, backoff: { initialMs: 5, maxMs: 10 } },
      });
      expect(outcome).toEqual({ broken: 'failed', fine: 'removed' });
      expect(report.results[0]).toMatchObject({
        reasons: [
          'Argo CD PreSync hook',
          'Job Complete',
          expect.stringMatching(/^deleting for 6m\d+s, at least 5m0s$/),
          'patch failed: HTTP 500: Internal error occurred: injected by the test fault proxy (HTTP 500)',
        ],
        finalizersAfter: [HOOK_FINALIZER],
      });
      expect(patchStatuses(proxy, 'broken')).toEqual([500, 500, 500]);
      expect(await finalizersOf(ns, 'job', 'broken')).toEqual([HOOK_FINALIZER]);
    });
  });

  describe.concurrent('paging through a namespace of 523 Jobs', () => {
    let ns = '';
    const LIVE = 520;
    const STUCK = ['stuck-0', 'stuck-1', 'stuck-2'];
    beforeAll(async () => {
      ns = await ownNamespace('sweep-pages');
      // Suspended: the Job controller starts no Pod for them.
      await create([
        ...Array.from({ length: LIVE }, (_, index) =>
          hookJob(ns, { name: `live-${String(index).padStart(3, '0')}`, finalizers: [], suspend: true }),
        ),
        ...STUCK.map((name) => hookJob(ns, { name, suspend: true })),
      ]);
      await deleteObjects(ns, 'job', STUCK);
    });
    const jobLists = (proxy: FaultProxy) =>
      proxy.requests.filter((request) => request.path === `/apis/batch/v1/namespaces/${ns}/jobs`);

    it('reads every page (limit 500, continue), and in full only the objects being deleted', async () => {
      const proxy = await faultProxy();
      const { report } = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, apply: false, now: inMinutes(11) });
      expect(report.results.map((result) => [result.name, result.action])).toEqual(
        STUCK.map((name) => [name, 'would-remove']),
      );
      expect(
        jobLists(proxy).map((request) => [request.query.limit, request.query.continue !== undefined, request.status]),
      ).toEqual([
        ['500', false, 200],
        ['500', true, 200],
      ]);
      expect(
        proxy.requests
          .filter((request) => /\/jobs\/[^/]+$/.test(request.path))
          .map((request) => request.path.split('/').at(-1)),
      ).toEqual(STUCK);
      expect(report.summary.listed).toEqual({
        Job: { objects: LIVE + STUCK.length, pages: 2, bytes: expect.any(Number), restarts: 0 },
        Pod: { objects: 0, pages: 1, bytes: expect.any(Number), restarts: 0 },
      });
    });

    it('works the same when the answers are full lists (a server that cannot convert them)', async () => {
      const metadataOnly = await faultProxy();
      const full = await faultProxy();
      full.fullLists = true;
      // One clock for both, so that the ages agree to the second.
      const at = inMinutes(11)();
      const options = { namespace: ns, apply: false, now: () => at };
      const [withMetadata, withFull] = [
        await sweepOnce(metadataOnly.kubeConfig(token), options),
        await sweepOnce(full.kubeConfig(token), options),
      ];
      expect(withFull.report.results).toEqual(withMetadata.report.results);
      expect(withFull.report.summary.listed.Job?.bytes).toBeGreaterThan(
        1.5 * (withMetadata.report.summary.listed.Job?.bytes ?? 0),
      );
    });

    it(`lists again from the start when a continue token expires (410 Expired), up to ${MAX_LIST_RESTARTS} times`, async () => {
      const proxy = await faultProxy();
      proxy.fail({ method: 'GET', pathIncludes: `/namespaces/${ns}/jobs`, continued: true, status: 410 });
      const { report, lines } = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        apply: false,
        now: inMinutes(11),
      });
      // Each object once: what the abandoned listing found is dropped, not added to.
      expect(report.results.map((result) => result.name)).toEqual(STUCK);
      expect(report.summary.listed.Job).toMatchObject({ objects: LIVE + STUCK.length, pages: 3, restarts: 1 });
      expect(jobLists(proxy).map((request) => [request.query.continue !== undefined, request.status])).toEqual([
        [false, 200],
        [true, 410],
        [false, 200],
        [true, 200],
      ]);
      expect(lines.find((line) => line.restart === 1)).toMatchObject({
        level: 40,
        kind: 'Job',
        msg: 'the continue token of the Job list expired (410 Gone): listing again from the start',
      });
    });

    it('gives up with the 410 when the listing keeps expiring, after every restart it allows', async () => {
      const proxy = await faultProxy();
      proxy.fail({ method: 'GET', pathIncludes: `/namespaces/${ns}/jobs`, continued: true, status: 410, times: 10 });
      const failure = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, apply: false }).catch(
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ApiCallError);
      expect((failure as ApiCallError).failure).toMatchObject({
        status: 410,
        message:
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
      });
      expect(jobLists(proxy).filter((request) => request.status === 410)).toHaveLength(MAX_LIST_RESTARTS + 1);
    });
  });

  describe.concurrent('Argo CD Applications (argocd-hook), read for real', () => {
    /** An Application whose operation is in `phase` and lists the hook Job NS/HOOK with `hookPhase`. */
    const application = (ns: string, name: string, hook: string, phase: string, hookPhase: string) => ({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name, namespace: ns },
      spec: {
        project: 'default',
        source: { repoURL: 'https://example.com/shop.git', path: 'deploy', targetRevision: 'HEAD' },
        destination: { server: 'https://kubernetes.default.svc', namespace: ns },
      },
      status: {
        operationState: {
          operation: { sync: { revision: 'abc123' } },
          phase,
          message: `waiting for completion of hook batch/Job/${hook}`,
          startedAt: '2026-11-22T11:50:00Z',
          syncResult: {
            revision: 'abc123',
            resources: [
              {
                group: 'batch',
                version: 'v1',
                kind: 'Job',
                namespace: ns,
                name: hook,
                status: 'Synced',
                message: `job.batch/${hook} created`,
                hookType: 'PreSync',
                hookPhase,
                syncPhase: 'PreSync',
              },
            ],
          },
        },
      },
    });
    const tracked = (ns: string, name: string, instance: string) =>
      hookJob(ns, {
        name,
        annotations: {
          'argocd.argoproj.io/hook': 'PreSync',
          'argocd.argoproj.io/tracking-id': `${instance}:batch/Job:${ns}/${name}`,
        },
      });
    const applicationReads = (proxy: FaultProxy) =>
      proxy.requests
        .filter((request) => request.path.includes('/applications/'))
        .map((request) => [request.path.split('/').slice(-3).join('/'), request.status]);

    it('never removes the finalizer while the operation lists the hook as running; removes it once recorded', async () => {
      const ns = await ownNamespace('sweep-app');
      await create([tracked(ns, 'migrate', 'shop'), application(ns, 'shop', 'migrate', 'Running', 'Running')]);
      await jobsFinished(ns, { migrate: 'Complete' });
      await deleteObjects(ns, 'job', ['migrate']);
      const proxy = await faultProxy();
      const lookup = { instanceLabels: ['app.kubernetes.io/instance'], controlPlaneNamespaces: [ns] };
      const first = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        now: inMinutes(6),
        applicationLookup: lookup,
      });
      expect(first.report.results.map((result) => [result.name, result.action, result.reasons])).toEqual([
        [
          'migrate',
          'skipped',
          [
            `Application ${ns}/shop: its Running operation lists the hook as Running; Argo CD has not recorded its result`,
          ],
        ],
      ]);
      expect(proxy.requests.filter((request) => request.method === 'PATCH')).toEqual([]);
      expect(applicationReads(proxy)).toEqual([[`${ns}/applications/shop`, 200]]);
      // The controller records the hook's result: the operation goes on, the hook is Succeeded (a merge patch of the
      // whole Application: its status is no subresource).
      await adminObjectApi().patch(
        application(ns, 'shop', 'migrate', 'Running', 'Succeeded'),
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      );
      const second = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        now: inMinutes(6),
        applicationLookup: lookup,
      });
      expect(
        second.report.results.map((result) => [result.name, result.action, steady(result.reasons.join('; '))]),
      ).toEqual([
        [
          'migrate',
          'removed',
          `Argo CD PreSync hook; Job Complete; deleting for AGE, at least 5m0s; Application ${ns}/shop does not wait for it`,
        ],
      ]);
      expect(await stored(ns, 'job', 'migrate')).toBeUndefined();
    });

    it('finds an Application by the instance label, and judges by the grace period alone where it cannot read one', async () => {
      const ns = await ownNamespace('sweep-apps');
      await create([
        hookJob(ns, { name: 'labelled', labels: { 'app.kubernetes.io/instance': `${ns}_other` } }),
        application(ns, 'other', 'labelled', 'Terminating', 'Terminating'),
        tracked(ns, 'forbidden', 'locked'),
        tracked(ns, 'untracked-app', 'gone'),
        tracked(ns, 'broken', 'flaky'),
      ]);
      const names = ['broken', 'forbidden', 'labelled', 'untracked-app'];
      await jobsFinished(ns, Object.fromEntries(names.map((name) => [name, 'Complete' as const])));
      await deleteObjects(ns, 'job', names);
      const proxy = await faultProxy();
      proxy.fail({ method: 'GET', pathIncludes: '/applications/locked', status: 403 });
      proxy.fail({ method: 'GET', pathIncludes: '/applications/flaky', status: 500, times: 10 });
      const lookup = { instanceLabels: ['app.kubernetes.io/instance'], controlPlaneNamespaces: [ns] };
      // Still in their grace period: no Application is read.
      const early = await sweepOnce(proxy.kubeConfig(token), { namespace: ns, applicationLookup: lookup });
      expect(Object.values(early.outcome)).toEqual(['skipped', 'skipped', 'skipped', 'skipped']);
      expect(applicationReads(proxy)).toEqual([]);
      const { report, outcome } = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        now: inMinutes(6),
        applicationLookup: lookup,
        retry: { maxAttempts: 2, backoff: { initialMs: 5, maxMs: 10 } },
      });
      expect(outcome).toEqual({
        broken: 'failed',
        forbidden: 'removed',
        labelled: 'skipped',
        'untracked-app': 'removed',
      });
      expect(Object.fromEntries(report.results.map((result) => [result.name, result.reasons.at(-1)]))).toEqual({
        broken: 'could not be judged: HTTP 500: Internal error occurred: injected by the test fault proxy (HTTP 500)',
        forbidden: `Application ${ns}/locked unreadable (403)`,
        labelled: `Application ${ns}/other: its Terminating operation lists the hook as Terminating; Argo CD has not recorded its result`,
        'untracked-app': `no Application found (${ns}/gone)`,
      });
      expect(applicationReads(proxy)).toEqual([
        [`${ns}/applications/flaky`, 500],
        [`${ns}/applications/flaky`, 500],
        [`${ns}/applications/locked`, 403],
        [`${ns}/applications/other`, 200],
        [`${ns}/applications/gone`, 404],
      ]);
    });
  });

  describe.concurrent('the argo-workflows profile, with real Workflows (argo-workflows v4.1.2 CRD)', () => {
    interface WorkflowCase {
      /** Changes to the Workflow as created. */
      workflow?: (found: Json) => void;
      pod?: Partial<HookShape>;
      /** After the pod ran: its Workflow deleted, or deleted and made again (another uid). */
      then?: 'delete' | 'replace';
    }

    /** Workflows, their pods (owned by them, run by the kubelet simulator), then what `then` says, then the pods deleted. */
    async function workflowsAndPods(prefix: string, cases: Record<string, WorkflowCase>): Promise<string> {
      const ns = await ownNamespace(prefix);
      const entries = Object.entries(cases);
      await create(entries.map(([name, shape]) => workflow(ns, name, shape.workflow)));
      const uids = await Promise.all(entries.map(([name]) => uidOf(ns, 'workflow', name)));
      await create(entries.map(([name, shape], index) => workflowPod(ns, name, uids[index] as string, shape.pod)));
      const running = entries
        .filter(([, shape]) => shape.pod?.runSeconds !== undefined)
        .map(([name]) => `${name}-main`);
      await podsIn(
        ns,
        entries.map(([name]) => `${name}-main`).filter((pod) => !running.includes(pod)),
        'Succeeded',
      );
      await podsIn(ns, running, 'Running');
      for (const [name, shape] of entries) {
        if (shape.then === undefined) continue;
        await deleteObjects(ns, 'workflow', [name]);
        if (shape.then === 'replace') {
          await waitUntil(`Workflow ${name} gone`, async () => (await stored(ns, 'workflow', name)) === undefined);
          await create([workflow(ns, name)]);
        }
      }
      await deleteObjects(
        ns,
        'pod',
        entries.map(([name]) => `${name}-main`),
      );
      return ns;
    }
    const workflowReads = (proxy: FaultProxy) =>
      proxy.requests
        .filter((request) => request.path.includes('/workflows/'))
        .map((request) => [request.path.split('/').at(-1), request.status]);

    it('removes only workflows.argoproj.io/status from a finished pod whose Workflow is done with it', async () => {
      const ns = await workflowsAndPods('sweep-wf-done', {
        'wf-gone': { then: 'delete' },
        'wf-other-uid': { then: 'replace' },
        // Held by another finalizer: still there, being deleted.
        'wf-deleting': { workflow: (found) => (found.metadata.finalizers = [KEEP]), then: 'delete' },
        'wf-completed': { workflow: (found) => (found.metadata.labels['workflows.argoproj.io/completed'] = 'true') },
        'wf-node-done': { workflow: (found) => (found.status.nodes['wf-node-done-node'].phase = 'Succeeded') },
      });
      const firstUid = (((await stored(ns, 'pod', 'wf-other-uid-main'))?.metadata as Json).ownerReferences as Json[])[0]
        ?.uid as string;
      const replaced = await uidOf(ns, 'workflow', 'wf-other-uid');
      const proxy = await faultProxy();
      const { report } = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        profiles: ['argo-workflows'],
        now: inMinutes(15),
      });
      expect(
        report.results.map((result) => [
          result.name,
          result.action,
          result.finalizer,
          steady(result.reasons.join('; ')),
        ]),
      ).toEqual([
        [
          'wf-completed-main',
          'removed',
          WORKFLOW_FINALIZER,
          'Argo Workflows pod of Workflow wf-completed; Pod Succeeded; deleting for AGE, at least 10m0s; Workflow wf-completed is completed (workflows.argoproj.io/completed=true)',
        ],
        [
          'wf-deleting-main',
          'removed',
          WORKFLOW_FINALIZER,
          'Argo Workflows pod of Workflow wf-deleting; Pod Succeeded; deleting for AGE, at least 10m0s; Workflow wf-deleting is being deleted',
        ],
        [
          'wf-gone-main',
          'removed',
          WORKFLOW_FINALIZER,
          'Argo Workflows pod of Workflow wf-gone; Pod Succeeded; deleting for AGE, at least 10m0s; Workflow wf-gone is gone',
        ],
        [
          'wf-node-done-main',
          'removed',
          WORKFLOW_FINALIZER,
          'Argo Workflows pod of Workflow wf-node-done; Pod Succeeded; deleting for AGE, at least 10m0s; node wf-node-done-node of Workflow wf-node-done is Succeeded',
        ],
        [
          'wf-other-uid-main',
          'removed',
          WORKFLOW_FINALIZER,
          `Argo Workflows pod of Workflow wf-other-uid; Pod Succeeded; deleting for AGE, at least 10m0s; Workflow wf-other-uid has another UID (${replaced}, the pod's is ${firstUid}): the pod's own Workflow is gone`,
        ],
      ]);
      // Pods this kubelet is done with go once their last finalizer does.
      for (const name of ['wf-completed', 'wf-deleting', 'wf-gone', 'wf-node-done', 'wf-other-uid'])
        expect(await stored(ns, 'pod', `${name}-main`)).toBeUndefined();
      expect(workflowReads(proxy)).toEqual([
        ['wf-completed', 200],
        ['wf-deleting', 200],
        ['wf-gone', 404],
        ['wf-node-done', 200],
        ['wf-other-uid', 200],
      ]);
      // Each removal on the record, on the Pod.
      expect(
        (await eventsIn(ns))
          .map((event) => [event.regarding.apiVersion, event.regarding.kind, event.regarding.name, event.reason])
          .sort((a, b) => String(a[2]).localeCompare(String(b[2]))),
      ).toEqual(
        ['wf-completed', 'wf-deleting', 'wf-gone', 'wf-node-done', 'wf-other-uid'].map((name) => [
          'v1',
          'Pod',
          `${name}-main`,
          'FinalizerRemoved',
        ]),
      );
      await setFinalizers(ns, 'workflow', 'wf-deleting', null);
    });

    it('leaves a pod alone while its Workflow may still need it, and says why; a Workflow it cannot read fails it', async () => {
      const ns = await workflowsAndPods('sweep-wf-wait', {
        'wf-node-running': {},
        'wf-unsynced': {
          workflow: (found) =>
            Object.assign(found.status.nodes['wf-unsynced-node'], { phase: 'Succeeded', taskResultSynced: false }),
        },
        'wf-pod-running': { pod: { runSeconds: 3600 } },
        'wf-forbidden': { workflow: (found) => (found.status.nodes['wf-forbidden-node'].phase = 'Succeeded') },
      });
      const proxy = await faultProxy();
      proxy.fail({ method: 'GET', pathIncludes: '/workflows/wf-forbidden', status: 403 });
      const options = { namespace: ns, profiles: ['argo-workflows' as const] };
      const UNDER_GRACE =
        "deleting for AGE, under 10m0s: Argo Workflows removes it itself 2 minutes after the pod's last change";
      // Five minutes on: under the grace of ten, no Workflow is read.
      const early = await sweepOnce(proxy.kubeConfig(token), { ...options, now: inMinutes(5) });
      expect(
        early.report.results.map((result) => [result.name, result.action, steady(result.reasons.join('; '))]),
      ).toEqual([
        ['wf-forbidden-main', 'skipped', UNDER_GRACE],
        ['wf-node-running-main', 'skipped', UNDER_GRACE],
        ['wf-pod-running-main', 'skipped', 'Pod Running, not finished: Argo Workflows still needs its result'],
        ['wf-unsynced-main', 'skipped', UNDER_GRACE],
      ]);
      expect(workflowReads(proxy)).toEqual([]);
      const { report } = await sweepOnce(proxy.kubeConfig(token), { ...options, now: inMinutes(15) });
      expect(report.results.map((result) => [result.name, result.action, steady(result.reasons.join('; '))])).toEqual([
        [
          'wf-forbidden-main',
          'failed',
          'could not be judged: HTTP 403: Internal error occurred: injected by the test fault proxy (HTTP 403)',
        ],
        [
          'wf-node-running-main',
          'skipped',
          'Workflow wf-node-running is not completed and node wf-node-running-node is Running: its result is not recorded yet',
        ],
        ['wf-pod-running-main', 'skipped', 'Pod Running, not finished: Argo Workflows still needs its result'],
        [
          'wf-unsynced-main',
          'skipped',
          'Workflow wf-unsynced is not completed and node wf-unsynced-node is Succeeded but its result is not synced yet (taskResultSynced: false)',
        ],
      ]);
      // A pod that is not finished costs no Workflow read.
      expect(workflowReads(proxy).map(([name]) => name)).toEqual(['wf-forbidden', 'wf-node-running', 'wf-unsynced']);
      expect(proxy.requests.filter((request) => request.method === 'PATCH')).toEqual([]);
      expect(await finalizersOf(ns, 'pod', 'wf-forbidden-main')).toEqual([WORKFLOW_FINALIZER]);
    });
  });

  describe.concurrent('a profile removes its own finalizer and no other', () => {
    it.each<[SweepProfileId[], Record<string, string[] | undefined>]>([
      [
        ['argocd-hook'],
        {
          'hook-job': [KEEP],
          'hook-pod': [KEEP],
          'wf-main': [KEEP, WORKFLOW_FINALIZER],
          both: [KEEP, WORKFLOW_FINALIZER],
          'keep-only': [KEEP],
        },
      ],
      [
        ['argo-workflows'],
        {
          'hook-job': [KEEP, HOOK_FINALIZER],
          'hook-pod': [HOOK_FINALIZER, KEEP],
          'wf-main': [KEEP],
          both: [HOOK_FINALIZER, KEEP],
          'keep-only': [KEEP],
        },
      ],
      [
        ['argocd-hook', 'argo-workflows'],
        { 'hook-job': [KEEP], 'hook-pod': [KEEP], 'wf-main': [KEEP], both: [KEEP], 'keep-only': [KEEP] },
      ],
    ])('with --profile %j', async (profiles, finalizers) => {
      const ns = await ownNamespace('sweep-profiles');
      // The Workflow is done with its node: its pods qualify for the argo-workflows profile.
      await create([workflow(ns, 'wf', (found) => (found.status.nodes['wf-node'].phase = 'Succeeded'))]);
      const owner = await uidOf(ns, 'workflow', 'wf');
      // A workflow step that is also an Argo CD hook: both finalizers, both stuck.
      const stepAndHook = workflowPod(ns, 'wf', owner, {
        finalizers: [HOOK_FINALIZER, KEEP, WORKFLOW_FINALIZER],
        annotations: { 'argocd.argoproj.io/hook': 'PostSync' },
      });
      (stepAndHook.metadata as Json).name = 'both';
      await create([
        hookJob(ns, { name: 'hook-job', finalizers: [KEEP, HOOK_FINALIZER] }),
        hookPod(ns, { name: 'hook-pod', finalizers: [HOOK_FINALIZER, KEEP] }),
        stepAndHook,
        hookPod(ns, { name: 'keep-only', finalizers: [KEEP] }),
        workflowPod(ns, 'wf', owner, { finalizers: [KEEP, WORKFLOW_FINALIZER] }),
      ]);
      await jobsFinished(ns, { 'hook-job': 'Complete' });
      await podsIn(ns, ['hook-pod', 'both', 'keep-only', 'wf-main'], 'Succeeded');
      await deleteObjects(ns, 'job', ['hook-job']);
      await deleteObjects(ns, 'pod', ['hook-pod', 'both', 'keep-only', 'wf-main']);
      const proxy = await faultProxy();
      const { report, lines } = await sweepOnce(proxy.kubeConfig(token), {
        namespace: ns,
        profiles,
        now: inMinutes(15),
      });
      const after = Object.fromEntries(
        await Promise.all(
          ['hook-job', 'hook-pod', 'wf-main', 'both', 'keep-only'].map(async (name) => [
            name,
            (await finalizersOf(ns, name === 'hook-job' ? 'job' : 'pod', name)) as string[] | undefined,
          ]),
        ),
      );
      expect(after).toEqual(finalizers);
      expect(report.results.every((result) => profiles.includes(result.profile))).toBe(true);
      // Objects holding no finalizer of the run's profiles are never read in full; a run for Pods only lists no Jobs.
      expect(proxy.requests.some((request) => request.path.endsWith('/keep-only'))).toBe(false);
      expect(proxy.requests.some((request) => request.path === `/apis/batch/v1/namespaces/${ns}/jobs`)).toBe(
        profiles.includes('argocd-hook'),
      );
      const summaries = lines.filter((line) => line.summary !== undefined);
      expect(summaries).toHaveLength(1);
      expect(lines.at(-1)).toBe(summaries[0]);
      // Per profile, the objects being deleted that hold its finalizer, and what became of them.
      const tally = (candidates: number) => ({
        candidates,
        'would-remove': 0,
        removed: candidates,
        gone: 0,
        skipped: 0,
        failed: 0,
      });
      expect(summaries[0]?.summary).toEqual({
        dryRun: false,
        namespace: ns,
        profiles: Object.fromEntries(profiles.map((profile) => [profile, tally(profile === 'argocd-hook' ? 3 : 2)])),
        listed: {
          ...(profiles.includes('argocd-hook')
            ? { Job: { objects: 1, pages: 1, bytes: expect.any(Number), restarts: 0 } }
            : {}),
          // The Job's own Pod may be gone by then, with the Job.
          Pod: { objects: expect.any(Number), pages: 1, bytes: expect.any(Number), restarts: 0 },
        },
        eventsFailed: 0,
        durationMs: expect.any(Number),
      });
    });
  });
});
