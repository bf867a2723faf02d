// certificates.mode self against the stand-in API server (test/support/fake-apiserver.ts): two replicas, each with
// its own client, reading the Secret (src/tls/secret-reader.ts), one of them leading and keeping it
// (src/controllers/certificates/keeper.ts). What they serve is checked with real TLS clients that trust only what the
// API server would: the caBundle stored in the MutatingWebhookConfiguration, seen CA_BUNDLE_LAG_MS late, as the API
// server reads webhook configurations through a cache of its own, for the Service's name. Rotations are made due by
// seeding the Secret with certificates issued in the past.
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, type Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
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
import { kubeCertificateApi, type CertificateApi } from '../../src/tls/certificate-api.js';
import { bundleCertificates } from '../../src/tls/pem.js';
import { SecretCertificateReader } from '../../src/tls/secret-reader.js';
import type { CertificateObserver } from '../../src/tls/switcher.js';
import { renderTrustRecord, TRUST_ANNOTATION } from '../../src/tls/trust.js';
import { FakeApiServer, type KubeItem, type RecordedRequest } from '../support/fake-apiserver.js';
import { capturedLogger, eventually, type LogLine } from '../support/log-sink.js';
import { requestOnce } from '../support/request-once.js';
import { admissionReview } from '../support/reviews.js';
import { hookJob } from '../support/objects.js';

const SETTINGS = {
  serviceName: 'hookguard',
  namespace: 'hookguard',
  caValidityDays: 1825,
  certValidityDays: 365,
  refreshIntervalMs: 200,
  requestTimeoutMs: 2000,
};
const NAMES = { namespace: 'hookguard', secretName: 'hookguard-tls', webhookName: 'hookguard' };
const SERVICE_NAME = 'hookguard.hookguard.svc';
const HOUR_MS = 3600 * 1000;
const KINDS = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] as const;
/**
 * How late the TLS clients see a caBundle. Under one round (refreshIntervalMs): a pair signed a round after its CA
 * reached the caBundles is trusted by then, and one signed in the same round as that write is not.
 */
const CA_BUNDLE_LAG_MS = 150;

function webhookConfiguration(kind: string, webhooks: string[]): KubeItem {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: { name: 'hookguard' },
    webhooks: webhooks.map((name) => ({
      name,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      clientConfig: { service: { name: 'hookguard', namespace: 'hookguard', path: '/mutate', port: 443 } },
    })),
  };
}

const encoded = (data: CertificateData) =>
  Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]));

const secretData = (fake: FakeApiServer): CertificateData => {
  const data = (fake.get('Secret', 'hookguard', 'hookguard-tls')?.data ?? {}) as Record<string, string>;
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]));
};

/** Every webhook's caBundle, decoded, in both configurations. */
const caBundles = (fake: FakeApiServer): (string | undefined)[] =>
  KINDS.flatMap((kind) =>
    ((fake.get(kind, '', 'hookguard')?.webhooks ?? []) as { clientConfig: { caBundle?: string } }[]).map((webhook) =>
      webhook.clientConfig.caBundle === undefined
        ? undefined
        : Buffer.from(webhook.clientConfig.caBundle, 'base64').toString(),
    ),
  );

function setCaBundles(fake: FakeApiServer, kinds: readonly string[], bundle: string): void {
  for (const kind of kinds)
    fake.modify(kind, '', 'hookguard', (configuration) => {
      for (const webhook of configuration.webhooks as { clientConfig: { caBundle?: string } }[])
        webhook.clientConfig.caBundle = Buffer.from(bundle).toString('base64');
    });
}

/** Overwrites the record of the CAs hookguard made on both configurations, as a restore or a GitOps tool would. */
function setTrustRecord(fake: FakeApiServer, record: string): void {
  for (const kind of KINDS)
    fake.modify(kind, '', 'hookguard', (configuration) => {
      configuration.metadata.annotations = {
        ...(configuration.metadata.annotations as Record<string, string> | undefined),
        [TRUST_ANNOTATION]: record,
      };
    });
}

const trustRecords = (fake: FakeApiServer) =>
  KINDS.map(
    (kind) => (fake.get(kind, '', 'hookguard')?.metadata.annotations as Record<string, string>)[TRUST_ANNOTATION],
  );

/** A leader's API that stops working after the Secret write, before the caBundle write, once `stopped()` says so. */
const stopsBeforeCaBundles =
  (stopped: () => boolean) =>
  (api: CertificateApi): CertificateApi => ({
    ...api,
    setCaBundles: (...args) =>
      stopped() ? Promise.reject(new Error('the leader stopped here')) : api.setCaBundles(...args),
  });

const fingerprints = (bundle: string | undefined) => bundleCertificates(bundle).map((ca) => ca.fingerprint256);
const fingerprintOf = (pem: string | undefined) => fingerprints(pem)[0];

const secretWrites = (fake: FakeApiServer) =>
  fake.requests.filter((request) => request.path.includes('/secrets') && ['POST', 'PUT'].includes(request.method));

/** When a request first wrote what `holds` looks for (Infinity when none did). */
function firstWrite(requests: RecordedRequest[], holds: (request: RecordedRequest) => boolean): number {
  return requests.find((request) => request.status < 300 && holds(request))?.at ?? Infinity;
}

/**
 * When each configuration first got a caBundle holding `ca`, and when the Secret first got a serving certificate
 * `served` accepts; and whether the keeper read both configurations again in between (a new round: it judged the
 * pair by caBundles it had read back, not by what it had just written).
 */
function signingOrder(fake: FakeApiServer, ca: string | undefined, served: (request: RecordedRequest) => boolean) {
  const requestsOf = (kind: string) =>
    fake.requests.filter((request) => request.path.endsWith(`/${kind.toLowerCase()}s/hookguard`));
  const trustedAt = KINDS.map((kind) =>
    firstWrite(requestsOf(kind), (request) => patchedBundles(request).some((written) => fingerprintOf(written) === ca)),
  );
  const servedAt = firstWrite(secretWrites(fake), served);
  const readBackInBetween = KINDS.every((kind, index) =>
    requestsOf(kind).some(
      (request) => request.method === 'GET' && request.at > (trustedAt[index] ?? Infinity) && request.at < servedAt,
    ),
  );
  return { trustedAt: Math.max(...trustedAt), servedAt, readBackInBetween };
}

/** The CA bundles a webhook configuration PATCH wrote, decoded. */
const patchedBundles = (request: RecordedRequest): string[] =>
  request.method === 'PATCH' && request.path.includes('webhookconfigurations')
    ? (request.body as { path: string; value: string }[])
        .filter((op) => op.path.endsWith('/caBundle'))
        .map((op) => Buffer.from(op.value, 'base64').toString())
    : [];

/** The serving certificate a Secret write carried, decoded. */
const writtenServing = (request: RecordedRequest): string =>
  Buffer.from(((request.body as { data?: Record<string, string> }).data ?? {})['tls.crt'] ?? '', 'base64').toString();

interface Replica {
  reader: SecretCertificateReader;
  keeper: CertificateKeeper;
  app: FastifyInstance;
  port: number;
  lines: LogLine[];
  lead(): void;
  stepAside(): void;
}

describe('certificates hookguard manages itself (stand-in API server, real TLS, a caBundle seen late)', () => {
  let fake: FakeApiServer;
  let history: { at: number; bundle: string }[] = [];
  let watching: NodeJS.Timeout | undefined;
  const replicas: Replica[] = [];

  afterEach(async () => {
    clearInterval(watching);
    for (const replica of replicas.splice(0)) {
      replica.stepAside();
      await replica.keeper.stop();
      await replica.reader.stop();
      await replica.app.close();
    }
    await fake?.stop();
  });

  async function world(seed?: CertificateData, bundle?: string) {
    fake = await new FakeApiServer().start();
    fake.put(webhookConfiguration('MutatingWebhookConfiguration', ['mutate.hookguard.io', 'mutate-pods.hookguard.io']));
    fake.put(webhookConfiguration('ValidatingWebhookConfiguration', ['validate.hookguard.io']));
    if (seed)
      fake.put({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'hookguard-tls', namespace: 'hookguard' },
        type: 'kubernetes.io/tls',
        data: encoded(seed),
      });
    if (bundle !== undefined) setCaBundles(fake, KINDS, bundle);
    // What the API server's cache sees: every change of the MutatingWebhookConfiguration's first caBundle, timed.
    // What the world held before the test began, the API server has long seen.
    history = [{ at: 0, bundle: caBundles(fake)[0] ?? '' }];
    const look = () => {
      const [now = ''] = caBundles(fake);
      if (history.at(-1)?.bundle !== now) history.push({ at: Date.now(), bundle: now });
    };
    watching = setInterval(look, 5);
  }

  /** The caBundle the API server trusts now: the one stored CA_BUNDLE_LAG_MS ago. */
  function trustedNow(): string {
    const then = Date.now() - CA_BUNDLE_LAG_MS;
    return history.findLast((seen) => seen.at <= then)?.bundle ?? '';
  }

  /**
   * A replica: its certificates from the Secret, served by the real app over TLS on 127.0.0.1; `apiAs` may change
   * what its API calls do (a leader that stops between two of them).
   */
  async function replica(
    leads: boolean,
    observer?: Partial<CertificateObserver>,
    apiAs: (api: CertificateApi) => CertificateApi = (api) => api,
  ): Promise<Replica> {
    const { logger, lines } = capturedLogger('info');
    const api = apiAs(kubeCertificateApi(fake.kubeConfig('hookguard'), NAMES));
    const reader = new SecretCertificateReader(api, SETTINGS, logger);
    const keeper = new CertificateKeeper(api, SETTINGS, logger);
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
    await app.listen({ host: '127.0.0.1', port: 0 });
    reader.serveWith(app.server as unknown as TlsServer, {
      reloaded: (next) => observer?.reloaded?.(next),
      rejected: (error, reason) => observer?.rejected?.(error, reason),
    });
    const started = { reader, keeper, app, port: (app.server.address() as AddressInfo).port, lines, lead, stepAside };
    replicas.push(started);
    return started;
  }

  /** The certificate a replica presents now, verified as the API server would: caBundle and Service name. */
  function presented(port: number, ca = trustedNow()): Promise<X509Certificate> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, servername: SERVICE_NAME, ca });
      socket.once('secureConnect', () => {
        resolve(new X509Certificate(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0)));
        socket.destroy();
      });
      socket.once('error', reject);
    });
  }

  /** An AdmissionReview over a fresh connection, trusting the caBundle the API server trusts now. */
  async function admit(port: number, uid: string): Promise<string> {
    const body = JSON.stringify(admissionReview({ uid, operation: 'CREATE', object: hookJob() }));
    const reply = await requestOnce(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        agent: false,
        ca: trustedNow(),
        servername: SERVICE_NAME,
        headers: { 'content-type': 'application/json' },
      },
      body,
    );
    return `${reply.status} ${(JSON.parse(reply.body) as { response: { uid: string } }).response.uid}`;
  }

  /** Requests to `port` without pause until stopped: how many were answered, and every failure. */
  function underLoad(port: number) {
    const state = { answered: 0, failures: [] as string[], running: true };
    const done = (async () => {
      while (state.running) {
        const uid = `uid-${state.answered}`;
        const outcome = await admit(port, uid).catch((error: Error) => error.message);
        if (outcome === `200 ${uid}`) state.answered++;
        else state.failures.push(outcome);
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

  const certificateLines = (lines: LogLine[]) =>
    lines.filter((line) => String(line.msg).startsWith('certificates:')).map((line) => line.reason ?? line.msg);

  it('first start: the leader creates the CA and the serving certificate, writes every caBundle and the record; both replicas serve it', async () => {
    await world();
    const leader = await replica(true);
    const follower = await replica(false);
    const data = secretData(fake);
    expect(Object.keys(data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(fake.get('Secret', 'hookguard', 'hookguard-tls')?.type).toBe('kubernetes.io/tls');
    const ca = new X509Certificate(data[SECRET_KEYS.caBundle] ?? '');
    const cert = new X509Certificate(data[SECRET_KEYS.cert] ?? '');
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.subjectAltName).toBe(
      serviceDnsNames(SETTINGS)
        .map((name) => `DNS:${name}`)
        .join(', '),
    );
    expect(cert.verify(ca.publicKey)).toBe(true);
    // About 5 years and 1 year, from an hour ago.
    const days = (certificate: X509Certificate) =>
      Math.round((Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)) / (24 * HOUR_MS));
    expect([days(ca), days(cert)]).toEqual([1825, 365]);
    await eventually(() => caBundles(fake).every((bundle) => bundle === data[SECRET_KEYS.caBundle]), 'every caBundle');
    expect(caBundles(fake)).toHaveLength(3);
    // The record of the CA hookguard made, on both configurations.
    for (const kind of KINDS)
      expect((fake.get(kind, '', 'hookguard')?.metadata.annotations as Record<string, string>)[TRUST_ANNOTATION]).toBe(
        JSON.stringify({ cas: [spkiHash(ca)], retiring: [] }),
      );
    await eventually(() => trustedNow() === data[SECRET_KEYS.caBundle], 'the API server seeing the caBundle');
    for (const { port } of [leader, follower]) expect((await presented(port)).fingerprint256).toBe(cert.fingerprint256);
    expect(await admit(follower.port, 'uid-first')).toBe('200 uid-first');
    // Created once; nothing to do in the rounds after.
    await new Promise((resolve) => setTimeout(resolve, 3 * SETTINGS.refreshIntervalMs));
    expect(secretWrites(fake).map((request) => request.method)).toEqual(['POST']);
  });

  it('rotates the CA under load in two steps: the re-sign comes a round after the caBundle write, and every request is answered by clients that see the caBundle late (finding 13)', async () => {
    // A CA with less than a third of its validity left, and a serving certificate it signed that is still good.
    const now = Date.now();
    const oldCa = await issueCa({ ...SETTINGS, caValidityDays: 2 }, now - 40 * HOUR_MS);
    const oldServing = await issueServingCertificate(SETTINGS, oldCa, now);
    // The caBundles as they were before: the old CA (no record: as a version before the record left them).
    await world(
      { 'tls.crt': oldServing.cert, 'tls.key': oldServing.key, 'ca.crt': oldCa.cert, 'ca.key': oldCa.key },
      oldCa.cert,
    );
    const follower = await replica(false);
    const load = underLoad(follower.port);
    let leader: Replica;
    try {
      await eventually(() => load.state.answered >= 20, 'requests answered before the rotation', 10_000);
      leader = await replica(true);
      // The leader's new serving certificate, signed by the new CA, reaches the follower.
      await eventually(
        async () => {
          const serving = await presented(follower.port);
          return serving.checkIssued(new X509Certificate(oldCa.cert)) ? false : serving;
        },
        'the follower serving a certificate of the new CA',
        10_000,
      );
      const servedBefore = load.state.answered;
      await eventually(() => load.state.answered >= servedBefore + 20, 'requests answered after the rotation', 10_000);
      expect(await admit(leader.port, 'uid-leader')).toBe('200 uid-leader');
    } finally {
      await load.stop();
    }
    expect(load.state.failures).toEqual([]);
    const data = secretData(fake);
    const bundle = data[SECRET_KEYS.caBundle] ?? '';
    const newCa = fingerprintOf(bundle);
    // The new CA first, the old one kept after it until it expires; both in every caBundle.
    expect(fingerprints(bundle)).toEqual([newCa, fingerprintOf(oldCa.cert)]);
    expect(caBundles(fake)).toEqual([bundle, bundle, bundle]);
    // The order, from what the API server received: the new CA in both configurations, then in a later round, after
    // reading both back, the serving pair it signed.
    const [newCaCertificate] = bundleCertificates(bundle) as [X509Certificate];
    const order = signingOrder(fake, newCa, (request) =>
      bundleCertificates(writtenServing(request)).some((cert) => signedBy(cert, newCaCertificate)),
    );
    expect(order.servedAt).toBeGreaterThan(order.trustedAt);
    expect(order.readBackInBetween).toBe(true);
    expect(certificateLines(replicas[1]?.lines ?? [])).toEqual([
      'certificates: no record of the CAs hookguard made yet: taking those whose key the Secret holds or that signed its serving certificate',
      'the CA has less than a third of its validity left: created a new one',
      'certificates: caBundle written',
      'certificates: caBundle written',
      'serving certificate re-signed by the new CA',
    ]);
    // A planned rotation says nothing at warn.
    expect(replicas[1]?.lines.filter((line) => line.level >= 40)).toEqual([]);
  });

  it('re-signs a serving certificate with less than a third of its validity left, under the same CA', async () => {
    const now = Date.now();
    const ca = await issueCa(SETTINGS, now);
    const due = await issueServingCertificate({ ...SETTINGS, certValidityDays: 1 }, ca, now - 20 * HOUR_MS);
    await world({ 'tls.crt': due.cert, 'tls.key': due.key, 'ca.crt': ca.cert, 'ca.key': ca.key }, ca.cert);
    const leader = await replica(true);
    await eventually(() => secretData(fake)[SECRET_KEYS.cert] !== due.cert, 'a new serving certificate');
    const data = secretData(fake);
    expect([data[SECRET_KEYS.caBundle], data[SECRET_KEYS.caKey]]).toEqual([ca.cert, ca.key]);
    await eventually(
      async () =>
        (await presented(leader.port)).fingerprint256 === new X509Certificate(data['tls.crt'] ?? '').fingerprint256,
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

  it.each([
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
      async (data: CertificateData) => ({ ...data, 'tls.key': (await issueCa(SETTINGS, Date.now())).key }),
      'tls.key is not the key of tls.crt',
    ],
  ] as const)(
    'a broken Secret (%s): replicas keep serving the previous certificate, the leader replaces it and says why',
    async (_what, breakIt, problem) => {
      await world();
      const leader = await replica(true);
      const follower = await replica(false);
      const good = secretData(fake);
      await eventually(() => trustedNow() === good[SECRET_KEYS.caBundle], 'the API server seeing the caBundle');
      // The leader steps aside while the Secret is broken, so the follower is seen reading it.
      leader.stepAside();
      const broken = await breakIt(good);
      fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
        secret.data = encoded(broken);
      });
      await eventually(
        () => follower.lines.find((line) => line.msg === 'certificate reload failed: keeping the previous certificate'),
        'the follower refusing the broken pair',
      );
      expect(await admit(follower.port, 'uid-broken')).toBe('200 uid-broken');
      expect((await presented(follower.port)).fingerprint256).toBe(fingerprintOf(good['tls.crt']));
      // The leader again: the serving pair is re-signed by the same CA, and the follower switches to it.
      leader.lead();
      await eventually(
        () => leader.lines.find((line) => line.msg === 'certificates: replaced what the Secret held'),
        'the leader replacing it',
      );
      expect(leader.lines.find((line) => line.msg === 'certificates: replaced what the Secret held')).toMatchObject({
        level: 40,
        problem,
        reason: 'serving certificate re-signed',
      });
      const repaired = secretData(fake);
      expect(repaired[SECRET_KEYS.caBundle]).toBe(good[SECRET_KEYS.caBundle]);
      await eventually(
        async () => (await presented(follower.port)).fingerprint256 === fingerprintOf(repaired['tls.crt']),
        'the follower serving the repaired pair',
      );
      expect(await admit(follower.port, 'uid-repaired')).toBe('200 uid-repaired');
    },
  );

  it('a garbage CA in the Secret: the leader makes a new CA, keeps trusting the old one, and serves nothing it signed before the caBundles trust it (finding 11)', async () => {
    await world();
    const leader = await replica(true);
    const follower = await replica(false);
    const good = secretData(fake);
    await eventually(() => trustedNow() === good[SECRET_KEYS.caBundle], 'the API server seeing the caBundle');
    leader.stepAside();
    fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
      (secret.data as Record<string, string>)['ca.crt'] = Buffer.from('not a certificate\n').toString('base64');
    });
    const load = underLoad(follower.port);
    try {
      leader.lead();
      await eventually(
        async () => (await presented(follower.port)).fingerprint256 !== fingerprintOf(good['tls.crt']),
        'the follower serving the new certificate',
        10_000,
      );
      const servedBefore = load.state.answered;
      await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after the repair', 10_000);
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
    const bundle = secretData(fake)[SECRET_KEYS.caBundle] ?? '';
    const newCa = fingerprintOf(bundle);
    expect(fingerprints(bundle)).toEqual([newCa, fingerprintOf(good[SECRET_KEYS.caBundle])]);
    expect(caBundles(fake)).toEqual([bundle, bundle, bundle]);
    // Nothing the new CA signed was written before both configurations trusted it, nor in the same round.
    const order = signingOrder(
      fake,
      newCa,
      (request) =>
        writtenServing(request) !== '' && fingerprintOf(writtenServing(request)) !== fingerprintOf(good['tls.crt']),
    );
    expect(order.servedAt).toBeGreaterThan(order.trustedAt);
    expect(order.readBackInBetween).toBe(true);
  });

  it('a CA appended to ca.crt or a caBundle is never trusted: removed, warned about and counted; a deleted Secret starts a new chain and the old CA goes once its pair is served (finding 3)', async () => {
    await world();
    const leader = await replica(true);
    const follower = await replica(false);
    const good = secretData(fake);
    const oldCa = good[SECRET_KEYS.caBundle] ?? '';
    await eventually(() => trustedNow() === oldCa, 'the API server seeing the caBundle');
    const attacker = await issueCa({ ...SETTINGS, caValidityDays: 36_500 }, Date.now());
    const attackerFingerprint = fingerprintOf(attacker.cert) ?? 'none';
    const everTrusted = () =>
      history.some((seen) => fingerprints(seen.bundle).includes(attackerFingerprint)) ||
      fake.requests.some((request) =>
        patchedBundles(request).some((bundle) => fingerprints(bundle).includes(attackerFingerprint)),
      );
    const removals = () =>
      leader.lines.filter((line) => line.msg === 'certificates: removed a CA hookguard did not make');

    // Appended to the Secret's ca.crt: dropped from it, never written into a caBundle.
    fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
      (secret.data as Record<string, string>)['ca.crt'] = Buffer.from(pemBundle([oldCa, attacker.cert])).toString(
        'base64',
      );
    });
    await eventually(() => secretData(fake)[SECRET_KEYS.caBundle] === oldCa, 'the CA dropped from ca.crt');
    await new Promise((resolve) => setTimeout(resolve, 3 * SETTINGS.refreshIntervalMs));
    expect(everTrusted()).toBe(false);
    expect(removals()).toEqual([
      expect.objectContaining({
        level: 40,
        where: 'hookguard/hookguard-tls ca.crt',
        subject: new X509Certificate(attacker.cert).subject,
        fingerprint256: attackerFingerprint,
      }),
    ]);

    // Put into one configuration's caBundle: removed within a round.
    setCaBundles(fake, ['ValidatingWebhookConfiguration'], pemBundle([oldCa, attacker.cert]));
    await eventually(() => caBundles(fake).every((bundle) => bundle === oldCa), 'the caBundles back to hookguard CA');
    expect(removals().map((line) => line.where)).toEqual(['hookguard/hookguard-tls ca.crt', 'caBundle']);
    const metrics = new Metrics({ untrustedCasRemoved: () => leader.keeper.untrustedCasRemoved() });
    expect((await metrics.registry.metrics()).split('\n').filter((line) => line.startsWith('hookguard_cert'))).toEqual([
      'hookguard_certificates_untrusted_cas_removed_total{where="secret"} 1',
      'hookguard_certificates_untrusted_cas_removed_total{where="caBundle"} 1',
    ]);

    // The Secret deleted (what one does after ca.key leaked), under load: a new CA, trusted beside the old one until
    // the new pair has been served everywhere, then alone; the attacker's CA in neither.
    const load = underLoad(follower.port);
    let newCa: string | undefined;
    try {
      fake.remove('Secret', 'hookguard', 'hookguard-tls');
      await eventually(() => {
        const bundle = secretData(fake)[SECRET_KEYS.caBundle];
        return fingerprints(bundle).length === 2 && bundle;
      }, 'a new CA');
      newCa = fingerprintOf(secretData(fake)[SECRET_KEYS.caBundle]);
      expect(fingerprints(secretData(fake)[SECRET_KEYS.caBundle])).toEqual([newCa, fingerprintOf(oldCa)]);
      const [newCaCertificate] = bundleCertificates(secretData(fake)[SECRET_KEYS.caBundle]) as [X509Certificate];
      await eventually(
        async () => signedBy(await presented(follower.port), newCaCertificate),
        'the follower serving a pair of the new CA',
        10_000,
      );
      await eventually(
        () => caBundles(fake).every((bundle) => fingerprints(bundle).join() === newCa),
        'the old CA gone from every caBundle',
        10_000,
      );
      const servedBefore = load.state.answered;
      await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 10_000);
    } finally {
      await load.stop();
    }
    expect(load.state.failures).toEqual([]);
    expect(fingerprints(secretData(fake)[SECRET_KEYS.caBundle])).toEqual([newCa]);
    expect(everTrusted()).toBe(false);
    expect(certificateLines(leader.lines)).toContain(
      'the Secret was deleted: created a new CA; the old CAs are trusted until its serving certificate is served everywhere',
    );
  });

  it('an upgrade from a version that kept no record, with a foreign CA already in ca.crt and the caBundles: only the CA whose key the Secret holds is taken', async () => {
    const now = Date.now();
    const ca = await issueCa(SETTINGS, now);
    const serving = await issueServingCertificate(SETTINGS, ca, now);
    const foreign = await issueCa({ ...SETTINGS, caValidityDays: 36_500 }, now);
    const bundle = pemBundle([ca.cert, foreign.cert]);
    await world({ 'tls.crt': serving.cert, 'tls.key': serving.key, 'ca.crt': bundle, 'ca.key': ca.key }, bundle);
    const leader = await replica(true);
    await eventually(
      () => caBundles(fake).every((written) => written === ca.cert),
      'the caBundles holding its CA only',
    );
    expect(secretData(fake)).toEqual({
      'tls.crt': serving.cert,
      'tls.key': serving.key,
      'ca.crt': ca.cert,
      'ca.key': ca.key,
    });
    expect(leader.keeper.untrustedCasRemoved()).toEqual({ secret: 1, caBundle: 1 });
    expect(leader.lines.filter((line) => line.level >= 40).map((line) => line.where)).toEqual([
      'hookguard/hookguard-tls ca.crt',
      'caBundle',
    ]);
    expect((await presented(leader.port)).fingerprint256).toBe(fingerprintOf(serving.cert));
  });

  it('512 KiB of BEGIN lines in ca.crt: the keeper reads at most 64 KiB of it, drops the junk, keeps the CA (finding 4)', async () => {
    await world();
    const leader = await replica(true);
    const good = secretData(fake);
    await eventually(() => trustedNow() === good[SECRET_KEYS.caBundle], 'the API server seeing the caBundle');
    const junk = '-----BEGIN CERTIFICATE-----\n'.repeat((512 * 1024) / 28);
    fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
      (secret.data as Record<string, string>)['ca.crt'] = Buffer.from(`${good[SECRET_KEYS.caBundle]}${junk}`).toString(
        'base64',
      );
    });
    await eventually(
      () => secretData(fake)[SECRET_KEYS.caBundle] === good[SECRET_KEYS.caBundle],
      'the junk dropped from ca.crt',
    );
    // The leader logs the write once the API server has answered it: its line may reach the pipe a moment later.
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
    expect(caBundles(fake)).toEqual([
      good[SECRET_KEYS.caBundle],
      good[SECRET_KEYS.caBundle],
      good[SECRET_KEYS.caBundle],
    ]);
    expect((await presented(leader.port)).fingerprint256).toBe(fingerprintOf(good[SECRET_KEYS.cert]));
  });

  it('a reload whose observer throws does not stop the replica reading the Secret (finding 12)', async () => {
    await world();
    let throws = 1;
    const leader = await replica(true);
    const follower = await replica(false, {
      reloaded: () => {
        if (throws-- > 0) throw new Error('the metrics could not take it');
      },
    });
    const good = secretData(fake);
    await eventually(() => trustedNow() === good[SECRET_KEYS.caBundle], 'the API server seeing the caBundle');
    leader.stepAside();
    const ca = { cert: good[SECRET_KEYS.caBundle] ?? '', key: good[SECRET_KEYS.caKey] ?? '' };
    for (const uid of ['uid-second', 'uid-third']) {
      const pair = await issueServingCertificate(SETTINGS, ca, Date.now());
      fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
        secret.data = encoded({ ...good, 'tls.crt': pair.cert, 'tls.key': pair.key });
      });
      await eventually(
        async () => (await presented(follower.port)).fingerprint256 === fingerprintOf(pair.cert),
        `the follower serving the pair for ${uid}`,
      );
      expect(await admit(follower.port, uid)).toBe(`200 ${uid}`);
    }
    expect(throws).toBe(-1);
  });
  it.each([
    ['an empty list', () => JSON.stringify({ cas: [] })],
    [
      'a list of CAs of another installation',
      async () => {
        const other = await issueCa(SETTINGS, Date.now());
        return renderTrustRecord(bundleCertificates(other.cert), new Set());
      },
    ],
  ] as const)(
    'a trust record naming none of the CAs in use (%s) never drops the CA the replicas serve with: no request fails (issue 37 item 1)',
    async (_what, record) => {
      await world();
      const leader = await replica(true);
      const follower = await replica(false);
      const good = secretData(fake);
      const ca = good[SECRET_KEYS.caBundle] ?? '';
      await eventually(() => trustedNow() === ca, 'the API server seeing the caBundle');
      const load = underLoad(follower.port);
      try {
        // Overwritten between two rounds, so that the keeper reads it on both configurations at once.
        const overwrite = await record();
        leader.stepAside();
        await new Promise((resolve) => setTimeout(resolve, 2 * SETTINGS.refreshIntervalMs));
        setTrustRecord(fake, overwrite);
        leader.lead();
        // Rounds enough for a new CA, its caBundle write and the re-sign, had the CA been called foreign.
        const servedBefore = load.state.answered;
        await new Promise((resolve) => setTimeout(resolve, 5 * SETTINGS.refreshIntervalMs));
        await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 10_000);
      } finally {
        await load.stop();
      }
      expect(load.state.failures).toEqual([]);
      expect(trustRecords(fake)).toEqual(KINDS.map(() => renderTrustRecord(bundleCertificates(ca), new Set())));
      expect(secretData(fake)).toEqual(good);
      expect(caBundles(fake)).toEqual([ca, ca, ca]);
      expect(leader.keeper.untrustedCasRemoved()).toEqual({ secret: 0, caBundle: 0 });
      // Stepping aside may cut a round's API call short; nothing else is said at warn.
      const warned = leader.lines
        .filter((line) => line.level >= 40 && line.msg !== 'certificates: API call failed; trying again next round')
        .map((line) => line.msg);
      expect(warned).toEqual(['certificates: the record names none of the CAs in the caBundles: taken as missing']);
    },
  );

  it('a pair in the Secret that no caBundle CA signed is never served: refused, said in the log and counted by reason (issue 37 item 2)', async () => {
    await world();
    const leader = await replica(true);
    const metrics = new Metrics();
    const follower = await replica(false, { rejected: (_error, reason) => metrics.certificateRefused(reason) });
    const good = secretData(fake);
    await eventually(() => trustedNow() === good[SECRET_KEYS.caBundle], 'the API server seeing the caBundle');
    // The leader steps aside, or it would re-sign the pair at once: the replicas alone must refuse it.
    leader.stepAside();
    const other = await issueCa(SETTINGS, Date.now());
    const untrusted = await issueServingCertificate(SETTINGS, other, Date.now());
    fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
      secret.data = encoded({ ...good, 'tls.crt': untrusted.cert, 'tls.key': untrusted.key });
    });
    const refusal = await eventually(
      () => follower.lines.find((line) => line.msg === 'certificate reload failed: keeping the previous certificate'),
      'the follower refusing the pair',
    );
    expect(refusal).toMatchObject({
      level: 50,
      secret: 'hookguard/hookguard-tls',
      reason: 'untrusted',
      err: {
        message: `tls.crt is signed by no CA that every webhook's caBundle holds (issuer ${new X509Certificate(other.cert).subject})`,
      },
    });
    expect((await presented(follower.port)).fingerprint256).toBe(fingerprintOf(good['tls.crt']));
    expect(await admit(follower.port, 'uid-untrusted')).toBe('200 uid-untrusted');
    const counted = (await metrics.registry.metrics())
      .split('\n')
      .filter((line) => line.startsWith('hookguard_tls_pairs_refused_total{') || line.includes('"tls_reload"'));
    expect(counted).toEqual([
      'hookguard_errors_total{source="tls_reload"} 1',
      'hookguard_tls_pairs_refused_total{reason="unreadable"} 0',
      'hookguard_tls_pairs_refused_total{reason="unusable"} 0',
      'hookguard_tls_pairs_refused_total{reason="untrusted"} 1',
    ]);
    // The same CA in every caBundle makes the same pair served.
    setCaBundles(fake, KINDS, pemBundle([good[SECRET_KEYS.caBundle] ?? '', other.cert]));
    await eventually(
      async () =>
        (await presented(follower.port, pemBundle([good[SECRET_KEYS.caBundle] ?? '', other.cert]))).fingerprint256 ===
        fingerprintOf(untrusted.cert),
      'the follower serving the pair once every caBundle holds its CA',
    );
  });

  it("a leader that stops between the Secret write and the caBundle write during a CA rotation: the next leader takes its CA as hookguard's (issue 37 item 3)", async () => {
    const now = Date.now();
    const oldCa = await issueCa({ ...SETTINGS, caValidityDays: 2 }, now - 40 * HOUR_MS);
    const oldServing = await issueServingCertificate(SETTINGS, oldCa, now);
    await world(
      { 'tls.crt': oldServing.cert, 'tls.key': oldServing.key, 'ca.crt': oldCa.cert, 'ca.key': oldCa.key },
      oldCa.cert,
    );
    setTrustRecord(fake, renderTrustRecord(bundleCertificates(oldCa.cert), new Set()));
    const follower = await replica(false);
    const load = underLoad(follower.port);
    let next: Replica;
    try {
      const stopping = await replica(
        true,
        undefined,
        stopsBeforeCaBundles(() => true),
      );
      const newCa = await eventually(() => {
        const bundle = secretData(fake)[SECRET_KEYS.caBundle];
        return fingerprints(bundle).length === 2 && fingerprintOf(bundle);
      }, 'the new CA in the Secret');
      stopping.stepAside();
      expect(caBundles(fake)).toEqual([oldCa.cert, oldCa.cert, oldCa.cert]);
      next = await replica(true);
      const expected = pemBundle([secretData(fake)[SECRET_KEYS.caBundle] ?? '']);
      await eventually(() => caBundles(fake).every((bundle) => bundle === expected), 'the caBundles holding both CAs');
      expect(fingerprints(expected)).toEqual([newCa, fingerprintOf(oldCa.cert)]);
      await eventually(
        async () => fingerprintOf((await presented(follower.port)).toString()) !== fingerprintOf(oldServing.cert),
        'the follower serving a pair of the new CA',
        10_000,
      );
      const servedBefore = load.state.answered;
      await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 10_000);
    } finally {
      await load.stop();
    }
    expect(load.state.failures).toEqual([]);
    expect(next.keeper.untrustedCasRemoved()).toEqual({ secret: 0, caBundle: 0 });
    expect(next.lines.filter((line) => line.level >= 40)).toEqual([]);
  });

  it('a leader that stops between the Secret write and the caBundle write after the Secret was deleted: the next leader keeps the old CA retiring, and it goes (issue 37 item 3)', async () => {
    await world();
    let stopped = false;
    const stopping = await replica(
      true,
      undefined,
      stopsBeforeCaBundles(() => stopped),
    );
    const follower = await replica(false);
    const oldCa = secretData(fake)[SECRET_KEYS.caBundle] ?? '';
    await eventually(() => trustedNow() === oldCa, 'the API server seeing the caBundle');
    const load = underLoad(follower.port);
    let next: Replica;
    try {
      stopped = true;
      fake.remove('Secret', 'hookguard', 'hookguard-tls');
      const newCa = await eventually(() => {
        const bundle = secretData(fake)[SECRET_KEYS.caBundle];
        return fingerprints(bundle).length === 2 && fingerprintOf(bundle);
      }, 'the new CA in the Secret');
      stopping.stepAside();
      next = await replica(true);
      await eventually(
        () => caBundles(fake).every((bundle) => fingerprints(bundle).join() === `${newCa},${fingerprintOf(oldCa)}`),
        'the caBundles holding both CAs',
      );
      expect(trustRecords(fake)).toEqual(
        KINDS.map(() =>
          renderTrustRecord(bundleCertificates(caBundles(fake)[0]), new Set(bundleCertificates(oldCa).map(spkiHash))),
        ),
      );
      await eventually(
        () => caBundles(fake).every((bundle) => fingerprints(bundle).join() === newCa),
        'the old CA gone from every caBundle',
        10_000,
      );
      const servedBefore = load.state.answered;
      await eventually(() => load.state.answered >= servedBefore + 10, 'requests answered after', 10_000);
    } finally {
      await load.stop();
    }
    expect(load.state.failures).toEqual([]);
    expect(next.keeper.untrustedCasRemoved()).toEqual({ secret: 0, caBundle: 0 });
  });
});
