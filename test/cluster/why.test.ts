// `hookguard why` on what the real components write: the Job controller's conditions and FailedCreate Events, the
// scheduler's verdict, the ResourceQuota and PodSecurity admission messages, another webhook's denial, and the
// container states and Events the kubelet (here test/cluster/tools/kubernetes/cmd/kubelet-sim, in the kubelet's
// formats) reports. Each case is one of test/golden/why/'s states, made for real: the explanation's state, reason and
// the message a person reads must come out as the golden test (test/golden/why.test.ts) says they do for its fixture,
// and a suspended Job is no failure.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, it } from 'vitest';
import { generate } from 'selfsigned';
import { cliPath } from '../support/cli.js';
import { deleteNamespace, describeCluster, kubectl, newNamespace, run, waitUntil } from './support/cluster.js';

type Json = Record<string, unknown>;

interface Case {
  name: string;
  /** More for the Job's Pod template: annotations for the kubelet simulator, spec fields. */
  podAnnotations?: Record<string, string>;
  podSpec?: Json;
  container?: Json;
  jobSpec?: Json;
  namespaceLabels?: Record<string, string>;
  /** What the namespace holds before the Job: a quota, say. */
  setup?: (ns: string) => Promise<void>;
  expected: {
    state: string;
    reason: string;
    blockedBy?: string;
    quotedFrom?: string;
    /** The Job condition the state rests on, as the Job controller wrote it. */
    jobCondition?: Json;
    message: RegExp;
    /** why's exit status: 1 (a hook failed, is stuck or blocked) unless said. */
    exitStatus?: number;
  };
}

let webhookServer: Server | undefined;
let webhookCa = '';
let webhookPort = 0;

/** Another admission webhook, as a policy engine runs one: it denies every Pod labelled deny-me, with its reason. */
async function startDenyingWebhook(): Promise<void> {
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  webhookCa = Buffer.from(pems.cert).toString('base64');
  webhookServer = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const review = JSON.parse(body) as { request: { uid: string } };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: {
            uid: review.request.uid,
            allowed: false,
            status: { code: 403, message: 'CPU and memory limits are required' },
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => webhookServer!.listen(0, '127.0.0.1', resolve));
  webhookPort = (webhookServer.address() as AddressInfo).port;
}

const CASES: Case[] = [
  {
    name: 'failed-exit-code',
    podAnnotations: {
      'test.hookguard.io/exit-code': '1',
      'test.hookguard.io/termination-message': 'migration 0042 failed; rolled back',
    },
    expected: {
      state: 'Failed',
      reason: 'ContainerFailed',
      quotedFrom: 'condition Failed',
      message:
        /^container migrate of Pod db-migrate-\w+ exited with code 1 \(Error\); Job db-migrate failed: BackoffLimitExceeded \(Job has reached the specified backoff limit\)$/,
    },
  },
  {
    name: 'failed-oomkilled',
    podAnnotations: { 'test.hookguard.io/oom': 'true' },
    expected: {
      state: 'Failed',
      reason: 'OOMKilled',
      quotedFrom: 'condition Failed',
      message:
        /^container migrate of Pod db-migrate-\w+ exited with code 137 \(OOMKilled\); Job db-migrate failed: BackoffLimitExceeded/,
    },
  },
  {
    name: 'failed-deadline',
    podAnnotations: { 'test.hookguard.io/run-seconds': '120' },
    jobSpec: { activeDeadlineSeconds: 2 },
    expected: {
      state: 'Failed',
      reason: 'DeadlineExceeded',
      quotedFrom: 'condition Failed',
      message: /^Job db-migrate failed: DeadlineExceeded \(Job was active longer than specified deadline\)$/,
    },
  },
  {
    name: 'stuck-image-pull',
    podAnnotations: { 'test.hookguard.io/image-pull': 'fail' },
    expected: {
      state: 'Stuck',
      reason: 'ImagePullBackOff',
      message:
        /^container migrate of Pod db-migrate-\w+ cannot pull image registry\.example\.com\/shop\/migrate:2\.4\.1 \(ImagePullBackOff\)$/,
    },
  },
  {
    name: 'stuck-unschedulable',
    podSpec: { nodeSelector: { disktype: 'ssd' } },
    expected: {
      state: 'Stuck',
      reason: 'Unschedulable',
      quotedFrom: 'condition PodScheduled',
      message:
        /^Pod db-migrate-\w+ cannot be scheduled: 0\/2 nodes are available: 2 node\(s\) didn't match Pod's node affinity\/selector\./,
    },
  },
  {
    name: 'blocked-quota',
    setup: async (ns) => {
      await kubectl(['create', 'quota', 'compute-resources', '-n', ns, '--hard=limits.memory=64Mi']);
    },
    expected: {
      state: 'Blocked',
      reason: 'FailedCreate',
      blockedBy: 'ResourceQuota',
      quotedFrom: 'Event FailedCreate (job-controller)',
      message:
        /^Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-\w+" is forbidden: exceeded quota: compute-resources, requested: limits\.memory=128Mi, used: limits\.memory=0, limited: limits\.memory=64Mi$/,
    },
  },
  {
    name: 'blocked-pod-security',
    namespaceLabels: { 'pod-security.kubernetes.io/enforce': 'restricted' },
    expected: {
      state: 'Blocked',
      reason: 'FailedCreate',
      blockedBy: 'PodSecurity',
      quotedFrom: 'Event FailedCreate (job-controller)',
      message:
        /^Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-\w+" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/,
    },
  },
  {
    name: 'blocked-webhook',
    podSpec: {},
    setup: async (ns) => {
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name: `deny-${ns}` },
          webhooks: [
            {
              name: 'validate.policy.example',
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Fail',
              clientConfig: { url: `https://127.0.0.1:${webhookPort}/validate`, caBundle: webhookCa },
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
              rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'] }],
            },
          ],
        }),
      );
    },
    expected: {
      state: 'Blocked',
      reason: 'FailedCreate',
      blockedBy: 'AdmissionWebhook',
      quotedFrom: 'Event FailedCreate (job-controller)',
      message:
        /^Job db-migrate cannot create its Pod: Error creating: admission webhook "validate\.policy\.example" denied the request: CPU and memory limits are required$/,
    },
  },
  {
    // The Job controller writes Suspended=True, reason JobSuspended, "Job suspended" (v1.37.2
    // pkg/controller/job/job_controller.go syncJob); under --stuck-after-seconds that is no failure.
    name: 'suspended',
    jobSpec: { suspend: true },
    expected: {
      state: 'Suspended',
      reason: 'Suspended',
      jobCondition: { type: 'Suspended', reason: 'JobSuspended', message: 'Job suspended' },
      message:
        /^Job db-migrate is suspended: no Pod runs until it is resumed; Argo CD's health calls it Suspended and a sync waits for it$/,
      exitStatus: 0,
    },
  },
];

function jobManifest(testCase: Case): string {
  return JSON.stringify({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'db-migrate',
      annotations: { 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': 'before-hook-creation' },
    },
    spec: {
      backoffLimit: 0,
      ...testCase.jobSpec,
      template: {
        metadata: { annotations: testCase.podAnnotations ?? {} },
        spec: {
          restartPolicy: 'Never',
          ...testCase.podSpec,
          containers: [
            {
              name: 'migrate',
              image: 'registry.example.com/shop/migrate:2.4.1',
              command: ['/app/migrate', 'up'],
              resources: { limits: { memory: '128Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
              ...testCase.container,
            },
          ],
        },
      },
    },
  });
}

describeCluster('hookguard why on what the real components write', () => {
  const namespaces: string[] = [];
  beforeAll(startDenyingWebhook);
  afterAll(async () => {
    for (const ns of namespaces) {
      await deleteNamespace(ns);
      await run('kubectl', ['delete', 'validatingwebhookconfiguration', `deny-${ns}`, '--ignore-not-found']);
    }
    webhookServer?.close();
  });

  // Side by side, each in its namespace: most cases wait out --stuck-after-seconds.
  it.concurrent.for(CASES)('$name', async (testCase, { expect }) => {
    const ns = await newNamespace('why', testCase.namespaceLabels);
    namespaces.push(ns);
    await testCase.setup?.(ns);
    await kubectl(['create', '-n', ns, '-f', '-'], jobManifest(testCase));

    const explanation = await waitUntil(
      `why to say ${testCase.expected.state} (${testCase.expected.reason})`,
      async () => {
        const why = await run(process.execPath, [
          cliPath,
          'why',
          'job/db-migrate',
          '-n',
          ns,
          '-o',
          'json',
          // The least why accepts: a Pod waiting that long is Stuck, a Job unable to create one Blocked.
          '--stuck-after-seconds',
          '30',
        ]);
        if (why.stdout === '') throw new Error(`why printed nothing (exit ${why.status}): ${why.stderr}`);
        const parsed = JSON.parse(why.stdout) as { hooks: Json[] };
        const hook = parsed.hooks[0];
        // The Job controller writes FailureTarget first and Failed once the Pods are gone (v1.37.2
        // pkg/controller/job/job_controller.go): asked in between, why quotes FailureTarget; wait for the end state.
        if (
          hook?.state !== testCase.expected.state ||
          hook.reason !== testCase.expected.reason ||
          (testCase.expected.quotedFrom !== undefined && hook.quotedFrom !== testCase.expected.quotedFrom) ||
          (testCase.expected.jobCondition !== undefined && hook.jobCondition === undefined)
        )
          throw new Error(why.stdout);
        return { hook, status: why.status };
      },
      90,
    );
    const { hook, status } = explanation;
    expect(status).toBe(testCase.expected.exitStatus ?? 1);
    if (testCase.expected.jobCondition) expect(hook.jobCondition).toEqual(testCase.expected.jobCondition);
    expect(hook.message).toMatch(testCase.expected.message);
    if (testCase.expected.blockedBy) expect(hook.blockedBy).toBe(testCase.expected.blockedBy);
    if (testCase.expected.quotedFrom) expect(hook.quotedFrom).toBe(testCase.expected.quotedFrom);
  });
});
