// `hookguard why` (the built CLI) on the states of test/golden/why/ that the kubelet simulator does not play (an init
// container that fails, a missing Secret, a crash loop's growing back-off, a mesh sidecar that outlives the hook) and
// on OpenShift's SCC refusals, which the test control plane has no admission for: each made a real object by the
// admin, as the fixture has it. A Job carries spec.managedBy (another controller's name), so the Job controller leaves
// it and its Pods alone (v1.37.2 pkg/controller/job/job_controller.go isManagedByJobController). A Pod is not bound
// to the fixture's Node worker-2: PodGC force-deletes a Pod of a Node that does not exist (once the name has been
// quarantined 40 s, any later Pod at once: pkg/controller/podgc/gc_controller.go gcOrphaned), and a real Node would
// change what the scheduler says of the cluster to the tests beside this one. It names instead a scheduler there is
// none of (spec.schedulerName), so no scheduler binds it and the kubelet simulator (which plays only Pods on its
// sim-node-* Nodes) never sees it; hookguard why reads no spec.nodeName. The statuses are written through the status
// subresource and the Events created as the admin, their moments moved so the ages are the fixture's. Also `why -A`,
// through the fault proxy narrowed to the test's namespaces, and `why --application` on a real Application (the CRD
// of test/cluster/argocd/).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';
import { relocated, whyFixture, type WhyFixture } from '../support/why-fixtures.js';
import {
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlPath,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import { FaultProxy, serviceAccountToken } from './support/fault-proxy.js';

type Json = Record<string, any>;
/** COUNT strings. */
type Tuple<Count extends number, Built extends string[] = []> = Built['length'] extends Count
  ? Built
  : Tuple<Count, [...Built, string]>;

const MANAGED_BY = 'hookguard.test/why-states';
const applicationCrd = join(repoRoot, 'test', 'cluster', 'argocd', 'application-crd.yaml');

let dir = '';
const namespaces: string[] = [];
const clusterObjects: string[] = [];
const proxies: FaultProxy[] = [];

async function namespace(): Promise<string> {
  const ns = await newNamespace('why-states');
  namespaces.push(ns);
  return ns;
}

const SERVER_FIELDS = ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'managedFields', 'selfLink'];
const JOB_LABELS = ['batch.kubernetes.io/controller-uid', 'batch.kubernetes.io/job-name', 'controller-uid', 'job-name'];

/**
 * OBJECT without what the API server sets, and its status apart. A Pod is bound to no Node and names a scheduler there
 * is none of, so it stays where its status says it is (see the top of the file), and carries no finalizer.
 */
function fresh(object: Json): { object: Json; status: Json | undefined } {
  const copy = structuredClone(object);
  for (const field of SERVER_FIELDS) delete copy.metadata[field];
  if (copy.kind === 'Pod') {
    // The Job controller's batch.kubernetes.io/job-tracking: with no controller to remove it, the Pod and its
    // namespace would never go. hookguard why reads no finalizer.
    delete copy.metadata.finalizers;
    delete copy.spec.nodeName;
    copy.spec.schedulerName = MANAGED_BY;
  }
  const status = copy.status as Json | undefined;
  delete copy.status;
  return { object: copy, status };
}

async function create(object: Json): Promise<Json> {
  return JSON.parse(await kubectl(['create', '-o', 'json', '-f', '-'], JSON.stringify(object))) as Json;
}

async function writeStatus(kind: string, ns: string, name: string, status: Json | undefined): Promise<void> {
  if (status === undefined || Object.keys(status).length === 0) return;
  await kubectl(
    ['patch', kind, name, '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })],
    undefined,
  );
}

/**
 * The fixture NAME in NS, real: its hook (a Job the Job controller does not manage, or a Pod), its Pods (owned by
 * that Job, by its real uid) with their statuses, and its Events (each once: both APIs serve the same object).
 * EDIT changes the fixture first.
 */
async function seed(name: string, ns: string, edit: (fixture: WhyFixture) => void = () => {}): Promise<void> {
  const fixture = relocated(whyFixture(name), Date.now(), ns);
  edit(fixture);
  const uids = new Map<string, string>();
  const hook = fixture.hook as Json;
  const { object, status } = fresh(hook);
  if (object.kind === 'Job') {
    delete object.spec.selector;
    delete object.spec.manualSelector;
    for (const label of JOB_LABELS) delete object.spec.template.metadata?.labels?.[label];
    object.spec.managedBy = MANAGED_BY;
  }
  const created = await create(object);
  uids.set(hook.metadata.uid as string, created.metadata.uid as string);
  await writeStatus(object.kind as string, ns, object.metadata.name as string, status);
  const renamed = (value: Json): Json => {
    let text = JSON.stringify(value);
    for (const [from, to] of uids) text = text.split(from).join(to);
    return JSON.parse(text) as Json;
  };
  await Promise.all(
    (fixture.pods as Json[]).map(async (pod) => {
      const { object: real, status: podStatus } = fresh(renamed(pod));
      const made = await create(real);
      uids.set(pod.metadata.uid as string, made.metadata.uid as string);
      await writeStatus('pod', ns, real.metadata.name as string, podStatus);
    }),
  );
  const seen = new Set<string>();
  const events: Json[] = [];
  for (const event of fixture.events as Json[]) {
    const uid = event.metadata.uid as string;
    if (seen.has(uid)) continue;
    seen.add(uid);
    events.push(coreEvent(fresh(renamed(event)).object));
  }
  if (events.length > 0)
    await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: events }));
}

/**
 * An events.k8s.io/v1 Event (eventTime null) as the core/v1 Event it is a view of: the Job controller and the kubelet
 * record through core/v1 (client-go tools/record), and the API server refuses an events.k8s.io/v1 Event without an
 * eventTime (pkg/apis/core/validation/events.go ValidateEventCreate).
 */
function coreEvent(event: Json): Json {
  if (event.apiVersion !== 'events.k8s.io/v1') return event;
  const core: Json = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: event.metadata,
    involvedObject: event.regarding,
    reason: event.reason,
    message: event.note,
    type: event.type,
    source: event.deprecatedSource,
    firstTimestamp: event.deprecatedFirstTimestamp,
    lastTimestamp: event.deprecatedLastTimestamp,
    count: event.deprecatedCount,
    reportingComponent: event.reportingController,
    reportingInstance: event.reportingInstance,
    action: event.action,
  };
  return Object.fromEntries(Object.entries(core).filter(([, value]) => value !== undefined && value !== null));
}

/** The moment and age move with the clock; the rest is compared exactly. */
const steady = (text: string) => text.replace(/ since \S+ \([0-9dhms]+\)/g, ' since TIME (AGE)');

function why(args: readonly string[], env: Record<string, string> = {}) {
  return run(process.execPath, [cliPath, 'why', ...args], { env });
}

const MIGRATE_FAILED = (ns: string) =>
  [
    `Job ${ns}/db-migrate: Failed (ContainerFailed) since TIME (AGE)`,
    '  container migrate of Pod db-migrate-9tq2w exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)',
    '  termination message:',
    '    | Applying migration 0042_add_orders_index',
    '    | ERROR:  relation "orders_customer_id_idx" already exists',
    '    | migration 0042 failed; rolled back',
    `  next step: Read its log: kubectl logs -n ${ns} db-migrate-9tq2w -c migrate`,
  ].join('\n');

const INIT_FAILED = (ns: string) =>
  [
    `Pod ${ns}/schema-check: Failed (ContainerFailed) since TIME (AGE)`,
    '  init container wait-for-db of Pod schema-check exited with code 1 (Error)',
    '  termination message:',
    '    | database "shop" does not exist',
    `  next step: Read its log: kubectl logs -n ${ns} schema-check -c wait-for-db`,
  ].join('\n');

const IMAGE_PULL_STUCK = (ns: string) =>
  [
    `Job ${ns}/db-migrate: Stuck (ImagePullBackOff) since TIME (AGE)`,
    '  container migrate of Pod db-migrate-x2v7c cannot pull image registry.example.com/shop/migrate:2.4.l (ImagePullBackOff)',
    '  Event Failed (kubelet): Failed to pull image "registry.example.com/shop/migrate:2.4.l": rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.com/shop/migrate:2.4.l": failed to resolve reference "registry.example.com/shop/migrate:2.4.l": registry.example.com/shop/migrate:2.4.l: not found',
    '  next step: Check that image registry.example.com/shop/migrate:2.4.l exists and that the Pod may pull it (the tag, imagePullSecrets, registry access).',
  ].join('\n');

const QUOTA_BLOCKED = (ns: string) =>
  [
    `Job ${ns}/db-migrate: Blocked (FailedCreate) since TIME (AGE)`,
    '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-zmmz4" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
    `  next step: Raise ResourceQuota compute-resources in ${ns} or lower the hook's requests and limits.`,
  ].join('\n');

describeCluster('hookguard why on the states the kubelet simulator does not play, made real by the admin', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookguard-why-states-'));
  });
  afterAll(async () => {
    for (const proxy of proxies) await proxy.stop();
    for (const ns of namespaces) await deleteNamespace(ns);
    for (const object of clusterObjects) await run('kubectl', ['delete', object, '--ignore-not-found']);
    await rm(dir, { recursive: true, force: true });
  });

  describe.concurrent('job/NAME and pod/NAME', () => {
    const cases: Array<{ fixture: string; target: string; text: (ns: string) => string }> = [
      // The kubelet simulator runs every init container to success.
      { fixture: 'failed-init-container', target: 'pod/schema-check', text: INIT_FAILED },
      // The kubelet simulator never leaves a container in CreateContainerConfigError.
      {
        fixture: 'stuck-missing-secret',
        target: 'job/db-migrate',
        text: (ns) =>
          [
            `Job ${ns}/db-migrate: Stuck (CreateContainerConfigError) since TIME (AGE)`,
            '  container migrate of Pod db-migrate-k4d8s cannot be created: secret "db-credentials" not found',
            `  next step: Create Secret db-credentials in namespace ${ns}, or fix the reference in container migrate.`,
          ].join('\n'),
      },
      // The kubelet simulator restarts after a fixed second: no growing back-off keeps the container waiting.
      {
        fixture: 'stuck-crash-loop',
        target: 'job/db-migrate',
        text: (ns) =>
          [
            `Job ${ns}/db-migrate: Stuck (CrashLoopBackOff) since TIME (AGE)`,
            '  container migrate of Pod db-migrate-r5n2j keeps crashing (5 restarts; last exit code 2, Error)',
            '  termination message:',
            '    | dial tcp 10.96.14.2:5432: connect: connection refused',
            `  next step: Read the last run's log: kubectl logs -n ${ns} db-migrate-r5n2j -c migrate --previous`,
          ].join('\n'),
      },
      // The kubelet simulator ends every main container at once: none outlives the hook.
      {
        fixture: 'stuck-mesh-sidecar',
        target: 'job/db-migrate',
        text: (ns) =>
          [
            `Job ${ns}/db-migrate: Stuck (SidecarRunning) since TIME (AGE)`,
            '  container migrate of Pod db-migrate-m3s8x finished, but container istio-proxy still runs, so the Pod never completes',
            '  next step: Make istio-proxy a native sidecar (an init container with restartPolicy: Always) or keep it out of the hook (sidecar.istio.io/inject: "false", linkerd.io/inject: disabled).',
          ].join('\n'),
      },
      // The test control plane has no OpenShift SCC admission: the Job controller's Event is the admin's.
      {
        fixture: 'blocked-openshift-scc',
        target: 'job/db-migrate',
        text: (ns) =>
          [
            `Job ${ns}/db-migrate: Blocked (FailedCreate) since TIME (AGE)`,
            '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-" is forbidden: unable to validate against any security context constraint: [provider "anyuid": Forbidden: not usable by user or serviceaccount, spec.containers[0].securityContext.runAsUser: Invalid value: 1000: must be in the ranges: [1000650000, 1000659999], provider "restricted": Forbidden: not usable by user or serviceaccount]',
            "  next step: Let the hook's service account use a fitting SCC, or drop the securityContext fields named above (runAsUser).",
          ].join('\n'),
      },
    ];
    for (const { fixture, target, text } of cases) {
      it(`${fixture}: exit 1`, async ({ expect }) => {
        const ns = await namespace();
        await seed(fixture, ns);
        const result = await why([target, '-n', ns]);
        expect(result.stderr).toBe('');
        expect(steady(result.stdout)).toBe(`${text(ns)}\n`);
        expect(result.status).toBe(1);
      });
    }
  });
  /** A reader of every namespace (a ClusterRole: Jobs, Pods, both Events APIs, Applications), through a new proxy that
   * shows cluster-wide lists only NAMESPACES: a kubeconfig file for it. */
  async function clusterReader(
    home: string,
    ...others: string[]
  ): Promise<{ proxy: FaultProxy; env: Record<string, string> }> {
    const namespaces = [home, ...others];
    const name = `why-reader-${home}`;
    clusterObjects.push(`clusterrolebinding/${name}`, `clusterrole/${name}`);
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'reader', namespace: home } },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name },
            rules: [
              { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list'] },
              { apiGroups: [''], resources: ['pods', 'events'], verbs: ['get', 'list'] },
              { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['get', 'list'] },
              { apiGroups: ['argoproj.io'], resources: ['applications'], verbs: ['get', 'list'] },
            ],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
            subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: home }],
          },
        ],
      }),
    );
    // The API server's RBAC authorizer learns of the binding from its informer a moment later.
    const as = `--as=system:serviceaccount:${home}:reader`;
    for (const resource of ['jobs.batch', 'pods', 'events', 'events.events.k8s.io', 'applications.argoproj.io'])
      await waitUntil(
        `${home}'s reader may list ${resource}`,
        async () => (await run(kubectlPath, ['auth', 'can-i', 'list', resource, '-A', as])).stdout === 'yes\n',
      );
    const token = await serviceAccountToken(home, 'reader');
    const proxy = await FaultProxy.start();
    proxies.push(proxy);
    proxy.namespaces = new Set(namespaces);
    const kubeconfig = join(dir, `kubeconfig-${home}`);
    await writeFile(kubeconfig, proxy.kubeConfig(token).exportConfig());
    return { proxy, env: { KUBECONFIG: kubeconfig } };
  }

  /** COUNT new namespaces, in the order a cluster lists them (by name), as why -A reads them. */
  async function sortedNamespaces<Count extends number>(count: Count): Promise<Tuple<Count>> {
    return (await Promise.all(Array.from({ length: count }, () => namespace()))).sort() as Tuple<Count>;
  }

  describe.concurrent('why -A, through the fault proxy showing only the namespaces of the test', () => {
    it('lists every hook that is not Succeeded or Running, across namespaces, and says what it left out', async ({
      expect,
    }) => {
      const [a, b, c, d, e] = await sortedNamespaces(5);
      await Promise.all([
        seed('succeeded', a),
        seed('running', b),
        seed('stuck-image-pull', c),
        seed('blocked-quota', d),
        // A failed Job that is no hook is none of hookguard's business.
        seed('failed-oomkilled', e, (fixture) => {
          (fixture.hook as Json).metadata.annotations = {};
        }),
      ]);
      const { proxy, env } = await clusterReader(a, b, c, d, e);
      const result = await why(['-A'], env);
      expect(steady(result.stdout)).toBe(
        [
          IMAGE_PULL_STUCK(c),
          '',
          QUOTA_BLOCKED(d),
          '',
          '4 hooks looked at (all namespaces): 1 Stuck, 1 Blocked; 2 Succeeded or Running not shown',
          '',
        ].join('\n'),
      );
      expect(result.status).toBe(1);
      // The Succeeded Job was judged from the list alone: its Pods and Events were never read.
      expect(proxy.requests.filter((request) => request.path.startsWith(`/api/v1/namespaces/${a}/`))).toEqual([]);
      expect(proxy.requests.some((request) => request.path.startsWith(`/api/v1/namespaces/${c}/`))).toBe(true);
    });

    it('exits 0 and says so when nothing is failing', async ({ expect }) => {
      const [a, b] = await sortedNamespaces(2);
      await Promise.all([seed('succeeded', a), seed('running', b)]);
      const { env } = await clusterReader(a, b);
      const result = await why(['-A'], env);
      expect(result.stdout).toBe('no hook failing, stuck, blocked or suspended (all namespaces): 2 hooks looked at\n');
      expect(result.status).toBe(0);
    });

    it('why.maxHooks caps the hooks looked at, and says how many were not', async ({ expect }) => {
      const [c, d] = await sortedNamespaces(2);
      await Promise.all([seed('stuck-image-pull', c), seed('blocked-quota', d)]);
      const { env } = await clusterReader(c, d);
      const config = join(dir, `max-hooks-${c}.yaml`);
      await writeFile(config, 'why:\n  maxHooks: 1\n');
      const result = await why(['-A', '--config', config], env);
      expect(steady(result.stdout)).toBe(
        [IMAGE_PULL_STUCK(c), '', '1 more hook not looked at (why.maxHooks); narrow with -n or --application', ''].join(
          '\n',
        ),
      );
      expect(result.status).toBe(1);
    });
  });

  describe.concurrent('why --application, on a real Application', () => {
    beforeAll(async () => {
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', applicationCrd]);
    });

    it("explains the operation's hooks, live or gone, and the hooks carrying the Application's tracking id", async ({
      expect,
    }) => {
      const [argocd, ns] = await Promise.all([namespace(), namespace()]);
      await Promise.all([
        // The Job as Argo CD applied it: its hook annotation and tracking id (argo-cd util/argo/resource_tracking.go).
        seed('failed-exit-code', ns, (fixture) => {
          (fixture.hook as Json).metadata.annotations = {
            'argocd.argoproj.io/hook': 'PreSync',
            'argocd.argoproj.io/tracking-id': `${argocd}_shop:batch/Job:${ns}/db-migrate`,
          };
        }),
        seed('failed-init-container', ns, (fixture) => {
          (fixture.hook as Json).metadata.annotations['argocd.argoproj.io/tracking-id'] =
            `${argocd}_shop:/Pod:${ns}/schema-check`;
        }),
        // Another Application's hook in the same namespace is not this one's.
        seed('stuck-image-pull', ns, (fixture) => {
          const job = fixture.hook as Json;
          job.metadata.name = 'other-migrate';
          job.metadata.annotations = {
            'argocd.argoproj.io/hook': 'PreSync',
            'argocd.argoproj.io/tracking-id': `${argocd}_billing:batch/Job:${ns}/other-migrate`,
          };
          fixture.pods = [];
          fixture.events = [];
        }),
      ]);
      const hookResource = (name: string) => ({
        group: 'batch',
        version: 'v1',
        kind: 'Job',
        namespace: ns,
        name,
        status: 'Synced',
        hookType: 'PreSync',
        hookPhase: 'Failed',
        message: 'Job has reached the specified backoff limit',
        syncPhase: 'PreSync',
      });
      // The CRD has no status subresource: Argo CD writes an Application's status with the rest of it.
      await create({
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: { name: 'shop', namespace: argocd },
        spec: {
          project: 'default',
          destination: { namespace: ns, server: 'https://kubernetes.default.svc' },
          source: { repoURL: 'https://git.example.com/shop.git', path: 'deploy', targetRevision: 'HEAD' },
        },
        status: {
          operationState: {
            phase: 'Failed',
            message: 'one or more synchronization tasks completed unsuccessfully',
            startedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
            operation: { sync: {} },
            syncResult: {
              revision: 'HEAD',
              resources: [
                hookResource('db-seed'),
                hookResource('db-migrate'),
                { group: '', version: 'v1', kind: 'ConfigMap', namespace: ns, name: 'settings', status: 'Synced' },
              ],
            },
          },
        },
      });
      const { env } = await clusterReader(argocd, ns);
      const result = await why(['--application', `${argocd}/shop`], env);
      expect(result.stderr).toBe('');
      expect(steady(result.stdout)).toBe(
        [
          `Application ${argocd}/shop: operation Failed: one or more synchronization tasks completed unsuccessfully`,
          '',
          `Job ${ns}/db-seed: Failed (Deleted)`,
          '  Job db-seed no longer exists; Argo CD recorded it as Failed: Job has reached the specified backoff limit',
          '  next step: Its Pods and Events went with it: to keep a failed hook for reading, leave HookFailed out of its delete policy (or raise its ttlSecondsAfterFinished), then sync again.',
          '',
          MIGRATE_FAILED(ns),
          '',
          INIT_FAILED(ns),
          '',
          `3 hooks looked at (Application ${argocd}/shop): 3 Failed`,
          '',
        ].join('\n'),
      );
      expect(result.status).toBe(1);
    });

    it('an Application that is not there: exit 2', async ({ expect }) => {
      const argocd = await namespace();
      const { env } = await clusterReader(argocd);
      const result = await why(['--application', `${argocd}/nope`], env);
      expect(result.stderr).toBe(`hookguard why: Application ${argocd}/nope not found\n`);
      expect(result.stdout).toBe('');
      expect(result.status).toBe(2);
    });
  });
});
