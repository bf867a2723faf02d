// The self-test against the real API server (issue 36, in place of the stand-in's imitation of it): its dry-run CREATE
// goes through the real admission chain, which calls hookguard's /mutate and /validate (buildApp over TLS, on this
// machine) through webhook configurations of the test's own, trusting only their caBundle, applies the patch, fails
// open when it cannot call them (the chart's failurePolicy Ignore) and returns warnings as Warning headers; the status
// is written to a HookGuard object of the test's own under the shipped CRD, through its status subresource, as the
// chart's identity (support/certs.ts). A FaultProxy in front of the API server records the calls.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { apiFailure } from '../../src/kube/api-failure.js';
import { advisoriesOfTool } from '../../src/core/argocd-version.js';
import type { KubeObject, Mode } from '../../src/core/types.js';
import type { DiscoveryStatus } from '../../src/discovery/discovery.js';
import { buildApp } from '../../src/http/app.js';
import { Metrics } from '../../src/http/metrics.js';
import { kubeSelfTestClient, type SelfTestClient } from '../../src/controllers/selftest/client.js';
import { VALIDATING_MARKER } from '../../src/controllers/selftest/probe.js';
import { probeOnce, SelfTest } from '../../src/controllers/selftest/self-test.js';
import { issueCa, issueServingCertificate } from '../../src/tls/authority.js';
import type { KeyPair } from '../../src/tls/certificates.js';
import { capturedLogger, eventually, type LogLine } from '../support/log-sink.js';
import { runCommand } from '../support/command.js';
import { freePort, ServeProcess } from '../support/serve-process.js';
import { tlsEnv, writeCertificate } from '../support/server-process.js';
import { Endpoints, ownInstall, setCaBundles, type OwnInstall, type WebhookKind } from './support/certs.js';
import { describeCluster, kubectl, kubectlJson, waitUntil } from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';

type Json = Record<string, any>;
const NO_ARGOCD: DiscoveryStatus = { enabled: true, synced: true, watching: true, instances: [] };
const never = new AbortController().signal;
const VALIDITY = { caValidityDays: 365, certValidityDays: 30 };

interface World {
  install: OwnInstall;
  proxy: FaultProxy;
  client: SelfTestClient;
  webhook: { app: FastifyInstance; serving: KeyPair; ca: KeyPair; metrics: Metrics; lines: LogLine[] };
  test: SelfTest;
  lines: LogLine[];
  outcomes: string[];
  object(): Promise<Json>;
  condition(type: string): Promise<Json | undefined>;
  summary(): Promise<unknown[][]>;
  /** Probes (without a status write) until the API server's answer says `reason`: it has seen the configurations. */
  settled(reason: string): Promise<void>;
}

/** hookguard's webhooks over TLS, the real API server calling them, and a self-test as the chart's identity. */
async function world(
  worlds: World[],
  mode: Mode,
  options: { certificateWarningDays?: number; pinned?: string | null; stale?: readonly WebhookKind[] } = {},
): Promise<World> {
  const port = await freePort();
  const ca = await issueCa({ serviceName: 'hookguard', namespace: 'any', ...VALIDITY }, Date.now());
  const install = await ownInstall('selftest', { port, caBundle: ca.cert });
  const serving = await issueServingCertificate(
    { serviceName: 'hookguard', namespace: install.ns, ...VALIDITY },
    ca,
    Date.now(),
  );
  const config = loadConfig({ overrides: { mode } });
  const hookLogs = capturedLogger('debug');
  const metrics = new Metrics();
  const app = buildApp(config, {
    logger: hookLogs.logger,
    tls: serving,
    metrics,
    selfTest: { status: () => ({ enabled: false, reason: 'test' }), probeUsername: install.identity.subject },
  });
  await app.listen({ host: '127.0.0.1', port });
  const proxy = await FaultProxy.start();
  const client = kubeSelfTestClient(proxy.kubeConfig(install.identity.token), install.resource);
  const { logger, lines } = capturedLogger('debug');
  const outcomes: string[] = [];
  const settings = {
    mode,
    namespace: install.ns,
    intervalSeconds: 1,
    requestTimeoutMs: 15_000,
    certificateWarningDays: options.certificateWarningDays ?? 14,
    pinnedArgocdVersion: options.pinned === undefined ? '3.0.1' : options.pinned,
    // What src/controllers/selftest/start.ts hands it: the Argo CD advisories only.
    advisories: advisoriesOfTool(config.advisories, 'argocd'),
    statusObject: install.name,
  };
  const test = new SelfTest(
    client,
    settings,
    { certificate: () => serving.cert, discovery: () => NO_ARGOCD },
    (outcome) => outcomes.push(outcome),
    logger,
    'replica-a',
  );
  const object = () => kubectlJson<Json>(['get', 'hookguard', install.name]);
  const condition = async (type: string) =>
    ((await object()).status?.conditions as Json[] | undefined)?.find((each) => each.type === type);
  const w: World = {
    install,
    proxy,
    client,
    webhook: { app, serving, ca, metrics, lines: hookLogs.lines },
    test,
    lines,
    outcomes,
    object,
    condition,
    summary: async () =>
      (((await object()).status?.conditions ?? []) as Json[]).map((each) => [each.type, each.status, each.reason]),
    settled: async (reason) => {
      await eventually(
        async () => (await probeOnce(client, settings, never)).reason === reason,
        `the API server's answer to say ${reason}`,
        20_000,
      );
      // The probes that made sure are not the test's.
      hookLogs.lines.length = 0;
      proxy.requests.length = 0;
    },
  };
  worlds.push(w);
  // A newly created webhook configuration reaches the API server's cache a moment later.
  await w.settled('Called');
  if (options.stale?.length) {
    const other = await issueCa({ serviceName: 'hookguard', namespace: 'any', ...VALIDITY }, Date.now());
    await setCaBundles(install.name, options.stale, other.cert);
    const reason =
      options.stale.length === 2
        ? 'NotCalled'
        : options.stale[0] === 'MutatingWebhookConfiguration'
          ? 'MutatingNotCalled'
          : 'ValidatingNotCalled';
    await w.settled(reason);
  }
  return w;
}

const probeLines = (w: World) => w.webhook.lines.filter((line) => line.msg === 'self-test probe decided');

// Each test waits mostly on the API server and on hookguard: all of them side by side (vitest's default is 5).
vi.setConfig({ maxConcurrency: 16 });

const INTERVAL_SECONDS = 1;
const LEASE_DURATION_SECONDS = 2;
const otherCa = () => issueCa({ serviceName: 'hookguard', namespace: 'any', ...VALIDITY }, Date.now());
const leading = (replica: ServeProcess) => replica.lines.some((line) => line.msg === 'leading: acquired the Lease');
const identityOf = (replica: ServeProcess) =>
  replica.lines.find((line) => line.msg === 'leading: acquired the Lease')?.identity as string | undefined;
/** The last lines a process logged, to show in a failure. */
const lastLines = (replica: ServeProcess) =>
  replica.lines
    .slice(-6)
    .map((line) => JSON.stringify(line))
    .join('\n');
const selfTests = (replica: ServeProcess) => replica.lines.filter((line) => line.msg === 'self-test').length;
const warnedSelfTests = (replica: ServeProcess) =>
  replica.lines.filter((line) => line.msg === 'self-test' && (line.level as number) >= 40).length;

describeCluster('the self-test through the real API server', () => {
  const worlds: World[] = [];
  const installs: OwnInstall[] = [];
  const cleanups: Array<() => Promise<void>> = [];
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-self-test-'));
  afterAll(async () => {
    for (const step of cleanups) await step();
    for (const install of installs) await install.release();
    rmSync(dir, { recursive: true, force: true });
    for (const w of worlds) {
      await w.webhook.app.close();
      await w.proxy.stop();
      await w.install.release();
    }
  });

  /**
   * Replicas of `hookguard serve` (the built CLI) on an installation of their own, behind one Service (Endpoints),
   * their self-test every INTERVAL_SECONDS writing the status of its HookGuard object, their calls through a proxy.
   */
  async function serveWorld(prefix: string) {
    const ca = await otherCa();
    const endpoints = await Endpoints.start();
    cleanups.push(() => endpoints.stop());
    const install = await ownInstall(prefix, { port: endpoints.port, caBundle: ca.cert });
    installs.push(install);
    const files = writeCertificate(
      await issueServingCertificate({ serviceName: 'hookguard', namespace: install.ns, ...VALIDITY }, ca, Date.now()),
    );
    cleanups.push(async () => files.remove());
    // Straight to the API server: through the fault proxy (plain HTTP, client-node on node's keep-alive agent) a
    // process that has drained waits for the proxy to close its idle connections (node's keepAliveTimeout, 5 s)
    // before it exits. At debug, the webhooks log each probe they judged.
    const { config, kubeconfig: kubeconfigFile } = install.serveFiles(dir, {
      log: { level: 'debug' },
      selfTest: { intervalSeconds: INTERVAL_SECONDS, requestTimeoutMs: 5000, statusObject: install.name },
      leaderElection: { leaseDurationSeconds: LEASE_DURATION_SECONDS, renewDeadlineMs: 1500, retryPeriodMs: 200 },
    });
    const replicas: ServeProcess[] = [];
    cleanups.push(async () => {
      for (const replica of replicas) replica.stop();
    });
    const object = () => kubectlJson<Json>(['get', 'hookguard', install.name]);
    return {
      install,
      replicas,
      object,
      /** The replicas' Lease as stored (the chart's leaseName, in the installation's namespace). */
      lease: async () =>
        (await kubectlJson<{ spec: Json }>(['get', 'lease', 'hookguard', '-n', install.ns])).spec as {
          holderIdentity: string;
          acquireTime: string;
          renewTime: string;
        },
      condition: async (type: string) =>
        ((await object()).status?.conditions as Json[] | undefined)?.find((each) => each.type === type),
      start: async () => {
        const replica = await ServeProcess.start(['--config', config], {
          KUBECONFIG: kubeconfigFile,
          ...tlsEnv(files),
        });
        replicas.push(replica);
        endpoints.targets.add(replica.port);
        return replica;
      },
      /** A replica being stopped leaves the endpoints first. */
      kill: (replica: ServeProcess, signal: NodeJS.Signals) => {
        endpoints.targets.delete(replica.port);
        replica.child.kill(signal);
      },
    };
  }

  describe.concurrent('one self-test each', () => {
    it('Called (enforce): the dry run came back with the patch; the status says so through the status subresource', async () => {
      const w = await world(worlds, 'enforce');
      await w.test.once(never);
      expect(w.outcomes).toEqual(['Called']);
      // The API server called both webhooks, mutating first.
      expect(probeLines(w).map((line) => (line.selfTest as Json).endpoint)).toEqual(['mutate', 'validate']);
      const dryRun = w.proxy.requests.find((request) => request.method === 'POST');
      expect([dryRun?.path, dryRun?.query, dryRun?.user, dryRun?.status]).toEqual([
        `/apis/batch/v1/namespaces/${w.install.ns}/jobs`,
        { dryRun: 'All', fieldManager: 'hookguard' },
        w.install.identity.subject,
        201,
      ]);
      // Nothing was stored but the status.
      expect(w.proxy.requests.filter((request) => request.method === 'PUT').map((request) => request.path)).toEqual([
        `/apis/hookguard.io/v1alpha1/hookguards/${w.install.name}/status`,
      ]);
      expect(await kubectl(['get', 'jobs', '-n', w.install.ns, '-o', 'name'])).toBe('');
      const status = (await w.object()).status as Json;
      expect(await w.summary()).toEqual([
        ['WebhookCalled', 'True', 'Called'],
        ['CertificateValid', 'True', 'Valid'],
        ['ArgoCDKnown', 'True', 'Pinned'],
        ['Ready', 'True', 'Ready'],
      ]);
      expect(status).toMatchObject({
        observedGeneration: 1,
        mode: 'enforce',
        leader: 'replica-a',
        lastSelfTest: { outcome: 'Called' },
        advisoriesInEffect: [
          'argocd-fast-hook-finalizer-race',
          'argocd-native-sidecar-finalizer-update',
          'argocd-foreign-finalizer',
        ].map((id) => ({ id, instances: [{ namespace: '', version: '3.0.1' }] })),
      });
      expect(status.certificateNotAfter).toBe(
        new Date(new X509Certificate(w.webhook.serving.cert).validTo).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      );
      expect((await w.condition('WebhookCalled'))?.message).toBe(
        `the API server called both webhooks: the dry-run probe came back with hookguard's patch (--ignore-not-found) and the warning "${VALIDATING_MARKER}"`,
      );
    });

    it('keeps the probe out of the admission metrics and the audit log: a debug line instead', async () => {
      const w = await world(worlds, 'enforce');
      await w.test.once(never);
      const exposition = (await w.webhook.metrics.exposition()).text;
      expect(exposition).toMatch(/hookguard_admission_requests_total\{endpoint="mutate",decision="patched"\} 0/);
      expect(exposition).toMatch(/hookguard_admission_requests_total\{endpoint="validate",decision="allowed"\} 0/);
      expect(w.webhook.lines.filter((line) => line.msg === 'admission decision')).toEqual([]);
      expect(
        probeLines(w).map((line) => {
          const decided = line.selfTest as Json;
          return [line.level, decided.endpoint, decided.dryRun, decided.user];
        }),
      ).toEqual([
        [20, 'mutate', true, w.install.identity.subject],
        [20, 'validate', true, w.install.identity.subject],
      ]);
    });

    it('Called (audit): no patch, so the answer is read for the warning the API server returned as a header', async () => {
      const w = await world(worlds, 'audit');
      await w.test.once(never);
      expect(w.outcomes).toEqual(['Called']);
      expect(await w.condition('WebhookCalled')).toMatchObject({
        status: 'True',
        reason: 'Called',
        message: `the API server called both webhooks: the dry-run probe came back with hookguard's audit warning (hookguard audit would change [idempotent-cleanup]: …) and the warning "${VALIDATING_MARKER}"`,
      });
      expect((await w.object()).status.mode).toBe('audit');
    });

    it.for(['enforce', 'audit'] as const)(
      'NotCalled (%s): with a stale caBundle the API server fails open, the probe comes back unchanged, Ready turns False',
      async (mode) => {
        const w = await world(worlds, mode, {
          stale: ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'],
        });
        await w.test.once(never);
        expect(w.outcomes).toEqual(['NotCalled']);
        // Neither webhook was reached: the API server refused hookguard's certificate before sending anything.
        expect(probeLines(w)).toEqual([]);
        expect(w.proxy.requests.find((request) => request.method === 'POST')?.status).toBe(201);
        expect(await w.summary()).toEqual([
          ['WebhookCalled', 'False', 'NotCalled'],
          ['CertificateValid', 'True', 'Valid'],
          ['ArgoCDKnown', 'True', 'Pinned'],
          ['Ready', 'False', 'NotCalled'],
        ]);
        expect(w.lines.filter((line) => line.msg === 'self-test').map((line) => [line.level, line.outcome])).toEqual([
          [40, 'NotCalled'],
        ]);
      },
    );

    it.for([
      ['enforce', 'ValidatingWebhookConfiguration', 'validate.hookguard.io', 'ValidatingNotCalled'],
      ['audit', 'ValidatingWebhookConfiguration', 'validate.hookguard.io', 'ValidatingNotCalled'],
      ['enforce', 'MutatingWebhookConfiguration', 'mutate.hookguard.io', 'MutatingNotCalled'],
      ['audit', 'MutatingWebhookConfiguration', 'mutate.hookguard.io', 'MutatingNotCalled'],
    ] as const)(
      '%s: a stale caBundle on the %s alone (%s) shows as WebhookCalled=False, reason %s',
      async ([mode, kind, stale, reason]) => {
        const w = await world(worlds, mode, { stale: [kind] });
        await w.test.once(never);
        expect(w.outcomes).toEqual(['NotCalled']);
        // Only the other webhook was called.
        expect(probeLines(w).map((line) => (line.selfTest as Json).endpoint)).toEqual([
          stale === 'mutate.hookguard.io' ? 'validate' : 'mutate',
        ]);
        expect(await w.summary()).toEqual([
          ['WebhookCalled', 'False', reason],
          ['CertificateValid', 'True', 'Valid'],
          ['ArgoCDKnown', 'True', 'Pinned'],
          ['Ready', 'False', reason],
        ]);
        expect((await w.condition('WebhookCalled'))?.message).toMatch(
          new RegExp(`the API server logs failed calling webhook "${stale.replaceAll('.', '\\.')}"$`),
        );
        expect((await w.object()).status.lastSelfTest).toMatchObject({ outcome: 'NotCalled' });
      },
    );

    it('Error: a failed dry run (here RBAC refuses it) says nothing about the webhook: WebhookCalled Unknown, with the reason', async () => {
      const w = await world(worlds, 'enforce');
      // The chart's identity may dry-run Jobs in the self-test's namespace only.
      const elsewhere = new SelfTest(
        w.client,
        {
          mode: 'enforce',
          namespace: 'default',
          intervalSeconds: 1,
          requestTimeoutMs: 15_000,
          certificateWarningDays: 14,
          pinnedArgocdVersion: '3.0.1',
          advisories: [],
        },
        { certificate: () => w.webhook.serving.cert, discovery: () => NO_ARGOCD },
        (outcome) => w.outcomes.push(outcome),
        capturedLogger('debug').logger,
        'replica-a',
      );
      await elsewhere.once(never);
      expect(w.outcomes).toEqual(['Error']);
      expect(await w.condition('WebhookCalled')).toMatchObject({
        status: 'Unknown',
        reason: 'Error',
        message: `the dry run of the probe Job in namespace default failed (HTTP 403): jobs.batch is forbidden: User "${w.install.identity.subject}" cannot create resource "jobs" in API group "batch" in the namespace "default"`,
      });
      expect(await w.condition('Ready')).toMatchObject({ status: 'False', reason: 'Error' });
    });

    it('moves lastTransitionTime only on a transition, logs a warning for each, and tracks the generation', async () => {
      const w = await world(worlds, 'enforce');
      const transitionTimes = async () =>
        Object.fromEntries(
          (((await w.object()).status?.conditions ?? []) as Json[]).map((each) => [each.type, each.lastTransitionTime]),
        );
      await w.test.once(never);
      const first = await transitionTimes();
      // lastTransitionTime has a resolution of one second.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await w.test.once(never);
      expect(await transitionTimes()).toEqual(first);

      await setCaBundles(w.install.name, ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'], '');
      await w.settled('NotCalled');
      // The HookGuard's spec has no fields (the CRD prunes what is set there): the API server moves the generation
      // when the object is marked for deletion, which a finalizer holds.
      await kubectl([
        'patch',
        'hookguard',
        w.install.name,
        '--type=merge',
        '-p',
        JSON.stringify({ metadata: { finalizers: ['test.hookguard.io/hold'] } }),
      ]);
      await kubectl(['delete', 'hookguard', w.install.name, '--wait=false']);
      try {
        await w.test.once(never);
        const third = await transitionTimes();
        expect(third.CertificateValid).toBe(first.CertificateValid);
        expect(third.ArgoCDKnown).toBe(first.ArgoCDKnown);
        expect(third.WebhookCalled).not.toBe(first.WebhookCalled);
        expect(third.Ready).toBe(third.WebhookCalled);
        const object = await w.object();
        expect(object.metadata.generation).toBe(2);
        expect(object.status.observedGeneration).toBe(2);
        expect((await w.condition('Ready'))?.observedGeneration).toBe(2);
      } finally {
        await kubectl(['patch', 'hookguard', w.install.name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }

      const transitions = w.lines.filter((line) => String(line.msg).startsWith('HookGuard condition'));
      expect(transitions.map((line) => [line.level, line.condition, line.from, line.to])).toEqual([
        [40, 'WebhookCalled', null, 'True'],
        [40, 'CertificateValid', null, 'True'],
        [40, 'ArgoCDKnown', null, 'True'],
        [40, 'Ready', null, 'True'],
        [40, 'WebhookCalled', 'True', 'False'],
        [40, 'Ready', 'True', 'False'],
      ]);
    });

    it('CertificateValid turns False within certificateWarningDays, and so does Ready', async () => {
      const w = await world(worlds, 'enforce', { certificateWarningDays: 60 });
      await w.test.once(never);
      expect(await w.condition('CertificateValid')).toMatchObject({ status: 'False', reason: 'ExpiresSoon' });
      expect(await w.condition('Ready')).toMatchObject({ status: 'False', reason: 'ExpiresSoon' });
    });

    it('without the HookGuard object it still tests and logs, and says how the Helm chart brings it back', async () => {
      const w = await world(worlds, 'enforce');
      await kubectl(['delete', 'hookguard', w.install.name]);
      await w.test.once(never);
      expect(w.outcomes).toEqual(['Called']);
      expect(w.lines.map((line) => line.msg)).toContain(
        `the HookGuard object "${w.install.name}" does not exist or cannot be read: the Helm chart creates it (helm upgrade ` +
          'the release to recreate it); if its CRD hookguards.hookguard.io is missing too, first kubectl apply -f ' +
          'charts/hookguard/crds/ (Helm installs crds/ on first install only)',
      );
    });

    it('writes a status the shipped CRD schema accepts, and the API server refuses one it does not with 422', async () => {
      const w = await world(worlds, 'enforce');
      await w.test.once(never);
      expect(w.proxy.requests.find((request) => request.method === 'PUT')?.status).toBe(200);
      const broken = { ...(await w.object()), status: { mode: 'sometimes' } } as KubeObject;
      const refused = await w.client.writeStatus(broken, never).then(
        () => undefined,
        (error: unknown) => apiFailure(error),
      );
      expect([refused?.status, refused?.message]).toEqual([
        422,
        `HookGuard.hookguard.io "${w.install.name}" is invalid: status.mode: Unsupported value: "sometimes": supported values: "enforce", "audit"`,
      ]);
    });
    it('hookguard self-test (helm test) against a hookguard serve: exit 0 when the API server called both webhooks, 1 naming the one it did not', async () => {
      const ca = await issueCa({ serviceName: 'hookguard', namespace: 'any', ...VALIDITY }, Date.now());
      // The port is the process's, known once it runs.
      const install = await ownInstall('selftest-cli', { port: 443, caBundle: ca.cert });
      installs.push(install);
      const files = writeCertificate(
        await issueServingCertificate({ serviceName: 'hookguard', namespace: install.ns, ...VALIDITY }, ca, Date.now()),
      );
      cleanups.push(async () => files.remove());
      const { kubeconfig, config } = install.serveFiles(dir, { selfTest: { requestTimeoutMs: 15_000 } });
      const server = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig, ...tlsEnv(files) });
      cleanups.push(async () => server.stop());
      await install.pointAt(server.port);
      const env = { KUBECONFIG: kubeconfig, HOOKGUARD_CONFIG: config, HOME: dir };
      const verdict = async () => {
        const run = await runCommand(['self-test'], undefined, env);
        return [run.status, run.stdout.split(':').slice(0, 2).join(':')];
      };
      // The API server sees the configurations' new port a moment later.
      expect(
        await waitUntil('the self-test to pass', async () => {
          const first = await verdict();
          return first[0] === 0 && first;
        }),
      ).toEqual([0, `hookguard self-test in namespace ${install.ns}: Called`]);
      // The validating webhook's caBundle is stale: the API server cannot call it, and fails open.
      await setCaBundles(
        install.name,
        ['ValidatingWebhookConfiguration'],
        (await issueCa({ serviceName: 'hookguard', namespace: 'any', ...VALIDITY }, Date.now())).cert,
      );
      expect(
        await waitUntil('the self-test to fail', async () => {
          const next = await verdict();
          return next[0] !== 0 && next;
        }),
      ).toEqual([1, `hookguard self-test in namespace ${install.ns}: ValidatingNotCalled`]);
    });
  });

  // One after the other: they time a hand-over and a flip.
  describe('hookguard serve, its self-test as the Lease holder', () => {
    it('two hookguard serve processes: one leads and writes the status; on SIGTERM it hands over at once, and on SIGKILL after the lease duration', async () => {
      const w = await serveWorld('selftest-lead');
      const a = await w.start();
      await eventually(() => leading(a), 'a leads', 10_000);
      const b = await w.start();
      await eventually(async () => (await w.condition('Ready'))?.status === 'True', 'Ready True', 20_000);
      expect((await w.object()).status.leader).toBe(identityOf(a));
      expect(await b.waitForLog((line) => line.msg === 'another replica leads')).toMatchObject({
        leader: identityOf(a),
      });
      // Only the leader probes: b has not led while a ran two more self-tests (an interval apart, or longer on a
      // loaded machine: counted, not timed), and the API server called the webhooks (behind the Service: either
      // replica, whose lines may come a moment after a's) for a's dry runs, two webhooks per probe.
      const judged = () =>
        w.replicas.flatMap((replica) => replica.lines).filter((line) => line.msg === 'self-test probe decided').length;
      const before = { selfTests: selfTests(a), judged: judged() };
      await eventually(
        () => selfTests(a) >= before.selfTests + 2 && judged() >= before.judged + 2 * 2,
        "two more of a's self-tests, each judged by both webhooks",
        20_000,
      );
      expect(leading(b)).toBe(false);
      expect(b.lines.filter((line) => line.msg === 'self-test')).toEqual([]);

      // SIGTERM: a releases the Lease while it drains; b takes over at its next try, well before a's Lease would
      // have expired. Timed by the processes' own log lines, not by when they reach this busy test process.
      w.kill(a, 'SIGTERM');
      await eventually(() => leading(b), 'b leads', 5000);
      const signalled = await a.waitForLog((line) => line.signal === 'SIGTERM');
      const tookOver = await b.waitForLog((line) => line.msg === 'leading: acquired the Lease');
      expect(Date.parse(String(tookOver.time)) - Date.parse(String(signalled.time))).toBeLessThan(
        LEASE_DURATION_SECONDS * 1000,
      );
      expect(await a.exitWithin(5000), lastLines(a)).toBe(0);
      expect(a.lines.map((line) => line.msg)).toContain('released the Lease');
      await eventually(async () => (await w.object()).status?.leader === identityOf(b), 'b writes the status', 10_000);
      expect((await w.condition('Ready'))?.status).toBe('True');

      // SIGKILL: no release; c waits until b's record has not changed for the lease duration.
      const c = await w.start();
      await eventually(() => c.lines.some((line) => line.msg === 'another replica leads'), 'c sees b', 5000);
      // What b last wrote before the kill (it may renew again after this read, which only makes c's wait longer).
      const held = await w.lease();
      expect(held.holderIdentity).toBe(identityOf(b));
      w.kill(b, 'SIGKILL');
      await eventually(() => leading(c), 'c leads', 10_000);
      // c takes the Lease a whole lease duration after it last saw b's record change: its acquireTime, written by c
      // when its taking request began, is that long after any renewTime b wrote (one clock: the same machine).
      const taken = await w.lease();
      expect(taken.holderIdentity).toBe(identityOf(c));
      expect(Date.parse(taken.acquireTime) - Date.parse(held.renewTime)).toBeGreaterThanOrEqual(
        LEASE_DURATION_SECONDS * 1000,
      );
      await eventually(async () => (await w.object()).status?.leader === identityOf(c), 'c writes the status', 10_000);
      expect(selfTests(c)).toBeGreaterThan(0);
      expect(warnedSelfTests(c)).toBe(0); // Called outcomes log at debug: nothing went wrong
      w.kill(c, 'SIGTERM');
      expect(await c.exitWithin(5000), lastLines(c)).toBe(0);
    });

    it(`hookguard serve: a stale caBundle shows as WebhookCalled=False within one interval (${INTERVAL_SECONDS} s here), on either webhook alone`, async () => {
      const w = await serveWorld('selftest-stale');
      const a = await w.start();
      await eventually(
        async () => (await w.condition('WebhookCalled'))?.status === 'True',
        'WebhookCalled True',
        20_000,
      );
      const calledSince = (await w.condition('WebhookCalled'))?.lastTransitionTime;
      // The ValidatingWebhookConfiguration's alone: the mutating webhook still patches the probe, denials stop.
      const broken = performance.now();
      await setCaBundles(w.install.name, ['ValidatingWebhookConfiguration'], (await otherCa()).cert);
      await eventually(
        async () => (await w.condition('WebhookCalled'))?.status === 'False',
        'WebhookCalled False',
        10_000,
      );
      const flippedAfterMs = performance.now() - broken;
      console.log(
        `stale validating caBundle -> WebhookCalled=False after ${Math.round(flippedAfterMs)} ms (interval ${INTERVAL_SECONDS} s)`,
      );
      expect(flippedAfterMs).toBeLessThan(INTERVAL_SECONDS * 1000 + 1500);
      expect(await w.condition('WebhookCalled')).toMatchObject({ reason: 'ValidatingNotCalled' });
      expect((await w.condition('WebhookCalled'))?.lastTransitionTime).not.toBe(calledSince);
      expect(await w.condition('Ready')).toMatchObject({ status: 'False', reason: 'ValidatingNotCalled' });
      const warned = await a.waitForLog((line) => line.msg === 'HookGuard condition WebhookCalled is now False');
      expect(warned).toMatchObject({ level: 40, from: 'True', to: 'False', reason: 'ValidatingNotCalled' });
      // Then the MutatingWebhookConfiguration's too: neither is called.
      await setCaBundles(w.install.name, ['MutatingWebhookConfiguration'], (await otherCa()).cert);
      await eventually(
        async () => (await w.condition('WebhookCalled'))?.reason === 'NotCalled',
        'reason NotCalled',
        10_000,
      );
      expect(await w.condition('Ready')).toMatchObject({ status: 'False', reason: 'NotCalled' });
      expect(
        a.lines.some((line) => line.msg === 'self-test' && line.outcome === 'NotCalled' && line.level === 40),
      ).toBe(true);
      w.kill(a, 'SIGTERM');
      expect(await a.exitWithin(5000), lastLines(a)).toBe(0);
    });
  });
});
