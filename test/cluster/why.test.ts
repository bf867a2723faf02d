// `hookguard why` (the built CLI, as a person and a script run it) on what the real components write: the Job
// controller's conditions and FailedCreate Events, the scheduler's verdict, the ResourceQuota and PodSecurity admission
// messages, another webhook's denial, and the container states and Events the kubelet (here
// test/cluster/tools/kubernetes/cmd/kubelet-sim, in the kubelet's formats) reports. Each case is one of
// test/golden/why/'s states made for real, and the text it prints is compared whole: only the moment and age (the
// JSON's `since`, checked to be the text's) and the name the API server generates for a refused Pod are put aside.
// The cases run side by side, each in a namespace of its own; those that wait out --stuck-after-seconds (30, the
// least why accepts) first say what why prints before (under the default 300 s), then after.
import { ApiException, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import {
  adminApi,
  allowArgoCdController,
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlJson,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';
import {
  GENERATED_POD,
  hookJob,
  jobPods,
  reader,
  startDenyingWebhook,
  why,
  whyJson,
  type DenyingWebhook,
  type HookJob,
  type Json,
  type Why,
} from './support/why.js';

const STUCK_AFTER = 30;
const IMAGE = 'registry.example.com/shop/migrate:2.4.1';
/** What the kubelet simulator's registry answers for any image (kubelet-sim failPull, containerd's words). */
const pullError = (image: string) =>
  `rpc error: code = NotFound desc = failed to pull and unpack image "${image}": failed to resolve reference "${image}": ${image}: not found`;
/** The rights docs/why.md lists for job/NAME, less the Events. */
const HOOK_RULES: Json[] = [
  { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
];
const eventRule = (group: string): Json => ({ apiGroups: [group], resources: ['events'], verbs: ['list'] });

let dir = '';
const namespaces: string[] = [];
const webhookConfigurations: string[] = [];
let webhook: DenyingWebhook | undefined;

async function namespace(labels: Record<string, string> = {}): Promise<string> {
  const ns = await newNamespace('why', labels);
  namespaces.push(ns);
  return ns;
}

async function createJob(ns: string, job: HookJob = {}, as?: string): Promise<void> {
  await kubectl(['create', '-n', ns, ...(as ? [`--as=${as}`] : []), '-f', '-'], hookJob(job));
}

interface Wanted {
  state: string;
  reason: string;
  /** More for why: --stuck-after-seconds, say. */
  args?: string[];
}

/** Polls why on NS's hook until it says STATE (REASON); the Job controller's FailureTarget is not yet Failed. */
async function explained(ns: string, wanted: Wanted, seconds = 90): Promise<Why> {
  const args = ['job/db-migrate', '-n', ns, ...(wanted.args ?? [])];
  const says = (hook: Json) =>
    hook.state === wanted.state &&
    hook.reason === wanted.reason &&
    !(wanted.state === 'Failed' && hook.quotedFrom === 'condition FailureTarget');
  return waitUntil(
    `why to say ${wanted.state} (${wanted.reason}) in ${ns}`,
    async () => {
      // Polled in this process; then the CLI, text and JSON together.
      const json = await whyJson(args);
      const hook = (json.hooks as Json[] | undefined)?.[0] ?? {};
      if (!says(hook)) throw new Error(JSON.stringify(json));
      const answer = await why(args);
      if (!says(answer.hook)) throw new Error(JSON.stringify(answer.hook));
      return answer;
    },
    seconds,
  );
}

/** Waits until the hook seen in EARLY has lasted --stuck-after-seconds, then for why to say so. */
async function explainedOnceOverdue(ns: string, early: Why, wanted: Wanted): Promise<Why> {
  const left = STUCK_AFTER - (early.hook.forSeconds as number);
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left * 1000));
  return explained(ns, { ...wanted, args: ['--stuck-after-seconds', String(STUCK_AFTER), ...(wanted.args ?? [])] });
}

const overdue = ['--stuck-after-seconds', String(STUCK_AFTER)];

/** The text with the names the API server generated for refused Pods put as db-migrate-GENERATED. */
const generated = (text: string) => text.replace(GENERATED_POD('db-migrate'), 'pods "db-migrate-GENERATED"');

async function podName(ns: string): Promise<string> {
  const pods = await jobPods(ns, 'db-migrate');
  if (pods.length !== 1) throw new Error(`${pods.length} Pods of Job db-migrate in ${ns}`);
  return pods[0]!.metadata.name as string;
}

async function jobCondition(ns: string, type: string): Promise<Json> {
  const job = await kubectlJson<Json>(['get', 'job', 'db-migrate', '-n', ns]);
  return (job.status.conditions as Json[]).find((condition) => condition.type === type) ?? {};
}

const lines = (...text: string[]) => `${text.join('\n')}\n`;

describeCluster('hookguard why on what the real components write', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookguard-why-'));
    webhook = await startDenyingWebhook('CPU and memory limits are required');
  });
  afterAll(async () => {
    for (const ns of namespaces) await deleteNamespace(ns);
    for (const name of webhookConfigurations)
      await run('kubectl', ['delete', 'validatingwebhookconfiguration', name, '--ignore-not-found']);
    webhook?.close();
    await rm(dir, { recursive: true, force: true });
  });

  // vitest runs five concurrent tests at a time (maxConcurrency): the five that wait out the threshold come first, so
  // the quick ones run in the slots they free.
  describe.concurrent('job/NAME: the text a person reads, the exit status by state', () => {
    it("an image that never pulls: Running under 300 s, Stuck past --stuck-after-seconds, quoting the kubelet's Event; read through either Events API, as RBAC grants them apart", async ({
      expect,
    }) => {
      const ns = await namespace();
      await createJob(ns, { podAnnotations: { 'test.hookguard.io/image-pull': 'fail' } });
      // Readers holding the rights docs/why.md lists, with the Events of one API, of both, of neither: made meanwhile.
      const readers = Promise.all([
        reader(ns, 'core-events', [...HOOK_RULES, eventRule('')], dir),
        reader(ns, 'events-k8s-io', [...HOOK_RULES, eventRule('events.k8s.io')], dir),
        reader(ns, 'no-events', HOOK_RULES, dir),
        reader(ns, 'both-events', [...HOOK_RULES, eventRule(''), eventRule('events.k8s.io')], dir),
      ]);
      const early = await explained(ns, { state: 'Running', reason: 'ImagePullBackOff' });
      const pod = await podName(ns);
      const event = `  Event Failed (kubelet): Failed to pull image "${IMAGE}": ${pullError(IMAGE)}`;
      expect(early.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Running (ImagePullBackOff) since TIME (AGE)`,
          `  container migrate of Pod ${pod} cannot pull image ${IMAGE} (ImagePullBackOff)`,
          event,
          // Even before it is called stuck, the registry's answer is what to act on.
          `  next step: Check that image ${IMAGE} exists and that the Pod may pull it (the tag, imagePullSecrets, registry access).`,
        ),
      );
      expect(early.status).toBe(0);

      const stuck = await explainedOnceOverdue(ns, early, { state: 'Stuck', reason: 'ImagePullBackOff' });
      const stuckText = lines(
        `Job ${ns}/db-migrate: Stuck (ImagePullBackOff) since TIME (AGE)`,
        `  container migrate of Pod ${pod} cannot pull image ${IMAGE} (ImagePullBackOff)`,
        event,
        `  next step: Check that image ${IMAGE} exists and that the Pod may pull it (the tag, imagePullSecrets, registry access).`,
      );
      expect(stuck.text).toBe(stuckText);
      expect(stuck.status).toBe(1);

      // RBAC grants the two Events APIs apart: either one is the whole story. Neither: exit 1, naming the permission
      // either API would need, and the API server's own words. And what why asks, seen in front of the real API
      // server: the Job's Pods by the Job's own selector in one bounded page, and the Events of the Job and of its
      // Pod through both APIs, each by its own field selector.
      const [coreEvents, eventsApi, none, both] = await readers;
      const proxy = await FaultProxy.start();
      try {
        const kubeconfig = join(dir, `proxy-${ns}`);
        await writeFile(kubeconfig, proxy.kubeConfig(both.token).exportConfig());
        const asks = (config: string) =>
          run(process.execPath, [cliPath, 'why', 'job/db-migrate', '-n', ns, ...overdue], {
            env: { KUBECONFIG: config },
          });
        const [viaCore, viaEventsApi, refused, viaProxy] = await Promise.all([
          asks(coreEvents.kubeconfig),
          asks(eventsApi.kubeconfig),
          asks(none.kubeconfig),
          asks(kubeconfig),
        ]);
        for (const [name, answer] of [
          ['core v1 only', viaCore],
          ['events.k8s.io only', viaEventsApi],
          ['both, through the proxy', viaProxy],
        ] as const) {
          expect(answer.stderr, name).toBe('');
          expect(answer.stdout.replace(/ since \S+ \([0-9dhms]+\)/, ' since TIME (AGE)'), name).toBe(stuckText);
          expect(answer.status, name).toBe(1);
        }
        expect(refused.stderr).toBe(
          `hookguard why: cannot read the cluster (kubeconfig ${none.kubeconfig}): HTTP 403: may not list Events in namespace "${ns}" through either API: grant list on events in API group "" (core v1) or in "events.k8s.io" (either is enough); the API server said: events is forbidden: User "${none.user}" cannot list resource "events" in API group "" in the namespace "${ns}"\n`,
        );
        expect(refused.stdout).toBe('');
        expect(refused.status).toBe(1);

        const job = await kubectlJson<Json>(['get', 'job', 'db-migrate', '-n', ns]);
        const asked = proxy.requests.map(
          ({ method, path, query, status }) => `${method} ${path}?${new URLSearchParams(query).toString()} ${status}`,
        );
        expect(asked.sort()).toEqual(
          [
            `GET /apis/batch/v1/namespaces/${ns}/jobs/db-migrate? 200`,
            `GET /api/v1/namespaces/${ns}/pods?${new URLSearchParams({ labelSelector: `batch.kubernetes.io/controller-uid=${job.metadata.uid}`, limit: '100' }).toString()} 200`,
            ...[
              ['Job', 'db-migrate'],
              ['Pod', pod],
            ].flatMap(([kind, name]) => [
              `GET /api/v1/namespaces/${ns}/events?${new URLSearchParams({ fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`, limit: '100' }).toString()} 200`,
              `GET /apis/events.k8s.io/v1/namespaces/${ns}/events?${new URLSearchParams({ fieldSelector: `regarding.kind=${kind},regarding.name=${name}`, limit: '100' }).toString()} 200`,
            ]),
          ].sort(),
        );
      } finally {
        await proxy.stop();
      }
    });

    it("hookguard's guard cannot pull its image: the guard is named, and the next step is in hookguard's configuration", async ({
      expect,
    }) => {
      const ns = await namespace();
      await allowArgoCdController(ns);
      await createJob(
        ns,
        {
          podAnnotations: {
            'test.hookguard.io/image-pull': 'fail',
            'test.hookguard.io/image-pull-container': 'hookguard-min-runtime',
          },
        },
        ARGOCD_CONTROLLER,
      );
      const early = await explained(ns, { state: 'Running', reason: 'ImagePullBackOff' });
      const guardImage = ((await jobPods(ns, 'db-migrate'))[0]!.spec.initContainers as Json[]).find(
        (container) => container.name === 'hookguard-min-runtime',
      )!.image as string;
      const stuck = await explainedOnceOverdue(ns, early, { state: 'Stuck', reason: 'ImagePullBackOff' });
      const pod = await podName(ns);
      expect(stuck.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Stuck (ImagePullBackOff) since TIME (AGE)`,
          `  hookguard's guard init container hookguard-min-runtime of Pod ${pod} cannot pull image ${guardImage} (ImagePullBackOff)`,
          `  Event Failed (kubelet): Failed to pull image "${guardImage}": ${pullError(guardImage)}`,
          `  next step: hookguard adds it (rule min-runtime), so the hook has not started: mirror image ${guardImage} into a registry the nodes can pull from and set rules.minRuntime.image to it (docs/image.md, the guard image).`,
        ),
      );
      expect(stuck.status).toBe(1);
    });

    it("unschedulable: the real scheduler's message", async ({ expect }) => {
      const ns = await namespace();
      await createJob(ns, { podSpec: { nodeSelector: { disktype: 'ssd' } } });
      const early = await explained(ns, { state: 'Running', reason: 'Unschedulable' });
      const stuck = await explainedOnceOverdue(ns, early, { state: 'Stuck', reason: 'Unschedulable' });
      const pod = await podName(ns);
      expect(stuck.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Stuck (Unschedulable) since TIME (AGE)`,
          `  Pod ${pod} cannot be scheduled: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.`,
          '  next step: Free or add capacity, or change the requests, node selector, affinity or tolerations the scheduler names.',
        ),
      );
      expect(stuck.status).toBe(1);
      expect(stuck.hook.quotedFrom).toBe('condition PodScheduled');
    });

    it('refused Pods: Running while the refusal is recent, Blocked past the threshold, quoting the Job controller\'s Event: a ResourceQuota, Pod Security "restricted", another admission webhook', async ({
      expect,
    }) => {
      const quota = async () => {
        const ns = await namespace();
        await kubectl(['create', 'quota', 'compute-resources', '-n', ns, '--hard=limits.memory=64Mi']);
        // The API server's quota admission reads quotas from an informer: until it has seen the new one (seconds on a
        // loaded machine), it admits a Pod over it. Wait until a dry run of the hook's Pod is refused.
        const pod = JSON.parse(hookJob()) as { spec: { template: V1Pod } };
        await waitUntil('the API server to enforce the new quota', () =>
          adminApi(CoreV1Api)
            .createNamespacedPod({
              namespace: ns,
              dryRun: 'All',
              body: { ...pod.spec.template, metadata: { name: 'x' } },
            })
            .then(
              () => false,
              (error: unknown) => error instanceof ApiException && String(error.body).includes('exceeded quota'),
            ),
        );
        await createJob(ns);
        const refusal =
          '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-GENERATED" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=0, limited: limits.memory=64Mi';
        const early = await explained(ns, { state: 'Running', reason: 'FailedCreate' });
        expect(generated(early.text)).toBe(
          lines(
            `Job ${ns}/db-migrate: Running (FailedCreate) since TIME (AGE)`,
            refusal,
            '  next step: Wait: it is called stuck after 300s.',
          ),
        );
        expect(early.status).toBe(0);
        const blocked = await explainedOnceOverdue(ns, early, { state: 'Blocked', reason: 'FailedCreate' });
        expect(generated(blocked.text)).toBe(
          lines(
            `Job ${ns}/db-migrate: Blocked (FailedCreate) since TIME (AGE)`,
            refusal,
            `  next step: Raise ResourceQuota compute-resources in ${ns} or lower the hook's requests and limits.`,
          ),
        );
        expect(blocked.status).toBe(1);
        expect(blocked.hook).toMatchObject({
          blockedBy: 'ResourceQuota',
          quotedFrom: 'Event FailedCreate (job-controller)',
        });
      };
      const podSecurity = async () => {
        const ns = await namespace({ 'pod-security.kubernetes.io/enforce': 'restricted' });
        await createJob(ns);
        const early = await explained(ns, { state: 'Running', reason: 'FailedCreate' });
        const blocked = await explainedOnceOverdue(ns, early, { state: 'Blocked', reason: 'FailedCreate' });
        expect(generated(blocked.text)).toBe(
          lines(
            `Job ${ns}/db-migrate: Blocked (FailedCreate) since TIME (AGE)`,
            '  Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-GENERATED" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "migrate" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "migrate" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "migrate" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "migrate" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
            `  next step: Make the hook's Pod meet ${ns}'s Pod Security level (each field is named above).`,
          ),
        );
        expect(blocked.status).toBe(1);
        expect(blocked.hook.blockedBy).toBe('PodSecurity');
      };
      const webhookDenial = async () => {
        const ns = await namespace();
        const name = `deny-${ns}`;
        webhookConfigurations.push(name);
        await kubectl(['apply', '-f', '-'], JSON.stringify(webhook!.configuration(name, ns)));
        await createJob(ns);
        const early = await explained(ns, { state: 'Running', reason: 'FailedCreate' });
        const blocked = await explainedOnceOverdue(ns, early, { state: 'Blocked', reason: 'FailedCreate' });
        expect(blocked.text).toBe(
          lines(
            `Job ${ns}/db-migrate: Blocked (FailedCreate) since TIME (AGE)`,
            '  Job db-migrate cannot create its Pod: Error creating: admission webhook "validate.policy.example" denied the request: CPU and memory limits are required',
            "  next step: Webhook validate.policy.example refuses the hook's Pod: change the Pod as its message asks, or ask its owners.",
          ),
        );
        expect(blocked.status).toBe(1);
        expect(blocked.hook.blockedBy).toBe('AdmissionWebhook');
      };
      await Promise.all([quota(), podSecurity(), webhookDenial()]);
    });

    it("suspended by a queue: Suspended and exit 0 under the threshold, Stuck and exit 1 past it, whatever Argo CD's health says", async ({
      expect,
    }) => {
      const ns = await namespace();
      await createJob(ns, { jobSpec: { suspend: true }, labels: { 'kueue.x-k8s.io/queue-name': 'batch-queue' } });
      // The Job controller writes Suspended=True, reason JobSuspended, "Job suspended" (v1.37.2
      // pkg/controller/job/job_controller.go syncJob); why waits for it, as Argo CD's health reads it.
      const early = await waitUntil('the Suspended condition to be quoted', async () => {
        const answer = await explained(ns, { state: 'Suspended', reason: 'Suspended' });
        return answer.hook.jobCondition ? answer : undefined;
      });
      const message = `  Job db-migrate is suspended (Kueue queue batch-queue): no Pod runs until it is resumed; Argo CD's health calls it Suspended and a sync waits for it`;
      const nextStep = `  next step: Look at the workload of queue batch-queue (kubectl get workloads -n ${ns}) to see why it is not admitted.`;
      expect(early.text).toBe(lines(`Job ${ns}/db-migrate: Suspended (Suspended) since TIME (AGE)`, message, nextStep));
      expect(early.status).toBe(0);
      expect(early.hook.jobCondition).toEqual({ type: 'Suspended', reason: 'JobSuspended', message: 'Job suspended' });
      expect(early.hook.since).toBe((await jobCondition(ns, 'Suspended')).lastTransitionTime);

      const stuck = await explainedOnceOverdue(ns, early, { state: 'Stuck', reason: 'Suspended' });
      expect(stuck.text).toBe(lines(`Job ${ns}/db-migrate: Stuck (Suspended) since TIME (AGE)`, message, nextStep));
      expect(stuck.status).toBe(1);
    });

    it("succeeded: exit 0, since the Job completed; a reader without rights on Jobs is told the API server's 403", async ({
      expect,
    }) => {
      const ns = await namespace();
      await createJob(ns);
      const nobodyMade = reader(ns, 'nobody', [], dir);
      const answer = await explained(ns, { state: 'Succeeded', reason: 'Completed' });
      expect(answer.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Succeeded (Completed) since TIME (AGE)`,
          '  Job db-migrate completed',
          '  next step: Nothing to do.',
        ),
      );
      expect(answer.status).toBe(0);
      const job = await kubectlJson<Json>(['get', 'job', 'db-migrate', '-n', ns]);
      expect(answer.hook.since).toBe(job.status.completionTime);

      // Exit 1 when the cluster cannot be read, naming the kubeconfig and the API server's own answer; exit 2 for a
      // hook that is not there (bad input).
      const nobody = await nobodyMade;
      const [refused, missing] = await Promise.all([
        run(process.execPath, [cliPath, 'why', 'job/db-migrate', '-n', ns], { env: { KUBECONFIG: nobody.kubeconfig } }),
        run(process.execPath, [cliPath, 'why', 'job/missing', '-n', ns]),
      ]);
      expect(refused.stderr).toBe(
        `hookguard why: cannot read the cluster (kubeconfig ${nobody.kubeconfig}): HTTP 403: jobs.batch "db-migrate" is forbidden: User "${nobody.user}" cannot get resource "jobs" in API group "batch" in the namespace "${ns}"\n`,
      );
      expect(refused.stdout).toBe('');
      expect(refused.status).toBe(1);

      expect(missing.stderr).toBe(`hookguard why: job ${ns}/missing not found\n`);
      expect(missing.status).toBe(2);
    });

    it('running: exit 0, with the threshold it will be called stuck after', async ({ expect }) => {
      const ns = await namespace();
      await createJob(ns, { podAnnotations: { 'test.hookguard.io/run-seconds': '600' } });
      const answer = await explained(ns, { state: 'Running', reason: 'Running' });
      const pod = await podName(ns);
      expect(answer.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Running (Running) since TIME (AGE)`,
          `  Pod ${pod} is running`,
          '  next step: Wait: it is called stuck after 300s.',
        ),
      );
      expect(answer.status).toBe(0);
    });

    it('failed, exit code 1: the termination message, the log to read; the whole JSON explanation', async ({
      expect,
    }) => {
      const ns = await namespace();
      const message = [
        'Applying migration 0042_add_orders_index',
        'ERROR:  relation "orders_customer_id_idx" already exists',
        'migration 0042 failed; rolled back',
      ].join('\n');
      await createJob(ns, {
        podAnnotations: { 'test.hookguard.io/exit-code': '1', 'test.hookguard.io/termination-message': message },
      });
      const answer = await explained(ns, { state: 'Failed', reason: 'ContainerFailed' });
      const pod = await podName(ns);
      expect(answer.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Failed (ContainerFailed) since TIME (AGE)`,
          `  container migrate of Pod ${pod} exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)`,
          '  termination message:',
          '    | Applying migration 0042_add_orders_index',
          '    | ERROR:  relation "orders_customer_id_idx" already exists',
          '    | migration 0042 failed; rolled back',
          `  next step: Read its log: kubectl logs -n ${ns} ${pod} -c migrate`,
        ),
      );
      expect(answer.status).toBe(1);

      const { hooks, ...report } = answer.json;
      expect(report).toEqual({ scope: `job ${ns}/db-migrate`, examined: 1, notShown: 0, overCap: 0 });
      expect(hooks).toHaveLength(1);
      const { forSeconds, ...hook } = answer.hook;
      expect(forSeconds).toBeGreaterThanOrEqual(0);
      expect(forSeconds).toBeLessThan(120);
      expect(hook).toEqual({
        kind: 'Job',
        namespace: ns,
        name: 'db-migrate',
        state: 'Failed',
        reason: 'ContainerFailed',
        since: (await jobCondition(ns, 'Failed')).lastTransitionTime,
        message: `container migrate of Pod ${pod} exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)`,
        nextStep: `Read its log: kubectl logs -n ${ns} ${pod} -c migrate`,
        pod,
        container: 'migrate',
        containerRole: 'container',
        image: IMAGE,
        containerReason: 'Error',
        exitCode: 1,
        terminationMessage: message,
        quoted: 'Job has reached the specified backoff limit',
        quotedFrom: 'condition Failed',
        jobCondition: {
          type: 'Failed',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
        },
      });
    });

    it('failed, OOMKilled: the memory limit to raise', async ({ expect }) => {
      const ns = await namespace();
      await createJob(ns, { podAnnotations: { 'test.hookguard.io/oom': 'true' } });
      const answer = await explained(ns, { state: 'Failed', reason: 'OOMKilled' });
      const pod = await podName(ns);
      expect(answer.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Failed (OOMKilled) since TIME (AGE)`,
          `  container migrate of Pod ${pod} exited with code 137 (OOMKilled); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)`,
          "  next step: Raise container migrate's memory limit (now 128Mi) or make it use less.",
        ),
      );
      expect(answer.status).toBe(1);
    });

    it('failed, DeadlineExceeded: the Job controller deleted the Pod it was running', async ({ expect }) => {
      const ns = await namespace();
      await createJob(ns, {
        podAnnotations: { 'test.hookguard.io/run-seconds': '120' },
        jobSpec: { activeDeadlineSeconds: 2 },
      });
      const answer = await explained(ns, { state: 'Failed', reason: 'DeadlineExceeded' });
      expect(answer.text).toBe(
        lines(
          `Job ${ns}/db-migrate: Failed (DeadlineExceeded) since TIME (AGE)`,
          '  Job db-migrate failed: DeadlineExceeded (Job was active longer than specified deadline)',
          '  next step: Find why it ran past activeDeadlineSeconds (2s), or raise it.',
        ),
      );
      expect(answer.status).toBe(1);
      expect(answer.hook.since).toBe((await jobCondition(ns, 'Failed')).lastTransitionTime);
    });
  });
});
