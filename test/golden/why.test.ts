// Golden tests of explainHook() (src/core/explain/): one fixture per state in test/golden/why/, each a hook with its
// Pods and Events in the shapes the kubelet, the job controller, the scheduler and the API server write, and the
// upstream source of every message format in its `provenance`. The explanations below are exact and were reviewed by
// hand: a change to any word a person reads fails here.
import { describe, expect, it } from 'vitest';
import { explainHook, type HookExplanation } from '../../src/core/explain/index.js';
import { whyFixture, whyFixtureNames, type WhyFixture } from '../support/why-fixtures.js';

function explain(fixture: WhyFixture, stuckAfterSeconds = 300): HookExplanation {
  return explainHook(fixture, { now: Date.parse(fixture.now), stuckAfterSeconds });
}

const EXPECTED: Record<string, HookExplanation> = {
  'blocked-openshift-scc': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Blocked',
    reason: 'FailedCreate',
    message:
      'Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-" is forbidden: unable to validate against any security context constraint: [provider "anyuid": Forbidden: not usable by user or serviceaccount, spec.containers[0].securityContext.runAsUser: Invalid value: 1000: must be in the ranges: [1000650000, 1000659999], provider "restricted": Forbidden: not usable by user or serviceaccount]',
    nextStep:
      "Let the hook's service account use a fitting SCC, or drop the securityContext fields named above (runAsUser).",
    since: '2026-11-27T09:40:00Z',
    forSeconds: 1200,
    quoted:
      'Error creating: pods "db-migrate-" is forbidden: unable to validate against any security context constraint: [provider "anyuid": Forbidden: not usable by user or serviceaccount, spec.containers[0].securityContext.runAsUser: Invalid value: 1000: must be in the ranges: [1000650000, 1000659999], provider "restricted": Forbidden: not usable by user or serviceaccount]',
    quotedFrom: 'Event FailedCreate (job-controller)',
    blockedBy: 'SecurityContextConstraints',
  },
  'blocked-pod-security': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Blocked',
    reason: 'FailedCreate',
    message:
      'Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-x7k2p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "migrate" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "migrate" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "migrate" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "migrate" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    nextStep: "Make the hook's Pod meet shop's Pod Security level (each field is named above).",
    since: '2026-11-27T09:40:00Z',
    forSeconds: 1200,
    quoted:
      'Error creating: pods "db-migrate-x7k2p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "migrate" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "migrate" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "migrate" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "migrate" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    quotedFrom: 'Event FailedCreate (job-controller)',
    blockedBy: 'PodSecurity',
  },
  'blocked-quota': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Blocked',
    reason: 'FailedCreate',
    message:
      'Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-zmmz4" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
    nextStep: "Raise ResourceQuota compute-resources in shop or lower the hook's requests and limits.",
    since: '2026-11-27T09:40:00Z',
    forSeconds: 1200,
    quoted:
      'Error creating: pods "db-migrate-zmmz4" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
    quotedFrom: 'Event FailedCreate (job-controller)',
    blockedBy: 'ResourceQuota',
  },
  'blocked-webhook': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Blocked',
    reason: 'FailedCreate',
    message:
      'Job db-migrate cannot create its Pod: Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: resource Pod/shop/db-migrate-5v9hn was blocked due to the following policies require-requests-limits: validate-resources: \'validation error: CPU and memory resource requests and limits are required. rule validate-resources failed at path /spec/containers/0/resources/limits/cpu/\'',
    nextStep:
      "Webhook validate.kyverno.svc-fail refuses the hook's Pod: change the Pod as its message asks, or ask its owners.",
    since: '2026-11-27T09:40:00Z',
    forSeconds: 1200,
    quoted:
      'Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: \n\nresource Pod/shop/db-migrate-5v9hn was blocked due to the following policies \n\nrequire-requests-limits:\n  validate-resources: \'validation error: CPU and memory resource requests and limits are required. rule validate-resources failed at path /spec/containers/0/resources/limits/cpu/\'\n',
    quotedFrom: 'Event FailedCreate (job-controller)',
    blockedBy: 'AdmissionWebhook',
  },
  'failed-deadline': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Failed',
    reason: 'DeadlineExceeded',
    message: 'Job db-migrate failed: DeadlineExceeded (Job was active longer than specified deadline)',
    nextStep: 'Find why it ran past activeDeadlineSeconds (600s), or raise it.',
    since: '2026-11-27T09:50:00Z',
    forSeconds: 600,
    quoted: 'Job was active longer than specified deadline',
    quotedFrom: 'condition Failed',
    jobCondition: {
      type: 'Failed',
      reason: 'DeadlineExceeded',
      message: 'Job was active longer than specified deadline',
    },
  },
  'failed-exit-code': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Failed',
    reason: 'ContainerFailed',
    message:
      'container migrate of Pod db-migrate-9tq2w exited with code 1 (Error); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)',
    nextStep: 'Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
    since: '2026-11-27T09:41:02Z',
    forSeconds: 1138,
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
  },
  'failed-init-container': {
    kind: 'Pod',
    namespace: 'shop',
    name: 'schema-check',
    state: 'Failed',
    reason: 'ContainerFailed',
    message: 'init container wait-for-db of Pod schema-check exited with code 1 (Error)',
    nextStep: 'Read its log: kubectl logs -n shop schema-check -c wait-for-db',
    since: '2026-11-27T09:40:08Z',
    forSeconds: 1192,
    pod: 'schema-check',
    container: 'wait-for-db',
    containerRole: 'init',
    image: 'registry.example.com/shop/tools:1.3',
    containerReason: 'Error',
    exitCode: 1,
    terminationMessage: 'database "shop" does not exist',
  },
  'failed-oomkilled': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Failed',
    reason: 'OOMKilled',
    message:
      'container migrate of Pod db-migrate-p8m4z exited with code 137 (OOMKilled); Job db-migrate failed: BackoffLimitExceeded (Job has reached the specified backoff limit)',
    nextStep: "Raise container migrate's memory limit (now 128Mi) or make it use less.",
    since: '2026-11-27T09:40:31Z',
    forSeconds: 1169,
    pod: 'db-migrate-p8m4z',
    container: 'migrate',
    containerRole: 'container',
    image: 'registry.example.com/shop/migrate:2.4.1',
    containerReason: 'OOMKilled',
    exitCode: 137,
    quoted: 'Job has reached the specified backoff limit',
    quotedFrom: 'condition Failed',
    jobCondition: {
      type: 'Failed',
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    },
  },
  'running-refused-recently': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Running',
    reason: 'FailedCreate',
    message:
      'Job db-migrate cannot create its Pod: Error creating: pods "db-migrate-q8w2t" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
    nextStep: 'Wait: it is called stuck after 300s.',
    since: '2026-11-27T09:59:20Z',
    forSeconds: 40,
    quoted:
      'Error creating: pods "db-migrate-q8w2t" is forbidden: exceeded quota: compute-resources, requested: limits.memory=128Mi, used: limits.memory=4000Mi, limited: limits.memory=4Gi',
    quotedFrom: 'Event FailedCreate (job-controller)',
    blockedBy: 'ResourceQuota',
  },
  running: {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Running',
    reason: 'Running',
    message: 'Pod db-migrate-7xk2p is running',
    nextStep: 'Wait: it is called stuck after 300s.',
    since: '2026-11-27T09:59:21Z',
    forSeconds: 39,
    pod: 'db-migrate-7xk2p',
  },
  'stuck-crash-loop': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'CrashLoopBackOff',
    message: 'container migrate of Pod db-migrate-r5n2j keeps crashing (5 restarts; last exit code 2, Error)',
    nextStep: "Read the last run's log: kubectl logs -n shop db-migrate-r5n2j -c migrate --previous",
    since: '2026-11-27T09:40:09Z',
    forSeconds: 1191,
    pod: 'db-migrate-r5n2j',
    container: 'migrate',
    containerRole: 'container',
    image: 'registry.example.com/shop/migrate:2.4.1',
    containerReason: 'CrashLoopBackOff',
    exitCode: 2,
    terminationMessage: 'dial tcp 10.96.14.2:5432: connect: connection refused',
  },
  'stuck-image-pull': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'ImagePullBackOff',
    message:
      'container migrate of Pod db-migrate-x2v7c cannot pull image registry.example.com/shop/migrate:2.4.l (ImagePullBackOff)',
    nextStep:
      'Check that image registry.example.com/shop/migrate:2.4.l exists and that the Pod may pull it (the tag, imagePullSecrets, registry access).',
    since: '2026-11-27T09:40:05Z',
    forSeconds: 1195,
    pod: 'db-migrate-x2v7c',
    container: 'migrate',
    containerRole: 'container',
    image: 'registry.example.com/shop/migrate:2.4.l',
    containerReason: 'ImagePullBackOff',
    quoted:
      'Failed to pull image "registry.example.com/shop/migrate:2.4.l": rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.com/shop/migrate:2.4.l": failed to resolve reference "registry.example.com/shop/migrate:2.4.l": registry.example.com/shop/migrate:2.4.l: not found',
    quotedFrom: 'Event Failed (kubelet)',
  },
  'stuck-mesh-sidecar': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'SidecarRunning',
    message:
      'container migrate of Pod db-migrate-m3s8x finished, but container istio-proxy still runs, so the Pod never completes',
    nextStep:
      'Make istio-proxy a native sidecar (an init container with restartPolicy: Always) or keep it out of the hook (sidecar.istio.io/inject: "false", linkerd.io/inject: disabled).',
    since: '2026-11-27T09:41:00Z',
    forSeconds: 1140,
    pod: 'db-migrate-m3s8x',
    container: 'istio-proxy',
    containerRole: 'container',
    image: 'docker.io/istio/proxyv2:1.26.2',
  },
  'stuck-missing-secret': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'CreateContainerConfigError',
    message: 'container migrate of Pod db-migrate-k4d8s cannot be created: secret "db-credentials" not found',
    nextStep: 'Create Secret db-credentials in namespace shop, or fix the reference in container migrate.',
    since: '2026-11-27T09:40:01Z',
    forSeconds: 1199,
    pod: 'db-migrate-k4d8s',
    container: 'migrate',
    containerRole: 'container',
    image: 'registry.example.com/shop/migrate:2.4.1',
    containerReason: 'CreateContainerConfigError',
    quoted: 'secret "db-credentials" not found',
    quotedFrom: 'container status',
    missing: {
      kind: 'Secret',
      name: 'db-credentials',
    },
  },
  'stuck-unschedulable': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'Unschedulable',
    message:
      'Pod db-migrate-w9c3f cannot be scheduled: 0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.',
    nextStep:
      'Free or add capacity, or change the requests, node selector, affinity or tolerations the scheduler names.',
    since: '2026-11-27T09:40:01Z',
    forSeconds: 1199,
    pod: 'db-migrate-w9c3f',
    quoted:
      '0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.',
    quotedFrom: 'condition PodScheduled',
  },
  succeeded: {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Succeeded',
    reason: 'Completed',
    message: 'Job db-migrate completed',
    nextStep: 'Nothing to do.',
    since: '2026-11-27T09:40:14Z',
    forSeconds: 1186,
    jobCondition: {
      type: 'Complete',
      reason: 'CompletionsReached',
      message: 'Reached expected number of succeeded pods',
    },
  },
  suspended: {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Suspended',
    reason: 'Suspended',
    message:
      "Job db-migrate is suspended (Kueue queue batch-queue): no Pod runs until it is resumed; Argo CD's health calls it Suspended and a sync waits for it",
    nextStep:
      'Look at the workload of queue batch-queue (kubectl get workloads -n shop) to see why it is not admitted.',
    since: '2026-11-27T09:40:00Z',
    forSeconds: 120,
    jobCondition: {
      type: 'Suspended',
      reason: 'JobSuspended',
      message: 'Job suspended',
    },
  },
  'stuck-guard-image': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'ImagePullBackOff',
    message:
      "hookguard's guard init container hookguard-min-runtime of Pod db-migrate-x2v7c cannot pull image gcr.io/distroless/static-debian12:debug-nonroot (ImagePullBackOff)",
    nextStep:
      'hookguard adds it (rule min-runtime), so the hook has not started: mirror image gcr.io/distroless/static-debian12:debug-nonroot into a registry the nodes can pull from and set rules.minRuntime.image to it (docs/image.md, the guard image).',
    since: '2026-11-27T09:40:05Z',
    forSeconds: 1195,
    pod: 'db-migrate-x2v7c',
    container: 'hookguard-min-runtime',
    containerRole: 'init',
    image: 'gcr.io/distroless/static-debian12:debug-nonroot',
    containerReason: 'ImagePullBackOff',
    quoted:
      'Failed to pull image "gcr.io/distroless/static-debian12:debug-nonroot": rpc error: code = DeadlineExceeded desc = failed to pull and unpack image "gcr.io/distroless/static-debian12:debug-nonroot": failed to resolve reference "gcr.io/distroless/static-debian12:debug-nonroot": failed to do request: Head "https://gcr.io/v2/distroless/static-debian12/manifests/debug-nonroot": dial tcp 142.250.102.82:443: i/o timeout',
    quotedFrom: 'Event Failed (kubelet)',
  },
  'stuck-suspended': {
    kind: 'Job',
    namespace: 'shop',
    name: 'db-migrate',
    state: 'Stuck',
    reason: 'Suspended',
    message:
      "Job db-migrate is suspended (Kueue queue batch-queue): no Pod runs until it is resumed; Argo CD's health calls it Suspended and a sync waits for it",
    nextStep:
      'Look at the workload of queue batch-queue (kubectl get workloads -n shop) to see why it is not admitted.',
    since: '2026-11-27T09:40:00Z',
    forSeconds: 1200,
    jobCondition: {
      type: 'Suspended',
      reason: 'JobSuspended',
      message: 'Job suspended',
    },
  },
};

describe('explainHook golden fixtures', () => {
  it('has one expectation per fixture, each citing its sources', () => {
    const names = whyFixtureNames();
    expect(names).toEqual(Object.keys(EXPECTED).sort());
    for (const name of names) expect(whyFixture(name).provenance.length, name).toBeGreaterThan(0);
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`${name}: ${expected.state} (${expected.reason})`, () => {
      expect(explain(whyFixture(name))).toEqual(expected);
    });
  }

  it('covers every state', () => {
    expect(new Set(Object.values(EXPECTED).map((explanation) => explanation.state))).toEqual(
      new Set(['Succeeded', 'Running', 'Failed', 'Stuck', 'Blocked', 'Suspended']),
    );
  });
});
