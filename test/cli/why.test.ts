// `hookguard why` against the stand-in for kube-apiserver (test/support/fake-apiserver.ts; no kube-apiserver can be
// installed here): the hooks of test/golden/why/, stored as a cluster holds them, read through a kubeconfig file as
// kubectl reads it. The exact text a person reads and the exit status, per state.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCliAsync } from '../support/cli.js';
import { runCommand } from '../support/command.js';
import { FakeApiServer, rbacAuthorizer, type PolicyRule } from '../support/fake-apiserver.js';
import { relocated, seedWhy, whyFixture } from '../support/why-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-why-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let server: FakeApiServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** A cluster holding the named fixtures, each in its own namespace (default: all in shop), and its kubeconfig. */
async function cluster(
  fixtures: ReadonlyArray<string | [name: string, namespace: string]>,
): Promise<{ server: FakeApiServer; env: Record<string, string>; kubeconfig: string }> {
  server = await new FakeApiServer().start();
  const now = Date.now();
  for (const entry of fixtures) {
    const [name, namespace] = typeof entry === 'string' ? [entry, 'shop'] : entry;
    seedWhy(server, relocated(whyFixture(name), now, namespace));
  }
  const kubeconfig = join(dir, `kubeconfig-${server.port}`);
  writeFileSync(kubeconfig, server.kubeConfig('developer').exportConfig());
  return { server, env: { KUBECONFIG: kubeconfig }, kubeconfig };
}

/** The moment and age move with the clock; the rest is compared exactly (the JSON test checks the ages). */
const steady = (text: string) => text.replace(/ since \S+ \([0-9dhms]+\)/g, ' since TIME (AGE)');

const MIGRATE_FAILED = [
  'Job shop/db-migrate: Failed (ContainerFailed) since TIME (AGE)',
  '  container migrate of Pod db-migrate-9tq2w exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)',
  '  termination message:',
  '    | Applying migration 0042_add_orders_index',
  '    | ERROR:  relation "orders_customer_id_idx" already exists',
  '    | migration 0042 failed; rolled back',
  '  next step: Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
].join('\n');

const IMAGE_PULL_STUCK = (namespace: string) =>
  [
    `Job ${namespace}/db-migrate: Stuck (ImagePullBackOff) since TIME (AGE)`,
    '  container migrate of Pod db-migrate-x2v7c cannot pull image registry.example.com/shop/migrate:2.4.l (ImagePullBackOff)',
    '  Event Failed (kubelet): Failed to pull image "registry.example.com/shop/migrate:2.4.l": rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.com/shop/migrate:2.4.l": failed to resolve reference "registry.example.com/shop/migrate:2.4.l": registry.example.com/shop/migrate:2.4.l: not found',
    '  next step: Check that image registry.example.com/shop/migrate:2.4.l exists and that the Pod may pull it (the tag, imagePullSecrets, registry access).',
  ].join('\n');

const QUOTA_BLOCKED = (namespace: string) =>
  [
    `Job ${namespace}/db-migrate: Blocked (FailedCreate) since TIME (AGE)`,
    '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-zmmz4" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
    `  next step: Raise ResourceQuota compute-resources in ${namespace} or lower the hook's requests and limits.`,
  ].join('\n');

describe('hookguard why job/NAME and pod/NAME: one line per fact, the exit status by state', () => {
  const cases: Array<{ fixture: string; target: string; status: number; text: string }> = [
    {
      fixture: 'succeeded',
      target: 'job/db-migrate',
      status: 0,
      text: [
        'Job shop/db-migrate: Succeeded (Completed) since TIME (AGE)',
        '  Job db-migrate completed',
        '  next step: Nothing to do.',
      ].join('\n'),
    },
    {
      fixture: 'running',
      target: 'job/db-migrate',
      status: 0,
      text: [
        'Job shop/db-migrate: Running (Running) since TIME (AGE)',
        '  Pod db-migrate-7xk2p is running',
        '  next step: Wait: it is called stuck after 300s.',
      ].join('\n'),
    },
    { fixture: 'failed-exit-code', target: 'job/db-migrate', status: 1, text: MIGRATE_FAILED },
    {
      fixture: 'failed-oomkilled',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Failed (OOMKilled) since TIME (AGE)',
        '  container migrate of Pod db-migrate-p8m4z exited with code 137 (OOMKilled); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)',
        "  next step: Raise container migrate's memory limit (now 128Mi) or make it use less.",
      ].join('\n'),
    },
    {
      fixture: 'failed-deadline',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Failed (DeadlineExceeded) since TIME (AGE)',
        '  Job db-migrate failed: DeadlineExceeded (Job was active longer than specified deadline)',
        '  next step: Find why it ran past activeDeadlineSeconds (600s), or raise it.',
      ].join('\n'),
    },
    {
      fixture: 'failed-init-container',
      target: 'pod/schema-check',
      status: 1,
      text: [
        'Pod shop/schema-check: Failed (ContainerFailed) since TIME (AGE)',
        '  init container wait-for-db of Pod schema-check exited with code 1 (Error)',
        '  termination message:',
        '    | database "shop" does not exist',
        '  next step: Read its log: kubectl logs -n shop schema-check -c wait-for-db',
      ].join('\n'),
    },
    { fixture: 'stuck-image-pull', target: 'job/db-migrate', status: 1, text: IMAGE_PULL_STUCK('shop') },
    {
      fixture: 'stuck-missing-secret',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Stuck (CreateContainerConfigError) since TIME (AGE)',
        '  container migrate of Pod db-migrate-k4d8s cannot be created: secret "db-credentials" not found',
        '  next step: Create Secret db-credentials in namespace shop, or fix the reference in container migrate.',
      ].join('\n'),
    },
    {
      fixture: 'stuck-crash-loop',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Stuck (CrashLoopBackOff) since TIME (AGE)',
        '  container migrate of Pod db-migrate-r5n2j keeps crashing (5 restarts; last exit code 2, Error)',
        '  termination message:',
        '    | dial tcp 10.96.14.2:5432: connect: connection refused',
        "  next step: Read the last run's log: kubectl logs -n shop db-migrate-r5n2j -c migrate --previous",
      ].join('\n'),
    },
    {
      fixture: 'stuck-unschedulable',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Stuck (Unschedulable) since TIME (AGE)',
        '  Pod db-migrate-w9c3f cannot be scheduled: 0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.',
        '  next step: Free or add capacity, or change the requests, node selector, affinity or tolerations the scheduler names.',
      ].join('\n'),
    },
    {
      fixture: 'stuck-mesh-sidecar',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Stuck (SidecarRunning) since TIME (AGE)',
        '  container migrate of Pod db-migrate-m3s8x finished, but container istio-proxy still runs, so the Pod never completes',
        '  next step: Make istio-proxy a native sidecar (an init container with restartPolicy: Always) or keep it out of the hook (sidecar.istio.io/inject: "false", linkerd.io/inject: disabled).',
      ].join('\n'),
    },
    { fixture: 'blocked-quota', target: 'job/db-migrate', status: 1, text: QUOTA_BLOCKED('shop') },
    {
      fixture: 'blocked-pod-security',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Blocked (FailedCreate) since TIME (AGE)',
        '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-x7k2p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "migrate" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "migrate" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "migrate" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "migrate" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
        "  next step: Make the hook's Pod meet shop's Pod Security level (each field is named above).",
      ].join('\n'),
    },
    {
      fixture: 'blocked-openshift-scc',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Blocked (FailedCreate) since TIME (AGE)',
        '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-" is forbidden: unable to validate against any security context constraint: [provider "anyuid": Forbidden: not usable by user or serviceaccount, spec.containers[0].securityContext.runAsUser: Invalid value: 1000: must be in the ranges: [1000650000, 1000659999], provider "restricted": Forbidden: not usable by user or serviceaccount]',
        "  next step: Let the hook's service account use a fitting SCC, or drop the securityContext fields named above (runAsUser).",
      ].join('\n'),
    },
    {
      fixture: 'blocked-webhook',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Blocked (FailedCreate) since TIME (AGE)',
        '  Job db-migrate cannot create its Pod: Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: resource Pod/shop/db-migrate-5v9hn was blocked due to the following policies require-requests-limits: validate-resources: \'validation error: CPU and memory resource requests and limits are required. rule validate-resources failed at path /spec/containers/0/resources/limits/cpu/\'',
        "  next step: Webhook validate.kyverno.svc-fail refuses the hook's Pod: change the Pod as its message asks, or ask its owners.",
      ].join('\n'),
    },
    {
      fixture: 'running-refused-recently',
      target: 'job/db-migrate',
      status: 0,
      text: [
        'Job shop/db-migrate: Running (FailedCreate) since TIME (AGE)',
        '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-q8w2t" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
        '  next step: Wait: it is called stuck after 300s.',
      ].join('\n'),
    },
    {
      fixture: 'suspended',
      target: 'job/db-migrate',
      status: 0,
      text: [
        'Job shop/db-migrate: Suspended (Suspended) since TIME (AGE)',
        "  Job db-migrate is suspended (Kueue queue batch-queue): no Pod runs until it is resumed; Argo CD's health calls it Suspended and a sync waits for it",
        '  next step: Look at the workload of queue batch-queue (kubectl get workloads -n shop) to see why it is not admitted.',
      ].join('\n'),
    },
    {
      // hookguard's own guard cannot start: it is named, not the hook's container waiting behind it.
      fixture: 'stuck-guard-image',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Stuck (ImagePullBackOff) since TIME (AGE)',
        "  hookguard's guard init container hookguard-min-runtime of Pod db-migrate-x2v7c cannot pull image gcr.io/distroless/static-debian12:debug-nonroot (ImagePullBackOff)",
        '  Event Failed (kubelet): Failed to pull image "gcr.io/distroless/static-debian12:debug-nonroot": rpc error: code = DeadlineExceeded desc = failed to pull and unpack image "gcr.io/distroless/static-debian12:debug-nonroot": failed to resolve reference "gcr.io/distroless/static-debian12:debug-nonroot": failed to do request: Head "https://gcr.io/v2/distroless/static-debian12/manifests/debug-nonroot": dial tcp 142.250.102.82:443: i/o timeout',
        '  next step: hookguard adds it (rule min-runtime), so the hook has not started: mirror image gcr.io/distroless/static-debian12:debug-nonroot into a registry the nodes can pull from and set rules.minRuntime.image to it (docs/image.md, the guard image).',
      ].join('\n'),
    },
    {
      // Suspended for 20 minutes: it has not run, whatever Argo CD's health calls it.
      fixture: 'stuck-suspended',
      target: 'job/db-migrate',
      status: 1,
      text: [
        'Job shop/db-migrate: Stuck (Suspended) since TIME (AGE)',
        "  Job db-migrate is suspended (Kueue queue batch-queue): no Pod runs until it is resumed; Argo CD's health calls it Suspended and a sync waits for it",
        '  next step: Look at the workload of queue batch-queue (kubectl get workloads -n shop) to see why it is not admitted.',
      ].join('\n'),
    },
  ];
  for (const { fixture, target, status, text } of cases) {
    it(`${fixture}: exit ${status}`, async () => {
      const { env } = await cluster([fixture]);
      const run = await runCommand(['why', target, '-n', 'shop'], undefined, env);
      expect(run.stderr).toBe('');
      expect(steady(run.stdout)).toBe(`${text}\n`);
      expect(run.status).toBe(status);
    });
  }

  it('reads Events through events.k8s.io/v1 and v1 with their own field selectors, and quotes one Event once', async () => {
    const { server, env } = await cluster(['stuck-image-pull']);
    const run = await runCommand(['why', 'job/db-migrate', '-n', 'shop'], undefined, env);
    expect(steady(run.stdout)).toBe(`${IMAGE_PULL_STUCK('shop')}\n`);
    const eventReads = server.requests
      .filter((request) => request.path.endsWith('/events'))
      .map((request) => `${request.path}?${request.query.fieldSelector} ${request.status}`);
    expect(eventReads.sort()).toEqual(
      [
        '/api/v1/namespaces/shop/events?involvedObject.kind=Job,involvedObject.name=db-migrate 200',
        '/api/v1/namespaces/shop/events?involvedObject.kind=Pod,involvedObject.name=db-migrate-x2v7c 200',
        '/apis/events.k8s.io/v1/namespaces/shop/events?regarding.kind=Job,regarding.name=db-migrate 200',
        '/apis/events.k8s.io/v1/namespaces/shop/events?regarding.kind=Pod,regarding.name=db-migrate-x2v7c 200',
      ].sort(),
    );
    // The Job's Pods by the Job's own selector, one bounded page.
    expect(server.requests.find((request) => request.path === '/api/v1/namespaces/shop/pods')?.query).toEqual({
      labelSelector: 'batch.kubernetes.io/controller-uid=6a1c3f8e-3b1d-4c57-9d0e-2f4b7a9c1e01',
      limit: '100',
    });
  });

  it('--output json: one object per hook with the whole explanation, and its age from the cluster clock', async () => {
    const { env } = await cluster(['failed-exit-code']);
    const run = await runCommand(['why', 'job/db-migrate', '-n', 'shop', '--output', 'json'], undefined, env);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout) as { hooks: Array<Record<string, unknown>> } & Record<string, unknown>;
    expect(report).toMatchObject({ scope: 'job shop/db-migrate', examined: 1, notShown: 0, overCap: 0 });
    const [hook] = report.hooks;
    const { since, forSeconds, ...rest } = hook ?? {};
    expect(typeof since).toBe('string');
    expect(forSeconds).toBeGreaterThanOrEqual(1138);
    expect(forSeconds).toBeLessThanOrEqual(1140);
    expect(rest).toEqual({
      kind: 'Job',
      namespace: 'shop',
      name: 'db-migrate',
      state: 'Failed',
      reason: 'ContainerFailed',
      message:
        'container migrate of Pod db-migrate-9tq2w exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)',
      nextStep: 'Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
      pod: 'db-migrate-9tq2w',
      container: 'migrate',
      containerRole: 'container',
      image: 'registry.example.com/shop/migrate:2.4.1',
      containerReason: 'Error',
      exitCode: 1,
      terminationMessage:
        'Applying migration 0042_add_orders_index\nERROR:  relation "orders_customer_id_idx" already exists\nmigration 0042 failed; rolled back',
      quoted: 'Job has reached the specified backoff limit',
      quotedFrom: 'condition Failed',
      jobCondition: {
        type: 'Failed',
        reason: 'BackoffLimitExceeded',
        message: 'Job has reached the specified backoff limit',
      },
    });
  });

  it('--stuck-after-seconds moves the threshold: a Pod pulling for 20 minutes is Running under a 30-minute one', async () => {
    const { env } = await cluster(['stuck-image-pull']);
    const run = await runCommand(
      ['why', 'job/db-migrate', '-n', 'shop', '--stuck-after-seconds', '1800'],
      undefined,
      env,
    );
    expect(run.status).toBe(0);
    expect(steady(run.stdout).split('\n')[0]).toBe('Job shop/db-migrate: Running (ImagePullBackOff) since TIME (AGE)');
  });

  it('the built CLI in a real process: same text, exit 1', async () => {
    const { env } = await cluster(['failed-exit-code']);
    const run = await runCliAsync(['why', 'job/db-migrate', '-n', 'shop'], env);
    expect(steady(run.stdout)).toBe(`${MIGRATE_FAILED}\n`);
    expect(run.status).toBe(1);
  });
});

describe('hookguard why -A', () => {
  it('lists every hook that is not Succeeded or Running, across namespaces, and says what it left out', async () => {
    const { server, env } = await cluster([
      ['succeeded', 'team-a'],
      ['running', 'team-b'],
      ['stuck-image-pull', 'team-c'],
      ['blocked-quota', 'team-d'],
    ]);
    // A failed Job that is no hook is none of hookguard's business.
    const plain = relocated(whyFixture('failed-oomkilled'), Date.now(), 'team-e');
    (plain.hook as { metadata: { annotations?: unknown } }).metadata.annotations = {};
    seedWhy(server, plain);
    const run = await runCommand(['why', '-A'], undefined, env);
    expect(steady(run.stdout)).toBe(
      [
        IMAGE_PULL_STUCK('team-c'),
        '',
        QUOTA_BLOCKED('team-d'),
        '',
        '4 hooks looked at (all namespaces): 1 Stuck, 1 Blocked; 2 Succeeded or Running not shown',
        '',
      ].join('\n'),
    );
    expect(run.status).toBe(1);
    // The Succeeded Job was judged from the list alone: its Pods and Events were never read.
    expect(server.requests.some((request) => request.path.startsWith('/api/v1/namespaces/team-a/'))).toBe(false);
  });

  it('exits 0 and says so when nothing is failing', async () => {
    const { env } = await cluster([
      ['succeeded', 'team-a'],
      ['running', 'team-b'],
    ]);
    const run = await runCommand(['why', '-A'], undefined, env);
    expect(run.stdout).toBe('no hook failing, stuck, blocked or suspended (all namespaces): 2 hooks looked at\n');
    expect(run.status).toBe(0);
  });

  it('why.maxHooks caps the hooks looked at, and says how many were not', async () => {
    const { env } = await cluster([
      ['stuck-image-pull', 'team-c'],
      ['blocked-quota', 'team-d'],
    ]);
    const config = join(dir, 'max-hooks.yaml');
    writeFileSync(config, 'why:\n  maxHooks: 1\n');
    const run = await runCommand(['why', '-A', '--config', config], undefined, env);
    expect(steady(run.stdout)).toBe(
      [
        IMAGE_PULL_STUCK('team-c'),
        '',
        '1 more hook not looked at (why.maxHooks); narrow with -n or --application',
        '',
      ].join('\n'),
    );
    expect(run.status).toBe(1);
  });
});

describe('hookguard why --application', () => {
  it("explains the operation's hooks, live or gone, and the hooks carrying the Application's tracking id", async () => {
    const { server, env } = await cluster(['failed-exit-code', 'failed-init-container']);
    // The Job as Argo CD applied it: its hook annotation and tracking id (argo-cd util/argo/resource_tracking.go).
    server.modify('Job', 'shop', 'db-migrate', (job) => {
      job.metadata.annotations = {
        'argocd.argoproj.io/hook': 'PreSync',
        'argocd.argoproj.io/tracking-id': 'shop:batch/Job:shop/db-migrate',
      };
    });
    // Another Application's hook in the same namespace is not this one's.
    const other = relocated(whyFixture('stuck-image-pull'), Date.now());
    const otherJob = other.hook as { metadata: { name: string; annotations: Record<string, string> } };
    otherJob.metadata.name = 'other-migrate';
    otherJob.metadata.annotations = {
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/tracking-id': 'billing:batch/Job:shop/other-migrate',
    };
    server.put(otherJob);
    server.put({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'shop', namespace: 'argocd' },
      spec: { destination: { namespace: 'shop', server: 'https://kubernetes.default.svc' } },
      status: {
        operationState: {
          phase: 'Failed',
          message: 'one or more synchronization tasks completed unsuccessfully',
          syncResult: {
            resources: [
              {
                group: 'batch',
                version: 'v1',
                kind: 'Job',
                namespace: 'shop',
                name: 'db-seed',
                status: 'Synced',
                hookType: 'PreSync',
                hookPhase: 'Failed',
                message: 'Job has reached the specified backoff limit',
                syncPhase: 'PreSync',
              },
              {
                group: 'batch',
                version: 'v1',
                kind: 'Job',
                namespace: 'shop',
                name: 'db-migrate',
                status: 'Synced',
                hookType: 'PreSync',
                hookPhase: 'Failed',
                message: 'Job has reached the specified backoff limit',
                syncPhase: 'PreSync',
              },
              { group: '', version: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'settings', status: 'Synced' },
            ],
          },
        },
      },
    });
    const run = await runCommand(['why', '--application', 'argocd/shop'], undefined, env);
    expect(steady(run.stdout)).toBe(
      [
        'Application argocd/shop: operation Failed: one or more synchronization tasks completed unsuccessfully',
        '',
        'Job shop/db-seed: Failed (Deleted)',
        '  Job db-seed no longer exists; Argo CD recorded it as Failed: Job has reached the specified backoff limit',
        '  next step: Its Pods and Events went with it: to keep a failed hook for reading, leave HookFailed out of its delete policy (or raise its ttlSecondsAfterFinished), then sync again.',
        '',
        MIGRATE_FAILED,
        '',
        'Pod shop/schema-check: Failed (ContainerFailed) since TIME (AGE)',
        '  init container wait-for-db of Pod schema-check exited with code 1 (Error)',
        '  termination message:',
        '    | database "shop" does not exist',
        '  next step: Read its log: kubectl logs -n shop schema-check -c wait-for-db',
        '',
        '3 hooks looked at (Application argocd/shop): 3 Failed',
        '',
      ].join('\n'),
    );
    expect(run.status).toBe(1);
  });
});

describe('hookguard why with Events granted through one API only (RBAC grants the two apart)', () => {
  const HOOKS: PolicyRule[] = [
    { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
  ];
  const events = (group: string): PolicyRule => ({ apiGroups: [group], resources: ['events'], verbs: ['list'] });

  it.each([
    ['core v1 only', ''],
    ['events.k8s.io only', 'events.k8s.io'],
  ])('%s: still reads the Events and explains, quoting the kubelet', async (_, group) => {
    const { server, env } = await cluster(['stuck-image-pull']);
    server.authorize = rbacAuthorizer({ developer: [...HOOKS, events(group)] });
    const run = await runCommand(['why', 'job/db-migrate', '-n', 'shop'], undefined, env);
    expect(run.stderr).toBe('');
    expect(steady(run.stdout)).toBe(`${IMAGE_PULL_STUCK('shop')}\n`);
    expect(run.status).toBe(1);
  });

  it('both refused: exit 1, naming the permission either API would need', async () => {
    const { server, env, kubeconfig } = await cluster(['stuck-image-pull']);
    server.authorize = rbacAuthorizer({ developer: HOOKS });
    const run = await runCommand(['why', 'job/db-migrate', '-n', 'shop'], undefined, env);
    expect(run.stderr).toBe(
      `hookguard why: cannot read the cluster (kubeconfig ${kubeconfig}): HTTP 403: may not list Events in namespace "shop" through either API: grant list on events in API group "" (core v1) or in "events.k8s.io" (either is enough); the API server said: events is forbidden: User "developer" cannot list resource "events" in API group "" in the namespace "shop"\n`,
    );
    expect(run.stdout).toBe('');
    expect(run.status).toBe(1);
  });
});

describe('hookguard why: bad input exits 2, an unreadable cluster 1', () => {
  const refused: Array<[string[], string]> = [
    [
      ['why'],
      'hookguard why: name one hook (job/NAME or pod/NAME), or --application NS/NAME, --release NS/NAME, --helmrelease NS/NAME, or -A\n',
    ],
    [['why', 'deployment/web'], 'hookguard why: "deployment/web" is not job/NAME or pod/NAME\n'],
    [
      ['why', 'job/a', '-A'],
      'hookguard why: name one hook (job/NAME or pod/NAME), or --application NS/NAME, --release NS/NAME, --helmrelease NS/NAME, or -A\n',
    ],
    [['why', '--application', 'shop'], 'hookguard why: --application "shop" is not NAMESPACE/NAME\n'],
    [['why', '-A', '-n', 'shop'], 'hookguard why: -n goes with job/NAME or pod/NAME, and must not be empty\n'],
    [['why', '-A', '--output', 'yaml'], 'hookguard why: --output must be text or json, got "yaml"\n'],
    [
      ['why', '-A', '--stuck-after-seconds', '5'],
      'hookguard why: --stuck-after-seconds: must be an integer 30..86400, got 5\n',
    ],
    [['why', 'job/missing', '-n', 'shop'], 'hookguard why: job shop/missing not found\n'],
    [['why', '--application', 'argocd/nope'], 'hookguard why: Application argocd/nope not found\n'],
  ];
  for (const [args, stderr] of refused) {
    it(args.join(' '), async () => {
      const { env } = await cluster([]);
      const run = await runCommand(args, undefined, env);
      expect(run.stderr).toBe(stderr);
      expect(run.stdout).toBe('');
      expect(run.status).toBe(2);
    });
  }

  it('an API server that refuses the read: exit 1, naming the kubeconfig and the answer', async () => {
    const { server, env, kubeconfig } = await cluster(['failed-exit-code']);
    server.fail({ pathIncludes: '/jobs/db-migrate', status: 403 });
    const run = await runCommand(['why', 'job/db-migrate', '-n', 'shop'], undefined, env);
    expect(run.stderr).toBe(
      `hookguard why: cannot read the cluster (kubeconfig ${kubeconfig}): HTTP 403: injected failure 403\n`,
    );
    expect(run.stdout).toBe('');
    expect(run.status).toBe(1);
  });
});
