// Faults under load: the built server in a real process, discovering Argo CD from the real API server through the
// fault proxy (support/fault-proxy.ts), as the chart's identity (support/identity.ts), its certificate in a
// Secret-like volume. While 16 keep-alive clients send the bench's mix without pause, the certificate is rotated, the
// API server goes away (the proxy stops: connections refused, the watch cut), and SIGTERM arrives. Every request that
// reached hookguard (sent on a TLS connection it had accepted) must get a 200 AdmissionReview with its uid, and the
// same answer as before any fault; after SIGTERM, new connections are refused (they never reached it) and the process
// exits 0. The figures are printed.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildWorkload, type BenchRequest } from '../../bench/workload.js';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { decide } from '../../src/core/decide.js';
import { generateDevCertificate, type TlsMaterial } from '../../src/tls/certificates.js';
import { controller } from '../support/argocd-controllers.js';
import { eventually } from '../support/log-sink.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import { fingerprintOf } from '../support/raw-http.js';
import { SecretVolume } from '../support/secret-volume.js';
import { ServeProcess } from '../support/serve-process.js';
import { deleteNamespace, describeCluster, kubectl, newNamespace } from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';
import { chartIdentity, type ChartIdentity } from './support/identity.js';

const CLIENTS = 16;
const ARGOCD_VERSION = '2.14.3';
const SHUTDOWN_DELAY_MS = 500;
// Every so often a client asks for its connection to be closed, so new TLS connections keep being made.
const REQUESTS_PER_CONNECTION = 25;
// Each phase lasts this long, and longer on a slow machine: until it has the answers the checks below count.
const PHASE_MS = 1_500;
const MIN_ANSWERS_PER_PHASE = 100;
const MIN_CONNECTIONS_AFTER_ROTATION = 10;

type Phase = 'steady' | 'after certificate rotation' | 'API server down' | 'after SIGTERM';

interface Outcome {
  phase: Phase;
  request: BenchRequest;
  ms: number;
  /** Set when an answer came back. */
  status?: number;
  body?: string;
  /** Set when none did. */
  error?: string;
  /** Whether the request went out on a TLS connection the server had completed: then it reached hookguard. */
  reached: boolean;
  /** The certificate the connection was served with. */
  certificate?: string;
  /** Sent on a connection opened for it (not a reused keep-alive one). */
  newConnection: boolean;
  startedAt: number;
}

const dir = mkdtempSync(join(tmpdir(), 'hookguard-faults-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeCluster('faults under steady load (built server, real TLS, the real API server behind the fault proxy)', () => {
  let first: TlsMaterial;
  let second: TlsMaterial;
  let ns = '';
  let identity: ChartIdentity;
  let proxy: FaultProxy;
  let serve: ServeProcess;
  let volume: SecretVolume;

  beforeAll(async () => {
    [first, second] = await Promise.all([generateDevCertificate(), generateDevCertificate()]);
    mkdirSync(join(dir, 'tls'));
    volume = new SecretVolume(join(dir, 'tls'));
    volume.update({ 'tls.crt': first.cert, 'tls.key': first.key });
    // Argo CD's controller as an install lays it out, at zero replicas: discovery reads its image, nothing runs it.
    ns = await newNamespace('faults-under-load');
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(controller(ns, `quay.io/argoproj/argocd:v${ARGOCD_VERSION}`, 'StatefulSet', 0)),
    );
    identity = await chartIdentity(ns);
    proxy = await FaultProxy.start();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, proxy.kubeConfig(identity.token).exportConfig());
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      [
        `discovery: { namespaces: [${ns}], backoffInitialMs: 20, backoffMaxMs: 200 }`,
        `flux: { namespaces: [${ns}] }`,
        `leaderElection: { leaseNamespace: ${ns} }`,
        // As leader of its own Lease it would write the cluster's HookGuard status and Events on other tests' hooks:
        // the self-test and the hook watcher have tests of their own.
        'selfTest: { enabled: false }',
        'hookWatch: { enabled: false }',
        `server: { shutdownDelayMs: ${SHUTDOWN_DELAY_MS}, shutdownTimeoutMs: 10000, tls: { certFile: ${volume.certFile}, keyFile: ${volume.keyFile} } }`,
        '',
      ].join('\n'),
    );
    serve = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig });
    await serve.waitForLog((line) => line.msg === 'Argo CD instance discovered' && line.version === ARGOCD_VERSION);
  });

  afterAll(async () => {
    serve?.stop();
    await proxy?.stop();
    await identity?.release();
    await deleteNamespace(ns);
  });

  it('answers every request that reached it through certificate rotation, API server loss and SIGTERM', async () => {
    // The mix as the bench sends it; /validate gets what /mutate stored, computed with the discovered version.
    const context = decisionContext(loadConfig(), ARGOCD_VERSION);
    const { requests } = buildWorkload(ARGOCD_CONTROLLER, (request) => decide(request, 'mutate', context).patch);
    // Each answer records the certificate its connection was served with, which must be one of the two. (Both are
    // self-signed with the same subject, so OpenSSL cannot hold both as trust anchors: the check is by fingerprint.)
    // No TLS session resumption, so that every new connection shows the certificate being served now.
    const agent = new https.Agent({
      keepAlive: true,
      maxSockets: CLIENTS,
      rejectUnauthorized: false,
      maxCachedSessions: 0,
    });
    const certificateOf = new WeakMap<TLSSocket, string>();
    const servedCertificates = new Set([fingerprintOf(first.cert), fingerprintOf(second.cert)]);
    const outcomes: Outcome[] = [];
    let phase: Phase = 'steady';
    let next = 0;

    const send = (request: BenchRequest, closeAfter: boolean): Promise<Outcome> =>
      new Promise((resolve) => {
        const started = performance.now();
        let servedWith: string | undefined;
        let newConnection = false;
        const settle = (fields: Partial<Outcome>) => {
          // It reached hookguard if an answer came, or if the TLS handshake with it had completed.
          const reached = fields.status !== undefined || servedWith !== undefined;
          resolve({
            phase,
            request,
            startedAt: started,
            ms: performance.now() - started,
            reached,
            newConnection,
            ...(servedWith ? { certificate: servedWith } : {}),
            ...fields,
          });
        };
        const req = https.request(
          {
            host: '127.0.0.1',
            port: serve.port,
            path: `/${request.endpoint}`,
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', ...(closeAfter ? { connection: 'close' } : {}) },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () =>
              settle({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
            );
            response.on('error', (error) => settle({ error: error.message }));
          },
        );
        // The handshake is done on a reused connection, and about to be on a new one: either way it tells the
        // certificate, and that the request goes to a connection hookguard accepted.
        req.on('socket', (assigned) => {
          const socket = assigned as TLSSocket;
          const known = certificateOf.get(socket);
          if (known) servedWith = known;
          else {
            newConnection = true;
            socket.once('secureConnect', () => {
              servedWith = socket.getPeerX509Certificate()?.fingerprint256;
              if (servedWith) certificateOf.set(socket, servedWith);
            });
          }
        });
        req.on('error', (error: NodeJS.ErrnoException) => settle({ error: error.code ?? error.message }));
        req.end(request.body);
      });

    // Each client sends one request after another until the server refuses its connection after SIGTERM.
    const clients = Array.from({ length: CLIENTS }, async () => {
      for (let sent = 1; ; sent++) {
        const outcome = await send(
          requests[next++ % requests.length] as BenchRequest,
          sent % REQUESTS_PER_CONNECTION === 0,
        );
        outcomes.push(outcome);
        if (outcome.phase === 'after SIGTERM' && !outcome.reached) return;
        if (outcome.phase !== 'after SIGTERM' && outcome.error) return; // a failure before shutdown: reported below
      }
    });
    const answeredIn = (name: Phase) =>
      outcomes.filter((outcome) => outcome.phase === name && outcome.status !== undefined).length;
    /** Answers on connections opened after `at`. */
    const newConnectionsSince = (at: number) =>
      outcomes.filter((outcome) => outcome.startedAt > at && outcome.newConnection && outcome.certificate);
    const failedBeforeShutdown = () =>
      outcomes.some((outcome) => outcome.error !== undefined && outcome.phase !== 'after SIGTERM');
    const endPhaseWhen = async (enough: () => boolean) => {
      await new Promise((resolve) => setTimeout(resolve, PHASE_MS));
      // A client that failed has stopped: the checks below report it rather than wait for answers.
      await eventually(() => enough() || failedBeforeShutdown(), `enough answers in phase "${phase}"`, 20_000);
    };

    await endPhaseWhen(
      () =>
        answeredIn('steady') > MIN_ANSWERS_PER_PHASE &&
        new Set(
          outcomes
            .filter((outcome) => outcome.phase === 'steady' && outcome.body)
            .map((outcome) => outcome.request.uid),
        ).size === requests.length,
    );
    phase = 'after certificate rotation';
    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    await serve.waitForLog((line) => line.msg === 'serving certificate reloaded');
    const reloadedAt = performance.now();
    await endPhaseWhen(
      () =>
        answeredIn('after certificate rotation') > MIN_ANSWERS_PER_PHASE &&
        newConnectionsSince(reloadedAt).length > MIN_CONNECTIONS_AFTER_ROTATION,
    );
    phase = 'API server down';
    await proxy.stop();
    await serve.waitForLog(
      (line) => line.msg === 'lost the watch on the API server; using the last known Argo CD versions',
    );
    await endPhaseWhen(() => answeredIn('API server down') > MIN_ANSWERS_PER_PHASE);
    phase = 'after SIGTERM';
    const signalled = performance.now();
    serve.child.kill('SIGTERM');
    const exitCode = await serve.exitWithin(15_000);
    const exitMs = Math.round(performance.now() - signalled);
    await Promise.all(clients);
    agent.destroy();

    // The answer each request got in the steady phase, to compare every later answer with.
    const steadyAnswers = new Map<string, string>();
    for (const outcome of outcomes)
      if (outcome.phase === 'steady' && outcome.body) steadyAnswers.set(outcome.request.uid, outcome.body);
    const phases: Phase[] = ['steady', 'after certificate rotation', 'API server down', 'after SIGTERM'];
    const figures = phases.map((name) => {
      const mine = outcomes.filter((outcome) => outcome.phase === name);
      const answered = mine.filter((outcome) => outcome.status !== undefined);
      const latencies = answered.map((outcome) => outcome.ms).sort((a, b) => a - b);
      const at = (quantile: number) =>
        Math.round(latencies[Math.min(latencies.length - 1, Math.floor(quantile * latencies.length))] ?? NaN);
      return {
        phase: name,
        answered: answered.length,
        failedAfterReaching: mine.filter((outcome) => outcome.reached && outcome.status !== 200).length,
        refusedBeforeReaching: mine.filter((outcome) => !outcome.reached).length,
        newConnections: answered.filter((outcome) => outcome.newConnection).length,
        newConnectionsOnNewCertificate: answered.filter(
          (outcome) => outcome.newConnection && outcome.certificate === fingerprintOf(second.cert),
        ).length,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        maxMs: Math.round(latencies[latencies.length - 1] ?? NaN),
      };
    });
    console.log(
      `faults under load: ${JSON.stringify({ clients: CLIENTS, exitCode, sigtermToExitMs: exitMs, phases: figures })}`,
    );

    const failures = outcomes.filter((outcome) => outcome.reached && (outcome.status !== 200 || !outcome.body));
    expect(
      failures.map((outcome) => `${outcome.phase} ${outcome.request.source} ${outcome.status ?? outcome.error}`),
    ).toEqual([]);
    expect(
      outcomes
        .filter((outcome) => outcome.error && outcome.phase !== 'after SIGTERM')
        .map((outcome) => `${outcome.phase}: ${outcome.error}`),
    ).toEqual([]);
    for (const outcome of outcomes.filter((entry) => entry.reached))
      expect(servedCertificates.has(outcome.certificate ?? 'none')).toBe(true);
    // Nothing was refused before SIGTERM; after it, only connections the server never accepted.
    expect(outcomes.filter((outcome) => !outcome.reached && outcome.phase !== 'after SIGTERM')).toEqual([]);
    for (const outcome of outcomes.filter((entry) => !entry.reached))
      expect(['ECONNREFUSED', 'ECONNRESET']).toContain(outcome.error);
    // Same answer as in the steady phase: the rotation and the lost API server change no decision.
    for (const outcome of outcomes) {
      const steady = steadyAnswers.get(outcome.request.uid);
      if (outcome.body && steady) expect(outcome.body, `${outcome.phase} ${outcome.request.source}`).toBe(steady);
    }
    expect(steadyAnswers.size).toBe(requests.length);
    for (const figure of figures.slice(0, 3))
      expect(figure.answered, figure.phase).toBeGreaterThan(MIN_ANSWERS_PER_PHASE);
    // Connections made after the rotation were served the new certificate; during the drain, answers kept coming.
    const laterConnections = newConnectionsSince(reloadedAt);
    expect(laterConnections.length).toBeGreaterThan(MIN_CONNECTIONS_AFTER_ROTATION);
    expect(laterConnections.filter((outcome) => outcome.certificate !== fingerprintOf(second.cert))).toEqual([]);
    expect(figures[3]?.answered).toBeGreaterThan(0);
    expect(exitCode, serve.stderr).toBe(0);
    expect(serve.lines).toContainEqual(expect.objectContaining({ msg: 'shut down', result: 'drained' }));
    // The chart's rights were enough for every call it made.
    expect(serve.lines.filter((line) => /HTTP 403|\bforbidden\b/i.test(JSON.stringify(line)))).toEqual([]);
  }, 60_000);
});
