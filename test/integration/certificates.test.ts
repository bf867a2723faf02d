// certificates.mode self against the stand-in API server (test/support/fake-apiserver.ts): two replicas, each with
// its own client, one of them leading. What they serve is checked with real TLS clients that trust only what the
// API server would: the caBundle stored in the webhook configurations at the moment of the call, for the Service's
// name. Rotations are made due by seeding the Secret with certificates issued in the past.
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, type Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import {
  issueCa,
  issueServingCertificate,
  SECRET_KEYS,
  serviceDnsNames,
  type CertificateData,
} from '../../src/tls/authority.js';
import { kubeCertificateApi } from '../../src/tls/certificate-api.js';
import { SelfManagedCertificates } from '../../src/tls/self-managed.js';
import { FakeApiServer, type KubeItem } from '../support/fake-apiserver.js';
import { capturedLogger, eventually } from '../support/log-sink.js';
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

const secretData = (fake: FakeApiServer): CertificateData => {
  const data = (fake.get('Secret', 'hookguard', 'hookguard-tls')?.data ?? {}) as Record<string, string>;
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]));
};

/** Every webhook's caBundle, decoded, in both configurations. */
const caBundles = (fake: FakeApiServer): (string | undefined)[] =>
  ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].flatMap((kind) =>
    ((fake.get(kind, '', 'hookguard')?.webhooks ?? []) as { clientConfig: { caBundle?: string } }[]).map((webhook) =>
      webhook.clientConfig.caBundle === undefined
        ? undefined
        : Buffer.from(webhook.clientConfig.caBundle, 'base64').toString(),
    ),
  );

const secretWrites = (fake: FakeApiServer) =>
  fake.requests.filter((request) => request.path.includes('/secrets') && ['POST', 'PUT'].includes(request.method));

interface Replica {
  certificates: SelfManagedCertificates;
  app: FastifyInstance;
  port: number;
  lines: Record<string, unknown>[];
}

describe('certificates hookguard manages itself (stand-in API server, real TLS)', () => {
  let fake: FakeApiServer;
  const replicas: Replica[] = [];

  afterEach(async () => {
    for (const replica of replicas.splice(0)) {
      await replica.certificates.stop();
      await replica.app.close();
    }
    await fake?.stop();
  });

  async function world(seed?: CertificateData) {
    fake = await new FakeApiServer().start();
    fake.put(webhookConfiguration('MutatingWebhookConfiguration', ['mutate.hookguard.io', 'mutate-pods.hookguard.io']));
    fake.put(webhookConfiguration('ValidatingWebhookConfiguration', ['validate.hookguard.io']));
    if (seed)
      fake.put({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'hookguard-tls', namespace: 'hookguard' },
        type: 'kubernetes.io/tls',
        data: Object.fromEntries(
          Object.entries(seed).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
        ),
      });
  }

  /** A replica: its certificates from the Secret, served by the real app over TLS on 127.0.0.1. */
  async function replica(leads: boolean): Promise<Replica> {
    const { logger, lines } = capturedLogger('info');
    const certificates = new SelfManagedCertificates(
      kubeCertificateApi(fake.kubeConfig('hookguard'), NAMES),
      SETTINGS,
      logger,
    );
    if (leads) certificates.leadership.started(new AbortController().signal);
    certificates.start();
    const pair = await certificates.firstPair();
    const app = buildApp(loadConfig(), { logger: pino({ level: 'silent' }), tls: pair });
    await app.listen({ host: '127.0.0.1', port: 0 });
    certificates.serveWith(app.server as unknown as TlsServer, {
      reloaded: () => undefined,
      rejected: () => undefined,
    });
    const started = { certificates, app, port: (app.server.address() as AddressInfo).port, lines };
    replicas.push(started);
    return started;
  }

  /** The certificate a replica presents now, verified as the API server would: caBundle and Service name. */
  function presented(port: number): Promise<X509Certificate> {
    const [ca = ''] = caBundles(fake);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, servername: SERVICE_NAME, ca });
      socket.once('secureConnect', () => {
        resolve(new X509Certificate(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0)));
        socket.destroy();
      });
      socket.once('error', reject);
    });
  }

  /** An AdmissionReview over a fresh connection, trusting the caBundle stored at the moment of the call. */
  async function admit(port: number, uid: string): Promise<string> {
    const [ca = ''] = caBundles(fake);
    const body = JSON.stringify(admissionReview({ uid, operation: 'CREATE', object: hookJob() }));
    const reply = await requestOnce(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        agent: false,
        ca,
        servername: SERVICE_NAME,
        headers: { 'content-type': 'application/json' },
      },
      body,
    );
    return `${reply.status} ${(JSON.parse(reply.body) as { response: { uid: string } }).response.uid}`;
  }

  it('first start: the leader creates the CA and the serving certificate, writes every caBundle; both replicas serve it', async () => {
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
    for (const { port } of [leader, follower]) expect((await presented(port)).fingerprint256).toBe(cert.fingerprint256);
    expect(await admit(follower.port, 'uid-first')).toBe('200 uid-first');
    // Created once; nothing to do in the rounds after.
    await new Promise((resolve) => setTimeout(resolve, 3 * SETTINGS.refreshIntervalMs));
    expect(secretWrites(fake).map((request) => request.method)).toEqual(['POST']);
  });

  it('rotates the CA under load in two steps: every request answered, trusting only the stored caBundle', async () => {
    // A CA with less than a third of its validity left, and a serving certificate it signed that is still good.
    const now = Date.now();
    const oldCa = await issueCa({ ...SETTINGS, caValidityDays: 2 }, now - 40 * HOUR_MS);
    const oldServing = await issueServingCertificate(SETTINGS, oldCa, now);
    await world({ 'tls.crt': oldServing.cert, 'tls.key': oldServing.key, 'ca.crt': oldCa.cert, 'ca.key': oldCa.key });
    // The caBundles as they were before: the old CA.
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'])
      fake.modify(kind, '', 'hookguard', (configuration) => {
        for (const webhook of configuration.webhooks as { clientConfig: { caBundle?: string } }[])
          webhook.clientConfig.caBundle = Buffer.from(oldCa.cert).toString('base64');
      });
    const follower = await replica(false);
    let answered = 0;
    const failures: string[] = [];
    let running = true;
    const load = (async () => {
      while (running) {
        const uid = `uid-${answered}`;
        const outcome = await admit(follower.port, uid).catch((error: Error) => error.message);
        if (outcome === `200 ${uid}`) answered++;
        else failures.push(outcome);
      }
    })();
    try {
      await eventually(() => answered >= 20, 'requests answered before the rotation', 10_000);
      const leader = await replica(true);
      // The leader's new serving certificate, signed by the new CA, reaches the follower.
      await eventually(
        async () => {
          const serving = await presented(follower.port);
          return serving.checkIssued(new X509Certificate(oldCa.cert)) ? false : serving;
        },
        'the follower serving a certificate of the new CA',
        10_000,
      );
      const servedBefore = answered;
      await eventually(() => answered >= servedBefore + 20, 'requests answered after the rotation', 10_000);
      expect(await admit(leader.port, 'uid-leader')).toBe('200 uid-leader');
    } finally {
      running = false;
      await load;
    }
    expect(failures).toEqual([]);
    const data = secretData(fake);
    const bundle = data[SECRET_KEYS.caBundle] ?? '';
    // The new CA first, the old one kept after it until it expires; both in every caBundle.
    expect(bundle.endsWith(oldCa.cert)).toBe(true);
    expect(bundle.startsWith(oldCa.cert)).toBe(false);
    expect(caBundles(fake)).toEqual([bundle, bundle, bundle]);
    // Step 1 (new CA, old serving pair kept), step 3 a round later (re-signed): the caBundles between the two.
    const leaderLines = replicas[1]?.lines ?? [];
    expect(
      leaderLines.filter((line) => String(line.msg).startsWith('certificates:')).map((line) => line.reason ?? line.msg),
    ).toEqual([
      'the CA has less than a third of its validity left: created a new one',
      'certificates: caBundle written',
      'certificates: caBundle written',
      'serving certificate re-signed',
    ]);
  });

  it('re-signs a serving certificate with less than a third of its validity left, under the same CA', async () => {
    const now = Date.now();
    const ca = await issueCa(SETTINGS, now);
    const due = await issueServingCertificate({ ...SETTINGS, certValidityDays: 1 }, ca, now - 20 * HOUR_MS);
    await world({ 'tls.crt': due.cert, 'tls.key': due.key, 'ca.crt': ca.cert, 'ca.key': ca.key });
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
      // The leader steps aside while the Secret is broken, so the follower is seen reading it.
      leader.certificates.leadership.stopped();
      const broken = await breakIt(good);
      fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
        secret.data = Object.fromEntries(
          Object.entries(broken).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
        );
      });
      await eventually(
        () =>
          follower.lines.find(
            (line) => line.msg === 'certificate in the Secret is not usable: keeping the previous certificate',
          ),
        'the follower refusing the broken pair',
      );
      expect(await admit(follower.port, 'uid-broken')).toBe('200 uid-broken');
      expect((await presented(follower.port)).fingerprint256).toBe(
        new X509Certificate(good['tls.crt'] ?? '').fingerprint256,
      );
      // The leader again: the serving pair is re-signed by the same CA, and the follower switches to it.
      leader.certificates.leadership.started(new AbortController().signal);
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
        async () =>
          (await presented(follower.port)).fingerprint256 ===
          new X509Certificate(repaired['tls.crt'] ?? '').fingerprint256,
        'the follower serving the repaired pair',
      );
      expect(await admit(follower.port, 'uid-repaired')).toBe('200 uid-repaired');
    },
  );

  it('a garbage CA in the Secret: the leader makes a new CA, keeps trusting the old one from the caBundle, and every request is answered', async () => {
    await world();
    const leader = await replica(true);
    const follower = await replica(false);
    const good = secretData(fake);
    await eventually(() => caBundles(fake)[0] === good[SECRET_KEYS.caBundle], 'the first caBundle');
    leader.certificates.leadership.stopped();
    fake.modify('Secret', 'hookguard', 'hookguard-tls', (secret) => {
      (secret.data as Record<string, string>)['ca.crt'] = Buffer.from('not a certificate\n').toString('base64');
    });
    let answered = 0;
    const failures: string[] = [];
    let running = true;
    const load = (async () => {
      while (running) {
        const uid = `uid-${answered}`;
        const outcome = await admit(follower.port, uid).catch((error: Error) => error.message);
        if (outcome === `200 ${uid}`) answered++;
        else failures.push(outcome);
      }
    })();
    try {
      leader.certificates.leadership.started(new AbortController().signal);
      await eventually(
        async () =>
          (await presented(follower.port)).fingerprint256 !== new X509Certificate(good['tls.crt'] ?? '').fingerprint256,
        'the follower serving the new certificate',
        10_000,
      );
      const servedBefore = answered;
      await eventually(() => answered >= servedBefore + 10, 'requests answered after the repair', 10_000);
    } finally {
      running = false;
      await load;
    }
    expect(failures).toEqual([]);
    expect(leader.lines.find((line) => line.msg === 'certificates: replaced what the Secret held')).toMatchObject({
      level: 40,
      problem: 'ca.crt holds no certificate',
      reason: 'the CA was not usable: created a new one',
    });
    // The new CA, then the old one, which only the caBundle still had.
    const bundle = secretData(fake)[SECRET_KEYS.caBundle] ?? '';
    expect(bundle.endsWith(good[SECRET_KEYS.caBundle] ?? '')).toBe(true);
    expect(bundle).not.toBe(good[SECRET_KEYS.caBundle]);
    expect(caBundles(fake)).toEqual([bundle, bundle, bundle]);
  });
});
