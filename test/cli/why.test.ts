// `hookguard why` against the stand-in for kube-apiserver (test/support/fake-apiserver.ts), for what the real control
// plane of test/cluster/ cannot show: states its kubelet simulator does not play (an init container that fails, a
// missing Secret, a crash loop's growing back-off, a mesh sidecar that outlives the hook) and OpenShift's SCCs, which
// it does not have; -A, which reads every namespace of a cluster the other cluster test files share, so its exact
// text and exit status would be theirs as much as this file's; and --application, whose Application the cluster tests
// do not install the CRD of. The hooks are test/golden/why/'s, stored as a cluster holds them and read through a
// kubeconfig file as kubectl reads it. Every state the real components can make (succeeded, running, failed, OOMKilled,
// DeadlineExceeded, image pulls, the scheduler, ResourceQuota, PodSecurity, another webhook, suspended), the JSON
// output, the threshold, RBAC on Events, a refused read and the requests why makes are in test/cluster/why.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
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

describe('hookguard why job/NAME and pod/NAME: the states the kubelet simulator does not play', () => {
  const cases: Array<{ fixture: string; target: string; status: number; text: string }> = [
    // The kubelet simulator runs every init container to success.
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
    // The kubelet simulator never leaves a container in CreateContainerConfigError.
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
    // The kubelet simulator restarts after a fixed second: no growing back-off keeps the container waiting.
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
    // The kubelet simulator ends every main container at once: none outlives the hook.
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
    // The test control plane has no OpenShift SCC admission.
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

describe('hookguard why: bad arguments exit 2 before any cluster is read', () => {
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
    [['why', '-A', '--revision', '2'], 'hookguard why: --revision goes with --release\n'],
    [
      ['why', '--release', 'shop/web', '--revision', '0'],
      'hookguard why: --revision "0" is not a revision number (1, 2, …)\n',
    ],
    [['why', '--release', 'web'], 'hookguard why: --release "web" is not NAMESPACE/NAME\n'],
  ];
  for (const [args, stderr] of refused) {
    it(args.join(' '), async () => {
      // A kubeconfig that is not there: the arguments are refused before it is looked for.
      const run = await runCommand(args, undefined, { KUBECONFIG: join(dir, 'no-such-kubeconfig') });
      expect(run.stderr).toBe(stderr);
      expect(run.stdout).toBe('');
      expect(run.status).toBe(2);
    });
  }

  it('an Application that is not there: exit 2', async () => {
    const { env } = await cluster([]);
    const run = await runCommand(['why', '--application', 'argocd/nope'], undefined, env);
    expect(run.stderr).toBe('hookguard why: Application argocd/nope not found\n');
    expect(run.stdout).toBe('');
    expect(run.status).toBe(2);
  });
});
