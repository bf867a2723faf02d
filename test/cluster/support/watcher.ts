// The hook watcher as `hookguard serve` runs it (src/controllers/start.ts), from the checkout's build, against the
// real API server through the fault proxy, as the chart's identity (support/identity.ts), in a namespace of its own
// for its Lease; its cluster-wide watch of hooks narrowed by the proxy to the namespaces the test names, so that it
// never writes on another test's hooks.
//
// The cluster's own hookguard (namespace hookguard) watches every namespace too and would write the same Events, of
// the same fixed names, on this test's hooks, racing the watcher under test: a ValidatingAdmissionPolicy keeps its
// Events out of namespaces labelled for this run (`keepClusterWatcherOut`), so every hook Event in them is the one the
// watcher under test wrote.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '../../support/k8s-tools.js';
import { ServeProcess } from '../../support/serve-process.js';
import { HOOKGUARD_NAMESPACE } from '../cluster.js';
import { deleteNamespace, helm4Path, kubectl, kubectlPath, newNamespace, run, waitUntil } from './cluster.js';
import { FaultProxy } from './fault-proxy.js';
import { chartIdentity, type ChartIdentity } from './identity.js';

/** The label every namespace of one run carries: the cluster's hookguard may not write Events in them. */
export const RUN_LABEL = 'hookguard.test/hook-watcher-run';
const CLUSTER_HOOKGUARD = `system:serviceaccount:${HOOKGUARD_NAMESPACE}:hookguard`;

export interface WatcherRun {
  /** This run's value of RUN_LABEL. */
  id: string;
  /** A namespace of this run (RUN_LABEL set), the cluster's hookguard's Events kept out of it. */
  namespace(prefix: string, labels?: Record<string, string>): Promise<string>;
  /** Deletes the policy and every namespace made. */
  cleanup(): Promise<void>;
}

/**
 * A ValidatingAdmissionPolicy refusing the cluster's hookguard any Event in this run's namespaces (422, a reason that
 * is not Forbidden: the cluster's log is checked for refusals its RBAC caused). Returns once the API server enforces it.
 */
export async function keepClusterWatcherOut(): Promise<WatcherRun> {
  const id = randomBytes(3).toString('hex');
  const name = `hook-watcher-test-${id}`;
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: ['', 'events.k8s.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['events'] },
        ],
      },
      matchConditions: [
        { name: 'the-clusters-hookguard', expression: `request.userInfo.username == '${CLUSTER_HOOKGUARD}'` },
      ],
      validations: [
        {
          expression: 'false',
          reason: 'Invalid',
          message: "the hook Events of this test's namespaces are its own watcher's to write",
        },
      ],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { [RUN_LABEL]: id } } },
    },
  };
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }));
  const namespaces: string[] = [];
  const namespace = async (prefix: string, labels: Record<string, string> = {}) => {
    const made = await newNamespace(prefix, { ...labels, [RUN_LABEL]: id });
    namespaces.push(made);
    return made;
  };
  // The policy takes effect once the API server's informers have it: a dry run as the cluster's hookguard shows when.
  const probe = await namespace('hook-watcher-probe');
  const event = {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: 'probe', namespace: probe },
    eventTime: '2026-01-01T00:00:00.000000Z',
    reportingController: 'hookguard.io/hook-watcher',
    reportingInstance: 'probe',
    action: 'ExplainHook',
    reason: 'HookFailed',
    type: 'Warning',
    regarding: { apiVersion: 'batch/v1', kind: 'Job', name: 'probe', namespace: probe },
  };
  await waitUntil('the policy keeping the cluster hookguard Events out', async () => {
    const tried = await run(kubectlPath, ['create', '--dry-run=server', '--as', CLUSTER_HOOKGUARD, '-f', '-'], {
      input: JSON.stringify(event),
    });
    return tried.status !== 0 && tried.stderr.includes(name);
  });
  return {
    id,
    namespace,
    cleanup: async () => {
      for (const made of namespaces) await deleteNamespace(made);
      await run(kubectlPath, ['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', name]);
    },
  };
}

/**
 * Binds hookguard in NAMESPACE to the hook watcher's ClusterRole as the chart renders it with `values` (a copy under a
 * name of its own); returns what removes it.
 */
async function grantHookWatcherRole(namespace: string, values: readonly string[]): Promise<() => Promise<void>> {
  const rendered = await run(helm4Path, [
    'template',
    'hookguard',
    join(repoRoot, 'charts', 'hookguard'),
    '--namespace',
    HOOKGUARD_NAMESPACE,
    ...values.flatMap((value) => ['--set', value]),
    '--show-only',
    'templates/rbac.yaml',
  ]);
  if (rendered.status !== 0) throw new Error(`helm template failed: ${rendered.stderr}`);
  const role = parseAllDocuments(rendered.stdout)
    .map((document) => document.toJS() as { kind?: string; metadata?: { name?: string }; rules?: unknown[] } | null)
    .find((object) => object?.kind === 'ClusterRole' && object.metadata?.name === 'hookguard-hook-watcher');
  if (!role) throw new Error('the chart renders no ClusterRole hookguard-hook-watcher');
  const name = `${namespace}-hook-watcher`;
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: role.rules,
    }),
  );
  await kubectl([
    'create',
    'clusterrolebinding',
    name,
    `--clusterrole=${name}`,
    `--serviceaccount=${namespace}:hookguard`,
  ]);
  return async () => {
    await run(kubectlPath, ['delete', 'clusterrolebinding,clusterrole', name, '--ignore-not-found']);
  };
}

export interface WatcherOptions {
  /** The namespaces whose hooks it sees. */
  watched: readonly string[];
  /**
   * The chart installed with hookWatch.eventLogs=true (pods/log, namespaces get) or hookWatch.helmReleaseEvents=true
   * (helmreleases get): its hook watcher's ClusterRole as the chart renders it then is bound too, and the setting on.
   */
  eventLogs?: boolean;
  helmReleaseEvents?: boolean;
  /** More of serve's config file, YAML lines. */
  config?: readonly string[];
}

export interface RunningWatcher {
  /** Its own namespace: its ServiceAccount and Lease. */
  namespace: string;
  proxy: FaultProxy;
  identity: ChartIdentity;
  serve: ServeProcess;
  /** SIGTERM (the Lease given up), then a new process with the same config: what a rollout does. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** `hookguard serve` with only its hook watcher on, leading at once; the caller owns the namespaces `run` made. */
export async function startWatcher(runOf: WatcherRun, options: WatcherOptions): Promise<RunningWatcher> {
  const namespace = await runOf.namespace('hook-watcher');
  const identity = await chartIdentity(namespace);
  const values = [
    ...(options.eventLogs ? ['hookWatch.eventLogs=true'] : []),
    ...(options.helmReleaseEvents ? ['hookWatch.helmReleaseEvents=true'] : []),
  ];
  const granted = values.length > 0 ? await grantHookWatcherRole(namespace, values) : async () => undefined;
  const proxy = await FaultProxy.start();
  proxy.namespaces = new Set(options.watched);
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-watcher-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, proxy.kubeConfig(identity.token).exportConfig());
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      // Its watches retry fast; discovery, the self-test and the namespace watch are others' to test.
      'discovery: { enabled: false, backoffInitialMs: 20, backoffMaxMs: 200 }',
      'selfTest: { enabled: false }',
      'rules: { meshSidecar: { action: "off" } }',
      // The chart's Role for the Lease, copied into its namespace by chartIdentity(); a quick hand-over on restart.
      `leaderElection: { leaseNamespace: ${namespace}, leaseDurationSeconds: 4, renewDeadlineMs: 3000, retryPeriodMs: 500 }`,
      'server: { shutdownDelayMs: 0 }',
      `hookWatch: { eventLogs: ${options.eventLogs === true}, helmReleaseEvents: ${options.helmReleaseEvents === true} }`,
      ...(options.config ?? []),
      '',
    ].join('\n'),
  );
  const start = async () => {
    const serve = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig });
    await serve.waitForLog((line) => line.msg === 'leading: acquired the Lease');
    return serve;
  };
  const running: RunningWatcher = {
    namespace,
    proxy,
    identity,
    serve: await start(),
    restart: async () => {
      running.serve.child.kill('SIGTERM');
      await running.serve.exitWithin(15_000);
      running.serve = await start();
    },
    stop: async () => {
      running.serve.stop();
      await proxy.stop();
      await identity.release();
      await granted();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return running;
}
