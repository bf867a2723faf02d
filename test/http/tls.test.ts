import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect as tlsConnect, createServer as tlsServer, type ConnectionOptions, type SecureVersion } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { generateDevCertificate, type TlsMaterial } from '../../src/tls/certificates.js';
import { requestOnce, type Reply } from '../support/request-once.js';
import { admissionReview, decodePatch } from '../support/reviews.js';
import { ServeProcess } from '../support/serve-process.js';

/** OpenSSL's command line, when the machine has one. */
const openssl = ['/usr/bin/openssl', '/usr/local/bin/openssl'].find(
  (path) => spawnSync(path, ['version']).status === 0,
);

interface RequestOptions {
  port: number;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  tls?: https.RequestOptions;
}

/** One request over a fresh connection (agent: false), resolving with the status, body and TLS protocol. */
function request(client: typeof http | typeof https, options: RequestOptions): Promise<Reply> {
  const headers =
    options.body === undefined
      ? {}
      : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(options.body) };
  return requestOnce(
    {
      host: '127.0.0.1',
      port: options.port,
      method: options.method,
      path: options.path,
      agent: false,
      headers,
      ...options.tls,
    },
    options.body,
    client,
  );
}

const CLEANUP_JOB = {
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'cleanup', namespace: 'apps', annotations: { 'helm.sh/hook': 'post-delete' } },
  spec: {
    backoffLimit: 1,
    template: {
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: 'bitnami/kubectl:1.31', command: ['kubectl', 'delete', 'configmap', 'x'] }],
      },
    },
  },
};

describe('the webhook over a real TLS socket', () => {
  let tls: TlsMaterial;
  let app: FastifyInstance;
  let port: number;
  const trusted = (extra: https.RequestOptions = {}): https.RequestOptions => ({
    ca: tls.cert,
    servername: 'localhost',
    ...extra,
  });

  beforeAll(async () => {
    tls = await generateDevCertificate();
    app = buildApp(loadConfig(), { logger: pino({ level: 'silent' }), tls: { key: tls.key, cert: tls.cert } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await app.close();
  });

  it('answers a real AdmissionReview with the exact patch, trusting the generated certificate as the CA', async () => {
    const body = JSON.stringify(admissionReview({ uid: 'uid-tls', operation: 'CREATE', object: CLEANUP_JOB }));
    const reply = await request(https, { port, method: 'POST', path: '/mutate', body, tls: trusted() });
    expect(reply.status).toBe(200);
    expect(reply.protocol).toBe('TLSv1.3');
    const { response } = JSON.parse(reply.body) as AdmissionReviewResponse;
    expect(response.uid).toBe('uid-tls');
    expect(decodePatch(response)).toEqual([
      { op: 'add', path: '/spec/template/spec/containers/0/command/4', value: '--ignore-not-found' },
      { op: 'add', path: '/spec/template/spec/containers/0/terminationMessagePolicy', value: 'FallbackToLogsOnError' },
      { op: 'replace', path: '/spec/backoffLimit', value: 3 },
      { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
      { op: 'add', path: '/metadata/labels', value: { 'hookguard.io/hook': 'admitted' } },
    ]);
  });

  it('is verified for the name the API server would use: a client checking a different name refuses it', async () => {
    await expect(
      request(https, { port, method: 'GET', path: '/healthz', tls: trusted({ servername: 'hookguard.example.com' }) }),
    ).rejects.toMatchObject({
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
  });

  // The client lowers its own OpenSSL security level so that it is able to offer TLS 1.1: a refusal then comes
  // from the server. The TLS 1.2 control with the same client settings shows the settings themselves work.
  it.each([
    ['TLSv1.2', 200],
    ['TLSv1.3', 200],
  ] as const)('accepts a %s client', async (version, status) => {
    const options = trusted({ minVersion: version, maxVersion: version, ciphers: 'DEFAULT@SECLEVEL=0' });
    const reply = await request(https, { port, method: 'GET', path: '/healthz', tls: options });
    expect([reply.status, reply.protocol]).toEqual([status, version]);
  });

  it.each(['TLSv1', 'TLSv1.1'] as const)(
    'refuses a %s client with a protocol_version alert',
    async (version: SecureVersion) => {
      const options = trusted({ minVersion: version, maxVersion: version, ciphers: 'DEFAULT@SECLEVEL=0' });
      // Control: the same client completes a handshake in that version with a server that allows it.
      const permissive = tlsServer(
        { key: tls.key, cert: tls.cert, minVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' },
        (socket) => socket.end(),
      );
      permissive.listen(0, '127.0.0.1');
      await once(permissive, 'listening');
      try {
        const control = tlsConnect({
          host: '127.0.0.1',
          port: (permissive.address() as AddressInfo).port,
          ...options,
        } as ConnectionOptions);
        await once(control, 'secureConnect');
        expect(control.getProtocol()).toBe(version);
        control.destroy();
      } finally {
        permissive.close();
      }
      // hookguard answers with alert 70 (protocol_version): the refusal is the server's.
      await expect(request(https, { port, method: 'GET', path: '/healthz', tls: options })).rejects.toMatchObject({
        code: 'EPROTO',
        message: expect.stringContaining('tlsv1 alert protocol version'),
      });
    },
  );

  /** A TLS 1.2 handshake offering only `ciphers`: the suite agreed on, or the error that ended it. */
  function handshakeTls12(ciphers: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port,
        ca: tls.cert,
        servername: 'localhost',
        maxVersion: 'TLSv1.2',
        ciphers,
      });
      socket.once('secureConnect', () => {
        resolve(socket.getCipher().name);
        socket.destroy();
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  }

  // A client offering only CBC (with SHA-1 or SHA-256 MACs) gets alert 40 handshake_failure: the server has no suite
  // in common. Node's default list, which the server used before, agrees to the first two. OpenSSL names the alert
  // SSLV3 up to 3.0 (Node.js 20) and SSL/TLS from 3.2 on (Node.js 22, 24).
  const HANDSHAKE_FAILURE =
    Number(process.versions.openssl.split('.')[0]) * 100 + Number(process.versions.openssl.split('.')[1]) >= 302
      ? 'ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE'
      : 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE';
  it.each([
    ['ECDHE-ECDSA-AES128-SHA', HANDSHAKE_FAILURE],
    ['ECDHE-ECDSA-AES256-SHA384', HANDSHAKE_FAILURE],
    ['AES128-GCM-SHA256', HANDSHAKE_FAILURE],
    ['ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-AES256-GCM-SHA384'],
    ['ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-ECDSA-CHACHA20-POLY1305'],
  ])('over TLS 1.2, a client offering only %s gets %s', async (offered, outcome) => {
    expect(await handshakeTls12(offered)).toBe(outcome);
  });

  it('over TLS 1.2, agrees to ECDHE with AES-GCM when a client offers everything it knows', async () => {
    expect(await handshakeTls12('ALL:@SECLEVEL=0')).toBe('ECDHE-ECDSA-AES128-GCM-SHA256');
  });

  it('refuses a TLS 1.2 renegotiation with a no_renegotiation alert', async () => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      ca: tls.cert,
      servername: 'localhost',
      maxVersion: 'TLSv1.2',
    });
    await once(socket, 'secureConnect');
    const failed = once(socket, 'error') as Promise<[NodeJS.ErrnoException]>;
    expect(socket.renegotiate({ rejectUnauthorized: true }, () => undefined)).toBe(true);
    const [error] = await failed;
    expect(error.code).toBe('ERR_SSL_NO_RENEGOTIATION');
    socket.destroy();
  });

  // The same checks with OpenSSL's own client, where the machine has one.
  it.runIf(openssl !== undefined)(
    'openssl s_client: CBC suites refused, ECDHE-ECDSA-AES128-GCM-SHA256 agreed',
    async () => {
      // Asynchronous: the server runs in this process.
      const sClient = (cipher: string) =>
        new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(openssl as string, [
            's_client',
            '-connect',
            `127.0.0.1:${port}`,
            '-tls1_2',
            '-cipher',
            cipher,
          ]);
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
          child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
          child.stdin.end();
          child.once('close', (status) => resolve({ status, stdout, stderr }));
        });
      const cbc = await sClient('ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-ECDSA-AES128-SHA256');
      expect(cbc.status).not.toBe(0);
      expect(cbc.stderr).toContain('alert handshake failure');
      const gcm = await sClient('ECDHE-ECDSA-AES128-GCM-SHA256');
      expect(gcm.status).toBe(0);
      expect(gcm.stdout).toContain('Cipher is ECDHE-ECDSA-AES128-GCM-SHA256');
    },
  );

  it('gives a plaintext HTTP client no AdmissionReview', async () => {
    const body = JSON.stringify(admissionReview({ uid: 'uid-plain', operation: 'CREATE', object: CLEANUP_JOB }));
    await expect(request(http, { port, method: 'POST', path: '/mutate', body })).rejects.toMatchObject({
      code: 'ECONNRESET',
    });
  });
});

describe('hookguard serve (the built CLI)', () => {
  it('generates a development certificate, serves HTTPS and exits 0 on SIGTERM', async () => {
    const serve = await ServeProcess.start();
    const { port, lines } = serve;
    try {
      const ready = lines.find((line) => line.msg === 'hookguard ready');
      expect(ready).toMatchObject({ service: 'hookguard', mode: 'enforce', argocdVersion: 'unknown' });
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: 'no TLS certificate configured (server.tls.certFile/keyFile): generated a self-signed development certificate for localhost, valid 30 days',
        }),
      );

      const health = await request(https, {
        port,
        method: 'GET',
        path: '/healthz',
        tls: { rejectUnauthorized: false },
      });
      expect([health.status, JSON.parse(health.body)]).toEqual([200, { status: 'ok' }]);
      const readiness = await request(https, {
        port,
        method: 'GET',
        path: '/readyz',
        tls: { rejectUnauthorized: false },
      });
      // No kubeconfig and no service account in this environment: discovery is off, said once, and it serves.
      const offReason = 'no kubeconfig and no in-cluster service account: not running in a cluster';
      expect([readiness.status, JSON.parse(readiness.body)]).toEqual([
        200,
        {
          status: 'ready',
          discovery: { enabled: false, reason: offReason },
          flux: { enabled: false, reason: offReason, helmControllers: [] },
          namespaces: { enabled: false, reason: offReason },
          apiDiscovery: { enabled: false, reason: offReason },
          selfTest: { enabled: false, reason: offReason },
        },
      ]);
      // The same probes, and the metrics, over plain HTTP on the probe port, apart from the webhook's TLS port.
      expect(serve.probePort).not.toBe(port);
      const plain = (path: string) => request(http, { port: serve.probePort, method: 'GET', path });
      const probeHealth = await plain('/healthz');
      expect([probeHealth.status, JSON.parse(probeHealth.body)]).toEqual([200, { status: 'ok' }]);
      const probeReadiness = await plain('/readyz');
      expect([probeReadiness.status, JSON.parse(probeReadiness.body)]).toEqual([
        readiness.status,
        JSON.parse(readiness.body),
      ]);
      const metrics = await plain('/metrics');
      expect([metrics.status, metrics.body]).toEqual([200, expect.stringContaining('hookguard_')]);
      const webhookOnProbePort = await request(http, {
        port: serve.probePort,
        method: 'POST',
        path: '/mutate',
        body: '{}',
      });
      expect([webhookOnProbePort.status, JSON.parse(webhookOnProbePort.body)]).toEqual([
        404,
        { error: 'no route POST /mutate; hookguard serves GET /healthz, GET /readyz, GET /metrics' },
      ]);
      expect(lines.filter((line) => line.msg === 'Argo CD discovery off')).toEqual([
        expect.objectContaining({ level: 30, reason: offReason }),
      ]);

      serve.child.kill('SIGTERM');
      // It keeps serving for server.shutdownDelayMs first (see lifecycle.test.ts).
      expect(await serve.exitWithin(DEFAULTS.server.shutdownDelayMs + 5000), serve.stderr).toBe(0);
      expect(lines).toContainEqual(
        expect.objectContaining({
          msg: 'shutting down (SIGTERM): /readyz fails, requests still served for 5000 ms (server.shutdownDelayMs), then finishing in-flight requests; exit within 20000 ms',
          signal: 'SIGTERM',
          shutdownDelayMs: 5000,
        }),
      );
    } finally {
      serve.stop();
    }
  });
});
