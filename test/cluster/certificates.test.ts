// certificates.mode self against the real API server (issue 36, in place of the stand-in's imitation of it): two
// replicas in this process, each with its own client as the chart's identity, reading the Secret
// (src/tls/secret-reader.ts), one of them leading and keeping it (src/controllers/certificates/keeper.ts), on a
// Secret and webhook configurations of the test's own (support/certs.ts). The API server itself calls the replica
// behind the Service (hookguard.NS.svc) for a dry-run create of a hook Job, trusting only the caBundle it reads
// through its own cache of the webhook configurations: a request "answered" is one that came back with hookguard's
// patch (the chart's failurePolicy Ignore lets one the API server could not send through unpatched). Rotations are
// made due by seeding the Secret with certificates issued in the past. What the keeper wrote and read, and when, is
// recorded at its API (a wrapper of src/tls/certificate-api.ts).
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type Server as TlsServer } from 'node:tls';
import { BatchV1Api, type V1Job } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { CertificateKeeper } from '../../src/controllers/certificates/keeper.js';
import { buildApp } from '../../src/http/app.js';
import { Metrics } from '../../src/http/metrics.js';
import {
  issueCa,
  issueServingCertificate,
  pemBundle,
  SECRET_KEYS,
  serviceDnsNames,
  signedBy,
  spkiHash,
  type CertificateData,
} from '../../src/tls/authority.js';
import { kubeCertificateApi, type CertificateApi, type WebhookKind } from '../../src/tls/certificate-api.js';
import type { KeyPair } from '../../src/tls/certificates.js';
import { bundleCertificates } from '../../src/tls/pem.js';
import { SecretCertificateReader } from '../../src/tls/secret-reader.js';
import type { CertificateObserver } from '../../src/tls/switcher.js';
import { renderTrustRecord, TRUST_ANNOTATION } from '../../src/tls/trust.js';
import { capturedLogger, eventually, type LogLine } from '../support/log-sink.js';
import { freePort, ServeProcess } from '../support/serve-process.js';
import {
  annotate,
  annotationsOf,
  caBundles,
  deleteSecret,
  ownInstall,
  patchSecret,
  secretData,
  setCaBundles,
  storedSecret,
  WEBHOOK_KINDS,
  type OwnInstall,
} from './support/certs.js';
import { adminApi, describeCluster, kubectl } from './support/cluster.js';
import { FaultProxy } from './support/fault-proxy.js';

type Json = Record<string, any>;
const HOUR_MS = 3600 * 1000;
const REFRESH_MS = 300;
/** Between two requests of a steady load. */
const LOAD_PAUSE_MS = 50;
const KINDS = WEBHOOK_KINDS;

/** A hook Job hookguard mutates (a cleanup hook with kubectl delete): what comes back shows whether it was called. */
const CLEANUP_HOOK = (ns: string): V1Job => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'probe', namespace: ns, annotations: { 'helm.sh/hook': 'post-delete' } },
  spec: {
    template: {
      spec: {
        restartPolicy: 'Never',
        containers: [
          { name: 'cleanup', image: 'bitnami/kubectl:1.32.3', command: ['kubectl', 'delete', 'configmap', 'foo'] },
        ],
      },
    },
  },
});
const MUTATED = 'kubectl delete configmap foo --ignore-not-found';

const fingerprints = (bundle: string | undefined) => bundleCertificates(bundle).map((ca) => ca.fingerprint256);
const fingerprintOf = (pem: string | undefined) => fingerprints(pem)[0];

interface Call {
  call: keyof Omit<CertificateApi, 'describe'>;
  kind?: WebhookKind;
  /** What a write carried: the Secret's data, or the caBundle. */
  data?: CertificateData;
  caBundle?: string;
  /** The record of the CAs hookguard made, as a configuration write carried it. */
  trustRecord?: string;
  /** What a read of a configuration returned: each webhook's caBundle. */
  caBundlesRead?: (string | undefined)[];
  started: number;
  ended: number;
  ok: boolean;
}

/** The API, each call recorded in `calls` as it ends. */
function recorded(api: CertificateApi, calls: Call[]): CertificateApi {
  const record = async <T>(
    entry: Omit<Call, 'started' | 'ended' | 'ok'>,
    call: () => Promise<T>,
    read?: (result: T) => Partial<Call>,
  ): Promise<T> => {
    const started = Date.now();
    try {
      const result = await call();
      calls.push({ ...entry, ...read?.(result), started, ended: Date.now(), ok: true });
      return result;
    } catch (error) {
      calls.push({ ...entry, started, ended: Date.now(), ok: false });
      throw error;
    }
  };
  return {
    describe: () => api.describe(),
    getSecret: (signal) => record({ call: 'getSecret' }, () => api.getSecret(signal)),
    writeSecret: (data, version, signal) =>
      record({ call: 'writeSecret', data }, () => api.writeSecret(data, version, signal)),
    getWebhooks: (kind, signal) =>
      record(
        { call: 'getWebhooks', kind },
        () => api.getWebhooks(kind, signal),
        (read) => ({ caBundlesRead: read?.caBundles }),
      ),
    setCaBundles: (kind, current, caBundle, trustRecord, signal) =>
      record({ call: 'setCaBundles', kind, caBundle, trustRecord }, () =>
        api.setCaBundles(kind, current, caBundle, trustRecord, signal),
      ),
    setTrustRecord: (kind, current, trustRecord, signal) =>
      record({ call: 'setTrustRecord', kind, trustRecord }, () =>
        api.setTrustRecord(kind, current, trustRecord, signal),
      ),
  };
}

/** A leader's API that stops working after the Secret write, before the caBundle write, once `stopped()` says so. */
const stopsBeforeCaBundles =
  (stopped: () => boolean) =>
  (api: CertificateApi): CertificateApi => ({
    ...api,
    setCaBundles: (...args) =>
      stopped() ? Promise.reject(new Error('the leader stopped here')) : api.setCaBundles(...args),
  });

interface Replica {
  reader: SecretCertificateReader;
  keeper: CertificateKeeper;
  app: FastifyInstance;
  port: number;
  lines: LogLine[];
  lead(): void;
  stepAside(): void;
}

const certificateLines = (lines: LogLine[]) =>
  lines.filter((line) => String(line.msg).startsWith('certificates:')).map((line) => line.reason ?? line.msg);

/** An installation of its own, its replicas, and what its keepers did. */
class World {
  readonly replicas: Replica[] = [];
  readonly calls: Call[] = [];
  private servicePort = 0;
  install!: OwnInstall;

  get ns() {
    return this.install.ns;
  }
  get settings() {
    return {
      serviceName: 'hookguard',
      namespace: this.install.ns,
      caValidityDays: 1825,
      certValidityDays: 365,
      refreshIntervalMs: REFRESH_MS,
      requestTimeoutMs: 5000,
    };
  }

  /** Closed when its test ends, so that its replicas stop polling the API server under the tests after it. */
  static async create(worlds: World[], onTestFinished: (fn: () => Promise<void>) => void): Promise<World> {
    const world = new World();
    onTestFinished(() => world.close());
    world.servicePort = await freePort();
    world.install = await ownInstall('certs', { port: world.servicePort });
    worlds.push(world);
    return world;
  }

  /**
   * The Secret as an earlier hookguard left it (the serving pair `serving`, the CA `ca` and its key, ca.crt `cas`), and
   * every caBundle `cas`.
   */
  async seed(ca: KeyPair, serving: KeyPair, cas = ca.cert): Promise<void> {
    const data: CertificateData = { 'tls.crt': serving.cert, 'tls.key': serving.key, 'ca.crt': cas, 'ca.key': ca.key };
    const encoded = Object.fromEntries(
      Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    );
    await kubectl(
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'hookguard-tls', namespace: this.ns },
        type: 'kubernetes.io/tls',
        data: encoded,
      }),
    );
    await setCaBundles(this.install.name, KINDS, cas);
  }

  /**
   * Seeded with a CA that has less than a third of its validity left and a serving certificate it signed that is
   * still good; the caBundles hold that CA (no record: as a version before the record left them).
   */
  async seedAgingCa(): Promise<{ oldCa: KeyPair; oldServing: KeyPair }> {
    const now = Date.now();
    const oldCa = await issueCa({ ...this.settings, caValidityDays: 2 }, now - 40 * HOUR_MS);
    const oldServing = await issueServingCertificate(this.settings, oldCa, now);
    await this.seed(oldCa, oldServing);
    return { oldCa, oldServing };
  }

  secret = () => secretData(this.ns);
  caBundles = () => caBundles(this.install.name);
  trustRecords = () => annotationsOf(this.install.name, TRUST_ANNOTATION);

  /**
   * A replica: its certificates from the Secret, served by the real app over TLS on 127.0.0.1 (on the port the
   * Service names when `service`); `apiAs` may change what its API calls do.
   */
  async replica(
    leads: boolean,
    options: {
      service?: boolean;
      observer?: Partial<CertificateObserver>;
      apiAs?: (api: CertificateApi) => CertificateApi;
    } = {},
  ): Promise<Replica> {
    const { logger, lines } = capturedLogger('info');
    const names = { namespace: this.ns, secretName: 'hookguard-tls', webhookName: this.install.name };
    const api = (options.apiAs ?? ((same) => same))(
      recorded(kubeCertificateApi(this.install.kubeConfig, names), this.calls),
    );
    const reader = new SecretCertificateReader(api, this.settings, logger);
    const keeper = new CertificateKeeper(api, this.settings, logger);
    let leading: AbortController | undefined;
    const lead = () => {
      leading = new AbortController();
      keeper.leadership.started(leading.signal);
    };
    const stepAside = () => {
      leading?.abort();
      keeper.leadership.stopped();
    };
    if (leads) lead();
    reader.start();
    const pair = await reader.firstPair();
    const app = buildApp(loadConfig(), { logger: pino({ level: 'silent' }), tls: pair });
    const port = options.service ? this.servicePort : await freePort();
    await app.listen({ host: '127.0.0.1', port });
    reader.serveWith(app.server as unknown as TlsServer, {
      reloaded: (next) => options.observer?.reloaded?.(next),
      rejected: (error, reason) => options.observer?.rejected?.(error, reason),
    });
    const started = { reader, keeper, app, port, lines, lead, stepAside };
    this.replicas.push(started);
    return started;
  }

  /** The certificate a replica presents now, verified for the Service's name against `ca` (the caBundle by default). */
  async presented(port: number, ca?: string): Promise<X509Certificate> {
    const trusted = ca ?? (await this.caBundles())[0] ?? '';
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, servername: `hookguard.${this.ns}.svc`, ca: trusted });
      socket.once('secureConnect', () => {
        resolve(new X509Certificate(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0)));
        socket.destroy();
      });
      socket.once('error', reject);
    });
  }

  /** A dry-run create of a hook Job through the API server: 'patched' when it called the replica behind the Service. */
  async admit(): Promise<string> {
    const job = await adminApi(BatchV1Api).createNamespacedJob({
      namespace: this.ns,
      body: CLEANUP_HOOK(this.ns),
      dryRun: 'All',
    });
    const command = job.spec?.template.spec?.containers[0]?.command?.join(' ');
    return command === MUTATED ? 'patched' : `not called: ${command}`;
  }

  /** Dry-run creates without pause until stopped: how many came back patched, and every other outcome. */
  underLoad() {
    const state = { answered: 0, failures: [] as string[], running: true };
    const done = (async () => {
      while (state.running) {
        const outcome = await this.admit().catch((error: Error) => error.message);
        if (outcome === 'patched') state.answered++;
        else state.failures.push(outcome);
        // Steady, not flat out: the machine is shared with the other tests running beside.
        await new Promise((resolve) => setTimeout(resolve, LOAD_PAUSE_MS));
      }
    })();
    return {
      state,
      stop: async () => {
        state.running = false;
        await done;
      },
    };
  }

  /** Until the API server calls the replica behind the Service with the caBundle it holds now. */
  async trusted(): Promise<void> {
    await eventually(async () => (await this.admit()) === 'patched', 'the API server calling hookguard', 20_000);
  }

  /** The keeper's successful writes, in order. */
  writes(call: 'writeSecret' | 'setCaBundles') {
    return this.calls.filter((entry) => entry.call === call && entry.ok).sort((a, b) => a.ended - b.ended);
  }

  /**
   * When the keeper had read back both configurations with `ca` in every caBundle (a round after the one that wrote
   * it: it judges a pair by what it read, not by what it wrote, so a write whose answer timed out also counts once
   * read), and when the Secret write of a serving certificate `served` accepts began.
   */
  signingOrder(ca: string | undefined, served: (data: CertificateData) => boolean) {
    const trustedAt = KINDS.map((kind) =>
      this.calls
        .filter(
          (entry) =>
            entry.call === 'getWebhooks' &&
            entry.ok &&
            entry.kind === kind &&
            entry.caBundlesRead?.length &&
            entry.caBundlesRead.every((bundle) => fingerprints(bundle).includes(ca ?? 'none')),
        )
        .reduce((earliest, entry) => Math.min(earliest, entry.ended), Infinity),
    );
    const servedAt = this.writes('writeSecret').find((entry) => served(entry.data ?? {}))?.started ?? Infinity;
    return { trustedAt: Math.max(...trustedAt), servedAt };
  }

  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const replica of this.replicas.splice(0)) {
      replica.stepAside();
      await replica.keeper.stop();
      await replica.reader.stop();
      await replica.app.close();
    }
    await this.install.release();
  }
}

describeCluster('certificates hookguard manages itself, against the real API server', () => {
  const worlds: World[] = [];
  const cleanups: Array<() => Promise<void>> = [];
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-certificates-'));
  afterAll(async () => {
    for (const step of cleanups) await step();
    for (const world of worlds) await world.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe.concurrent('one installation each', () => {
    it('first start: the leader creates the CA and the serving certificate, writes every caBundle and the record; both replicas serve it', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const leader = await w.replica(true);
      const follower = await w.replica(false, { service: true });
      const data = await w.secret();
      expect(Object.keys(data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
      const stored = await storedSecret(w.ns);
      expect(stored.type).toBe('kubernetes.io/tls');
      expect(stored.metadata.labels).toEqual({
        'app.kubernetes.io/component': 'certificates',
        'app.kubernetes.io/name': 'hookguard',
      });
      // Written by hookguard, as the API server records it.
      expect((stored.metadata.managedFields as Json[]).map((entry) => [entry.manager, entry.operation])).toEqual([
        ['hookguard', 'Update'],
      ]);
      const ca = new X509Certificate(data[SECRET_KEYS.caBundle] ?? '');
      const cert = new X509Certificate(data[SECRET_KEYS.cert] ?? '');
      expect(ca.ca).toBe(true);
      expect(cert.ca).toBe(false);
      expect(cert.subjectAltName).toBe(
        serviceDnsNames(w.settings)
          .map((name) => `DNS:${name}`)
          .join(', '),
      );
      expect(cert.verify(ca.publicKey)).toBe(true);
      // About 5 years and 1 year, from an hour ago.
      const days = (certificate: X509Certificate) =>
        Math.round((Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)) / (24 * HOUR_MS));
      expect([days(ca), days(cert)]).toEqual([1825, 365]);
      await eventually(
        async () => (await w.caBundles()).every((bundle) => bundle === data[SECRET_KEYS.caBundle]),
        'every caBundle',
        10_000,
      );
      expect(await w.caBundles()).toHaveLength(2);
      // The record of the CA hookguard made, on both configurations.
      expect(await w.trustRecords()).toEqual(KINDS.map(() => JSON.stringify({ cas: [spkiHash(ca)], retiring: [] })));
      for (const { port } of [leader, follower])
        expect((await w.presented(port)).fingerprint256).toBe(cert.fingerprint256);
      await w.trusted();
      // Created once (a write whose answer a busy API server did not send in time is tried again the next round);
      // nothing to write in the rounds after.
      const settled = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 3 * REFRESH_MS));
      expect(w.writes('writeSecret')).toHaveLength(1);
      expect(w.calls.filter((entry) => entry.call === 'writeSecret' && entry.started > settled)).toEqual([]);
    });

    it('rotates the CA under load in two steps: the re-sign comes a round after the caBundle write, and every request the API server sends is answered (finding 13)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const { oldCa } = await w.seedAgingCa();
      const follower = await w.replica(false, { service: true });
      await w.trusted();
      const load = w.underLoad();
      let leader: Replica;
      try {
        await eventually(() => load.state.answered >= 10, 'requests answered before the rotation', 20_000);
        leader = await w.replica(true);
        // The leader's new serving certificate, signed by the new CA, reaches the follower.
        await eventually(
          async () => {
            const serving = await w.presented(follower.port);
            return serving.checkIssued(new X509Certificate(oldCa.cert)) ? false : serving;
          },
          'the follower serving a certificate of the new CA',
          20_000,
        );
        const servedBefore = load.state.answered;
        await eventually(
          () => load.state.answered >= servedBefore + 10,
          'requests answered after the rotation',
          20_000,
        );
      } finally {
        await load.stop();
      }
      expect(load.state.failures).toEqual([]);
      expect((await w.presented(leader.port)).fingerprint256).toBe((await w.presented(follower.port)).fingerprint256);
      const data = await w.secret();
      const bundle = data[SECRET_KEYS.caBundle] ?? '';
      const newCa = fingerprintOf(bundle);
      // The new CA first, the old one kept after it until it expires; both in every caBundle.
      expect(fingerprints(bundle)).toEqual([newCa, fingerprintOf(oldCa.cert)]);
      expect(await w.caBundles()).toEqual([bundle, bundle]);
      // The order, from what the keeper read: the new CA in both configurations, read back, then the pair it signed.
      const [newCaCertificate] = bundleCertificates(bundle) as [X509Certificate];
      const order = w.signingOrder(newCa, (written) =>
        bundleCertificates(written['tls.crt']).some((cert) => signedBy(cert, newCaCertificate)),
      );
      expect(order.servedAt).toBeGreaterThan(order.trustedAt);
      expect(order.servedAt).toBeLessThan(Infinity);
      // A call the busy API server did not answer within the round is tried again the next round: no decision.
      const retried = (line: LogLine) => line.msg === 'certificates: API call failed; trying again next round';
      expect(certificateLines(leader.lines.filter((line) => !retried(line)))).toEqual([
        'certificates: no record of the CAs hookguard made yet: taking those whose key the Secret holds or that signed its serving certificate',
        'the CA has less than a third of its validity left: created a new one',
        'certificates: caBundle written',
        'certificates: caBundle written',
        'serving certificate re-signed by the new CA',
      ]);
      // A planned rotation says nothing at warn.
      expect(leader.lines.filter((line) => line.level >= 40 && !retried(line))).toEqual([]);
    });

    it('re-signs a serving certificate with less than a third of its validity left, under the same CA', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const now = Date.now();
      const ca = await issueCa(w.settings, now);
      const due = await issueServingCertificate({ ...w.settings, certValidityDays: 1 }, ca, now - 20 * HOUR_MS);
      await w.seed(ca, due);
      const leader = await w.replica(true);
      await eventually(async () => (await w.secret())[SECRET_KEYS.cert] !== due.cert, 'a new serving certificate');
      const data = await w.secret();
      expect([data[SECRET_KEYS.caBundle], data[SECRET_KEYS.caKey]]).toEqual([ca.cert, ca.key]);
      await eventually(
        async () =>
          (await w.presented(leader.port)).fingerprint256 === new X509Certificate(data['tls.crt'] ?? '').fingerprint256,
        'the leader serving it',
      );
      expect(leader.lines).toContainEqual(
        expect.objectContaining({
          level: 30,
          msg: 'certificates: Secret written',
          reason: 'the serving certificate has less than a third of its validity left: re-signed',
        }),
      );
    });

    it.for([
      [
        'garbage PEM in tls.crt',
        (data: CertificateData) => ({
          ...data,
          'tls.crt': '-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n',
        }),
        'tls.crt is not a certificate',
      ],
      [
        "a key that is not the certificate's",
        async (data: CertificateData, w: World) => ({
          ...data,
          'tls.key': (await issueCa(w.settings, Date.now())).key,
        }),
        'tls.key is not the key of tls.crt',
      ],
    ] as const)(
      'a broken Secret (%s): replicas keep serving the previous certificate, the leader replaces it and says why',
      async ([, breakIt, problem], { onTestFinished }) => {
        const w = await World.create(worlds, onTestFinished);
        const leader = await w.replica(true);
        const follower = await w.replica(false, { service: true });
        const good = await w.secret();
        await w.trusted();
        // The leader steps aside while the Secret is broken, so the follower is seen reading it.
        leader.stepAside();
        await patchSecret(w.ns, await breakIt(good, w));
        await eventually(
          () =>
            follower.lines.find((line) => line.msg === 'certificate reload failed: keeping the previous certificate'),
          'the follower refusing the broken pair',
          10_000,
        );
        expect(await w.admit()).toBe('patched');
        expect((await w.presented(follower.port)).fingerprint256).toBe(fingerprintOf(good['tls.crt']));
        // The leader again: the serving pair is re-signed by the same CA, and the follower switches to it.
        leader.lead();
        await eventually(
          () => leader.lines.find((line) => line.msg === 'certificates: replaced what the Secret held'),
          'the leader replacing it',
          10_000,
        );
        expect(leader.lines.find((line) => line.msg === 'certificates: replaced what the Secret held')).toMatchObject({
          level: 40,
          problem,
          reason: 'serving certificate re-signed',
        });
        const repaired = await w.secret();
        expect(repaired[SECRET_KEYS.caBundle]).toBe(good[SECRET_KEYS.caBundle]);
        await eventually(
          async () => (await w.presented(follower.port)).fingerprint256 === fingerprintOf(repaired['tls.crt']),
          'the follower serving the repaired pair',
          10_000,
        );
        expect(await w.admit()).toBe('patched');
      },
    );

    it('a garbage CA in the Secret: the leader makes a new CA, keeps trusting the old one, and serves nothing it signed before the caBundles trust it (finding 11)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const leader = await w.replica(true);
      const follower = await w.replica(false, { service: true });
      const good = await w.secret();
      await w.trusted();
      leader.stepAside();
      await patchSecret(w.ns, { 'ca.crt': 'not a certificate\n' });
      const load = w.underLoad();
      try {
        leader.lead();
        await eventually(
          async () => (await w.presented(follower.port)).fingerprint256 !== fingerprintOf(good['tls.crt']),
          'the follower serving the new certificate',
          20_000,
        );
        const servedBefore = load.state.answered;
        await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after the repair', 20_000);
      } finally {
        await load.stop();
      }
      expect(load.state.failures).toEqual([]);
      expect(leader.lines.find((line) => line.msg === 'certificates: replaced what the Secret held')).toMatchObject({
        level: 40,
        problem: 'ca.crt holds no certificate',
        reason: 'the CA was not usable: created a new one',
      });
      // The new CA, then the old one, which only the caBundle still had.
      const bundle = (await w.secret())[SECRET_KEYS.caBundle] ?? '';
      const newCa = fingerprintOf(bundle);
      expect(fingerprints(bundle)).toEqual([newCa, fingerprintOf(good[SECRET_KEYS.caBundle])]);
      expect(await w.caBundles()).toEqual([bundle, bundle]);
      // Nothing the new CA signed was written before both configurations trusted it, nor in the same round.
      const order = w.signingOrder(
        newCa,
        (written) =>
          written['tls.crt'] !== undefined && fingerprintOf(written['tls.crt']) !== fingerprintOf(good['tls.crt']),
      );
      expect(order.servedAt).toBeGreaterThan(order.trustedAt);
      expect(order.servedAt).toBeLessThan(Infinity);
    });

    it('a CA appended to ca.crt or a caBundle is never trusted: removed, warned about and counted; a deleted Secret starts a new chain and the old CA goes once its pair is served (finding 3)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const leader = await w.replica(true);
      const follower = await w.replica(false, { service: true });
      const good = await w.secret();
      const oldCa = good[SECRET_KEYS.caBundle] ?? '';
      await w.trusted();
      const attacker = await issueCa({ ...w.settings, caValidityDays: 36_500 }, Date.now());
      const attackerFingerprint = fingerprintOf(attacker.cert) ?? 'none';
      const everTrusted = () =>
        w.writes('setCaBundles').some((entry) => fingerprints(entry.caBundle).includes(attackerFingerprint));
      const removals = () =>
        leader.lines.filter((line) => line.msg === 'certificates: removed a CA hookguard did not make');

      // Appended to the Secret's ca.crt: dropped from it, never written into a caBundle.
      await patchSecret(w.ns, { 'ca.crt': pemBundle([oldCa, attacker.cert]) });
      await eventually(
        async () => (await w.secret())[SECRET_KEYS.caBundle] === oldCa,
        'the CA dropped from ca.crt',
        10_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 3 * REFRESH_MS));
      expect(everTrusted()).toBe(false);
      expect(removals()).toEqual([
        expect.objectContaining({
          level: 40,
          where: `${w.ns}/hookguard-tls ca.crt`,
          subject: new X509Certificate(attacker.cert).subject,
          fingerprint256: attackerFingerprint,
        }),
      ]);

      // Put into one configuration's caBundle: removed within a round.
      await setCaBundles(w.install.name, ['ValidatingWebhookConfiguration'], pemBundle([oldCa, attacker.cert]));
      await eventually(
        async () => (await w.caBundles()).every((bundle) => bundle === oldCa),
        'the caBundles back to hookguard CA',
        10_000,
      );
      expect(removals().map((line) => line.where)).toEqual([`${w.ns}/hookguard-tls ca.crt`, 'caBundle']);
      const metrics = new Metrics({ untrustedCasRemoved: () => leader.keeper.untrustedCasRemoved() });
      expect(
        (await metrics.registry.metrics()).split('\n').filter((line) => line.startsWith('hookguard_cert')),
      ).toEqual([
        'hookguard_certificates_untrusted_cas_removed_total{where="secret"} 1',
        'hookguard_certificates_untrusted_cas_removed_total{where="caBundle"} 1',
      ]);

      // The Secret deleted (what one does after ca.key leaked), under load: a new CA, trusted beside the old one until
      // the new pair has been served everywhere, then alone; the attacker's CA in neither.
      const load = w.underLoad();
      let newCa: string | undefined;
      try {
        await deleteSecret(w.ns);
        await eventually(
          async () => fingerprints((await w.secret())[SECRET_KEYS.caBundle]).length === 2,
          'a new CA',
          10_000,
        );
        const bundle = (await w.secret())[SECRET_KEYS.caBundle];
        newCa = fingerprintOf(bundle);
        expect(fingerprints(bundle)).toEqual([newCa, fingerprintOf(oldCa)]);
        const [newCaCertificate] = bundleCertificates(bundle) as [X509Certificate];
        await eventually(
          async () =>
            signedBy(
              await w.presented(follower.port, pemBundle([oldCa, newCaCertificate.toString()])),
              newCaCertificate,
            ),
          'the follower serving a pair of the new CA',
          20_000,
        );
        await eventually(
          async () => (await w.caBundles()).every((each) => fingerprints(each).join() === newCa),
          'the old CA gone from every caBundle',
          20_000,
        );
        const servedBefore = load.state.answered;
        await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 20_000);
      } finally {
        await load.stop();
      }
      expect(load.state.failures).toEqual([]);
      expect(fingerprints((await w.secret())[SECRET_KEYS.caBundle])).toEqual([newCa]);
      expect(everTrusted()).toBe(false);
      expect(certificateLines(leader.lines)).toContain(
        'the Secret was deleted: created a new CA; the old CAs are trusted until its serving certificate is served everywhere',
      );
    });

    it('an upgrade from a version that kept no record, with a foreign CA already in ca.crt and the caBundles: only the CA whose key the Secret holds is taken', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const now = Date.now();
      const ca = await issueCa(w.settings, now);
      const serving = await issueServingCertificate(w.settings, ca, now);
      const foreign = await issueCa({ ...w.settings, caValidityDays: 36_500 }, now);
      const bundle = pemBundle([ca.cert, foreign.cert]);
      await w.seed(ca, serving, bundle);
      const leader = await w.replica(true);
      await eventually(
        async () => (await w.caBundles()).every((written) => written === ca.cert),
        'the caBundles holding its CA only',
        10_000,
      );
      expect(await w.secret()).toEqual({
        'tls.crt': serving.cert,
        'tls.key': serving.key,
        'ca.crt': ca.cert,
        'ca.key': ca.key,
      });
      expect(leader.keeper.untrustedCasRemoved()).toEqual({ secret: 1, caBundle: 1 });
      expect(leader.lines.filter((line) => line.level >= 40).map((line) => line.where)).toEqual([
        `${w.ns}/hookguard-tls ca.crt`,
        'caBundle',
      ]);
      expect((await w.presented(leader.port)).fingerprint256).toBe(fingerprintOf(serving.cert));
    });

    it('512 KiB of BEGIN lines in ca.crt: the keeper reads at most 64 KiB of it, drops the junk, keeps the CA (finding 4)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const leader = await w.replica(true);
      const good = await w.secret();
      const junk = '-----BEGIN CERTIFICATE-----\n'.repeat((512 * 1024) / 28);
      await patchSecret(w.ns, { 'ca.crt': `${good[SECRET_KEYS.caBundle]}${junk}` });
      await eventually(
        async () => (await w.secret())[SECRET_KEYS.caBundle] === good[SECRET_KEYS.caBundle],
        'the junk dropped from ca.crt',
        10_000,
      );
      // The leader logs the write once the API server has answered it: its line may reach the log a moment later.
      await eventually(
        () =>
          leader.lines.some(
            (line) => line.msg === 'certificates: Secret written' && /from ca\.crt$/.test(String(line.reason)),
          ),
        "the keeper's log line",
      );
      expect(leader.lines).toContainEqual(
        expect.objectContaining({
          msg: 'certificates: Secret written',
          reason: 'dropped expired, unreadable, retired or unknown certificates from ca.crt',
        }),
      );
      expect(await w.caBundles()).toEqual([good[SECRET_KEYS.caBundle], good[SECRET_KEYS.caBundle]]);
      expect((await w.presented(leader.port)).fingerprint256).toBe(fingerprintOf(good[SECRET_KEYS.cert]));
    });

    it('a reload whose observer throws does not stop the replica reading the Secret (finding 12)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      let throws = 1;
      const leader = await w.replica(true);
      const follower = await w.replica(false, {
        service: true,
        observer: {
          reloaded: () => {
            if (throws-- > 0) throw new Error('the metrics could not take it');
          },
        },
      });
      const good = await w.secret();
      await w.trusted();
      leader.stepAside();
      const ca = { cert: good[SECRET_KEYS.caBundle] ?? '', key: good[SECRET_KEYS.caKey] ?? '' };
      for (const which of ['second', 'third']) {
        const pair = await issueServingCertificate(w.settings, ca, Date.now());
        await patchSecret(w.ns, { 'tls.crt': pair.cert, 'tls.key': pair.key });
        await eventually(
          async () => (await w.presented(follower.port)).fingerprint256 === fingerprintOf(pair.cert),
          `the follower serving the ${which} pair`,
          10_000,
        );
        expect(await w.admit()).toBe('patched');
      }
      expect(throws).toBe(-1);
    });

    it.for([
      ['an empty list', async () => JSON.stringify({ cas: [] })],
      [
        'a list of CAs of another installation',
        async (w: World) => {
          const other = await issueCa(w.settings, Date.now());
          return renderTrustRecord(bundleCertificates(other.cert), new Set());
        },
      ],
    ] as const)(
      'a trust record naming none of the CAs in use (%s) never drops the CA the replicas serve with: no request fails (issue 37 item 1)',
      async ([, record], { onTestFinished }) => {
        const w = await World.create(worlds, onTestFinished);
        const leader = await w.replica(true);
        await w.replica(false, { service: true });
        const good = await w.secret();
        const ca = good[SECRET_KEYS.caBundle] ?? '';
        await eventually(async () => (await w.caBundles()).every((bundle) => bundle === ca), 'every caBundle', 10_000);
        await w.trusted();
        const load = w.underLoad();
        try {
          // Overwritten between two rounds, so that the keeper reads it on both configurations at once.
          const overwrite = await record(w);
          leader.stepAside();
          await new Promise((resolve) => setTimeout(resolve, 2 * REFRESH_MS));
          await annotate(w.install.name, TRUST_ANNOTATION, overwrite);
          leader.lead();
          // Rounds enough for a new CA, its caBundle write and the re-sign, had the CA been called foreign.
          const servedBefore = load.state.answered;
          await new Promise((resolve) => setTimeout(resolve, 5 * REFRESH_MS));
          await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 20_000);
        } finally {
          await load.stop();
        }
        expect(load.state.failures).toEqual([]);
        expect(await w.trustRecords()).toEqual(KINDS.map(() => renderTrustRecord(bundleCertificates(ca), new Set())));
        expect(await w.secret()).toEqual(good);
        expect(await w.caBundles()).toEqual([ca, ca]);
        expect(leader.keeper.untrustedCasRemoved()).toEqual({ secret: 0, caBundle: 0 });
        // Stepping aside may cut a round's API call short; nothing else is said at warn.
        const warned = leader.lines
          .filter((line) => line.level >= 40 && line.msg !== 'certificates: API call failed; trying again next round')
          .map((line) => line.msg);
        expect(warned).toEqual(['certificates: the record names none of the CAs in the caBundles: taken as missing']);
      },
    );

    it('a pair in the Secret that no caBundle CA signed is never served: refused, said in the log and counted by reason (issue 37 item 2)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const leader = await w.replica(true);
      const metrics = new Metrics();
      const follower = await w.replica(false, {
        service: true,
        observer: { rejected: (_error, reason) => metrics.certificateRefused(reason) },
      });
      const good = await w.secret();
      await w.trusted();
      // The leader steps aside, or it would re-sign the pair at once: the replicas alone must refuse it.
      leader.stepAside();
      const other = await issueCa(w.settings, Date.now());
      const untrusted = await issueServingCertificate(w.settings, other, Date.now());
      await patchSecret(w.ns, { 'tls.crt': untrusted.cert, 'tls.key': untrusted.key });
      const refusal = await eventually(
        () => follower.lines.find((line) => line.msg === 'certificate reload failed: keeping the previous certificate'),
        'the follower refusing the pair',
        10_000,
      );
      expect(refusal).toMatchObject({
        level: 50,
        secret: `${w.ns}/hookguard-tls`,
        reason: 'untrusted',
        err: {
          message: `tls.crt is signed by no CA that every webhook's caBundle holds (issuer ${new X509Certificate(other.cert).subject})`,
        },
      });
      expect((await w.presented(follower.port)).fingerprint256).toBe(fingerprintOf(good['tls.crt']));
      expect(await w.admit()).toBe('patched');
      const counted = (await metrics.registry.metrics())
        .split('\n')
        .filter((line) => line.startsWith('hookguard_tls_pairs_refused_total{') || line.includes('"tls_reload"'));
      expect(counted).toEqual([
        'hookguard_errors_total{source="tls_reload"} 1',
        'hookguard_tls_pairs_refused_total{reason="unreadable"} 0',
        'hookguard_tls_pairs_refused_total{reason="unusable"} 0',
        'hookguard_tls_pairs_refused_total{reason="untrusted"} 1',
      ]);
      // The same CA in every caBundle makes the same pair served: the API server calls hookguard with it.
      const both = pemBundle([good[SECRET_KEYS.caBundle] ?? '', other.cert]);
      await setCaBundles(w.install.name, KINDS, both);
      await eventually(
        async () => (await w.presented(follower.port, both)).fingerprint256 === fingerprintOf(untrusted.cert),
        'the follower serving the pair once every caBundle holds its CA',
        10_000,
      );
      await w.trusted();
    });

    it("a leader that stops between the Secret write and the caBundle write during a CA rotation: the next leader takes its CA as hookguard's (issue 37 item 3)", async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const { oldCa, oldServing } = await w.seedAgingCa();
      await annotate(w.install.name, TRUST_ANNOTATION, renderTrustRecord(bundleCertificates(oldCa.cert), new Set()));
      const follower = await w.replica(false, { service: true });
      await w.trusted();
      const load = w.underLoad();
      let next: Replica;
      try {
        const stopping = await w.replica(true, { apiAs: stopsBeforeCaBundles(() => true) });
        const newCa = await eventually(
          async () => {
            const bundle = (await w.secret())[SECRET_KEYS.caBundle];
            return fingerprints(bundle).length === 2 && fingerprintOf(bundle);
          },
          'the new CA in the Secret',
          10_000,
        );
        stopping.stepAside();
        expect(await w.caBundles()).toEqual([oldCa.cert, oldCa.cert]);
        next = await w.replica(true);
        const expected = pemBundle([(await w.secret())[SECRET_KEYS.caBundle] ?? '']);
        await eventually(
          async () => (await w.caBundles()).every((bundle) => bundle === expected),
          'the caBundles holding both CAs',
          10_000,
        );
        expect(fingerprints(expected)).toEqual([newCa, fingerprintOf(oldCa.cert)]);
        await eventually(
          async () => (await w.presented(follower.port, expected)).fingerprint256 !== fingerprintOf(oldServing.cert),
          'the follower serving a pair of the new CA',
          20_000,
        );
        const servedBefore = load.state.answered;
        await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 20_000);
      } finally {
        await load.stop();
      }
      expect(load.state.failures).toEqual([]);
      expect(next.keeper.untrustedCasRemoved()).toEqual({ secret: 0, caBundle: 0 });
      expect(next.lines.filter((line) => line.level >= 40)).toEqual([]);
    });

    it('a leader that stops between the Secret write and the caBundle write after the Secret was deleted: the next leader keeps the old CA retiring, and it goes (issue 37 item 3)', async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      let stopped = false;
      const stopping = await w.replica(true, { apiAs: stopsBeforeCaBundles(() => stopped) });
      const follower = await w.replica(false, { service: true });
      const oldCa = (await w.secret())[SECRET_KEYS.caBundle] ?? '';
      await w.trusted();
      const load = w.underLoad();
      let next: Replica;
      try {
        stopped = true;
        await deleteSecret(w.ns);
        const newCa = await eventually(
          async () => {
            const bundle = (await w.secret())[SECRET_KEYS.caBundle];
            return fingerprints(bundle).length === 2 && fingerprintOf(bundle);
          },
          'the new CA in the Secret',
          10_000,
        );
        stopping.stepAside();
        next = await w.replica(true);
        await eventually(
          async () =>
            (await w.caBundles()).every((bundle) => fingerprints(bundle).join() === `${newCa},${fingerprintOf(oldCa)}`),
          'the caBundles holding both CAs',
          10_000,
        );
        // What the next leader wrote with both CAs: the old one marked retiring. (Read back later, the record may
        // already have dropped it: the follower can switch within the next round.)
        const retiring = new Set(bundleCertificates(oldCa).map(spkiHash));
        const bothWritten = w
          .writes('setCaBundles')
          .filter((entry) => fingerprints(entry.caBundle).join() === `${newCa},${fingerprintOf(oldCa)}`);
        expect(bothWritten.map((entry) => [entry.kind, entry.trustRecord])).toEqual(
          bothWritten.map((entry) => [entry.kind, renderTrustRecord(bundleCertificates(entry.caBundle), retiring)]),
        );
        expect(bothWritten.map((entry) => entry.kind)).toEqual([...KINDS]);
        await eventually(
          async () => (await w.caBundles()).every((bundle) => fingerprints(bundle).join() === newCa),
          'the old CA gone from every caBundle',
          20_000,
        );
        expect((await w.presented(follower.port)).checkIssued(bundleCertificates(bothWritten[0]?.caBundle)[0]!)).toBe(
          true,
        );
        const servedBefore = load.state.answered;
        await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 20_000);
      } finally {
        await load.stop();
      }
      expect(load.state.failures).toEqual([]);
      expect(next.keeper.untrustedCasRemoved()).toEqual({ secret: 0, caBundle: 0 });
    });
  });

  // By itself: two processes starting beside the other tests' load would take long to be ready.
  describe('hookguard serve', () => {
    it("hookguard serve, two processes (the built CLI): one takes the certificates' Lease and creates the Secret and the caBundles, both serve its certificate, and the API server calls either with it", async ({
      onTestFinished,
    }) => {
      const w = await World.create(worlds, onTestFinished);
      const proxy = await FaultProxy.start();
      cleanups.push(() => proxy.stop());
      const { config } = w.install.serveFiles(dir, {
        selfTest: { enabled: false },
        certificates: { mode: 'self', refreshIntervalMs: 200 },
        leaderElection: { leaseDurationSeconds: 2, renewDeadlineMs: 1500, retryPeriodMs: 200 },
      });
      // Through the proxy, which records what each call was.
      const kubeconfigFile = join(dir, `kubeconfig-proxy-${w.ns}`);
      writeFileSync(kubeconfigFile, proxy.kubeConfig(w.install.identity.token).exportConfig(), { mode: 0o600 });
      const replicas: ServeProcess[] = [];
      cleanups.push(async () => {
        for (const replica of replicas) replica.stop();
      });
      for (let index = 0; index < 2; index++)
        replicas.push(await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfigFile }));
      for (const replica of replicas)
        expect(replica.lines).toContainEqual(
          expect.objectContaining({
            msg: 'certificates managed by hookguard: waiting for the serving certificate in the Secret',
            secret: `${w.ns}/hookguard-tls`,
            lease: `${w.ns}/hookguard-certificates`,
          }),
        );
      const data = await w.secret();
      const cert = new X509Certificate(data['tls.crt'] ?? '');
      await eventually(
        async () => (await w.caBundles()).every((bundle) => bundle === data['ca.crt']),
        'both caBundles written',
        10_000,
      );
      for (const replica of replicas)
        expect((await w.presented(replica.port, data['ca.crt'])).fingerprint256).toBe(cert.fingerprint256);
      // Created once, by the Lease holder.
      const writes = proxy.requests.filter((request) => request.path.includes('/secrets') && request.method !== 'GET');
      expect(writes.map((request) => [request.method, request.status])).toEqual([['POST', 201]]);
      const lease = JSON.parse(
        await kubectl(['get', 'lease', 'hookguard-certificates', '-n', w.ns, '-o', 'json']),
      ) as Json;
      const leaders = replicas.filter((replica) =>
        replica.lines.some(
          (line) => line.msg === 'leading: acquired the Lease' && line.identity === lease.spec.holderIdentity,
        ),
      );
      expect(leaders).toHaveLength(1);
      // The API server calls each, through the Service, trusting the caBundle hookguard wrote.
      for (const replica of replicas) {
        await w.install.pointAt(replica.port);
        await eventually(
          async () =>
            (await w.admit()) === 'patched' && replica.lines.some((line) => line.msg === 'admission decision'),
          `the API server calling the replica on port ${replica.port}`,
          20_000,
        );
        expect(await w.admit()).toBe('patched');
      }
    });
  });
});
