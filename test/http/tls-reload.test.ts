import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Server as TlsServer } from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import { watchCertificates, type CertificateWatch } from '../../src/tls/reload.js';
import { generateDevCertificate, type KeyPair } from '../../src/tls/certificates.js';
import { fingerprintOf, RawConnection } from '../support/raw-http.js';
import { admissionReview } from '../support/reviews.js';
import { hookJob } from '../support/objects.js';
import { SecretVolume } from '../support/secret-volume.js';

type LogLine = { level: number; msg: string; err?: { message: string } };

interface Harness {
  app: FastifyInstance;
  port: number;
  volume: SecretVolume;
  watch: CertificateWatch;
  lines: LogLine[];
  /** Resolves at the next reload (the pair now in use) or rejection (the error). */
  next(): Promise<{ reloaded: KeyPair } | { rejected: Error }>;
}

let pairs: KeyPair[];
let cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  pairs = await Promise.all([generateDevCertificate(), generateDevCertificate(), generateDevCertificate()]);
});

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A real HTTPS app serving pair 0 from a Secret-like volume, and the watcher serve would start for it. */
async function harness(
  options: { intervalMs?: number; filesAtStart?: KeyPair; reloaded?: (pair: KeyPair) => void } = {},
): Promise<Harness> {
  const [first] = pairs as [KeyPair];
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-reload-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const volume = new SecretVolume(dir);
  const atStart = options.filesAtStart ?? first;
  volume.update({ 'tls.crt': atStart.cert, 'tls.key': atStart.key });
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      callback();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const app = buildApp(loadConfig(), { logger, tls: first });
  await app.listen({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => app.close());
  const waiters: Array<(event: { reloaded: KeyPair } | { rejected: Error }) => void> = [];
  const watch = watchCertificates({
    server: app.server as unknown as TlsServer,
    certFile: volume.certFile,
    keyFile: volume.keyFile,
    current: first,
    intervalMs: options.intervalMs ?? 60_000,
    logger,
    reloaded: (pair) => {
      waiters.shift()?.({ reloaded: pair });
      options.reloaded?.(pair);
    },
    rejected: (error) => waiters.shift()?.({ rejected: error }),
  });
  cleanups.push(() => watch.close());
  return {
    app,
    port: (app.server.address() as AddressInfo).port,
    volume,
    watch,
    lines,
    next: () => new Promise((resolve) => waiters.push(resolve)),
  };
}

const allCas = () => pairs.map((pair) => pair.cert);

async function connect(port: number): Promise<RawConnection> {
  const connection = await RawConnection.open(port, allCas());
  cleanups.push(() => connection.destroy());
  return connection;
}

const mutateBody = (uid: string) => JSON.stringify(admissionReview({ uid, operation: 'CREATE', object: hookJob() }));

describe('serving certificate reload (real TLS, a Secret-like volume updated by a ..data symlink swap)', () => {
  it('switches new connections to the new certificate, keeps an open connection working, and fails no request meanwhile', async () => {
    const [first, second] = pairs as [KeyPair, KeyPair];
    const { port, volume, next } = await harness();
    const before = await connect(port);
    expect(before.peerFingerprint).toBe(fingerprintOf(first.cert));
    expect((await before.request('GET', '/healthz')).status).toBe(200);

    // Requests on fresh connections all through the switch: none may fail.
    let switched = false;
    const seen = new Set<string>();
    const load = (async () => {
      let count = 0;
      for (let extra = 0; extra < 5; count++) {
        const connection = await connect(port);
        const reply = await connection.request('POST', '/mutate', mutateBody(`uid-load-${count}`));
        expect([reply.status, JSON.parse(reply.body).response.uid]).toEqual([200, `uid-load-${count}`]);
        seen.add(connection.peerFingerprint);
        connection.destroy();
        if (switched) extra++;
      }
      return count;
    })();
    const reload = next();
    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    expect(await reload).toEqual({ reloaded: { cert: second.cert, key: second.key } });
    switched = true;
    expect(await load).toBeGreaterThanOrEqual(5);
    expect(seen).toContain(fingerprintOf(second.cert));

    const after = await connect(port);
    expect(after.peerFingerprint).toBe(fingerprintOf(second.cert));
    // The connection opened before the switch keeps its session and its certificate.
    const reply = await before.request('POST', '/mutate', mutateBody('uid-before'));
    expect([reply.status, JSON.parse(reply.body).response.uid]).toEqual([200, 'uid-before']);
    expect(before.peerFingerprint).toBe(fingerprintOf(first.cert));
  });

  it.each([
    [
      'a certificate whose key is another one',
      (good: KeyPair, other: KeyPair) => ({ cert: other.cert, key: good.key }),
      /key values mismatch/,
    ],
    ['a half-written certificate', (good: KeyPair) => ({ cert: good.cert.slice(0, 300), key: good.key }), /./],
    ['a half-written key', (good: KeyPair) => ({ cert: good.cert, key: good.key.slice(0, 60) }), /./],
    ['empty files', () => ({ cert: '', key: '' }), /./],
  ])(
    'keeps the previous certificate and logs an error for %s; a good pair later is taken',
    async (_name, bad, message) => {
      const [first, second, third] = pairs as [KeyPair, KeyPair, KeyPair];
      const { port, volume, next, lines } = await harness();
      const rejection = next();
      const broken = bad(second, third);
      volume.update({ 'tls.crt': broken.cert, 'tls.key': broken.key });
      const event = await rejection;
      expect('rejected' in event && event.rejected.message).toMatch(message);
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 50, msg: 'certificate reload failed: keeping the previous certificate' }),
      );
      const during = await connect(port);
      expect(during.peerFingerprint).toBe(fingerprintOf(first.cert));
      expect((await during.request('GET', '/healthz')).status).toBe(200);

      const reload = next();
      volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
      expect(await reload).toEqual({ reloaded: { cert: second.cert, key: second.key } });
      expect((await connect(port)).peerFingerprint).toBe(fingerprintOf(second.cert));
    },
  );

  it('re-reads the files periodically, so a change no file event announced is still taken', async () => {
    const [, second] = pairs as [KeyPair, KeyPair];
    // The files hold pair 1 before the watch starts: no event will ever announce it.
    const { port, next } = await harness({ intervalMs: 300, filesAtStart: second });
    expect(await next()).toEqual({ reloaded: { cert: second.cert, key: second.key } });
    expect((await connect(port)).peerFingerprint).toBe(fingerprintOf(second.cert));
  });

  it('a reload whose observer throws does not stop later reloads (issue 25, finding 12)', async () => {
    const [, second, third] = pairs as [KeyPair, KeyPair, KeyPair];
    let throws = 1;
    const { port, volume, watch, next } = await harness({
      reloaded: () => {
        if (throws-- > 0) throw new Error('the metrics could not take it');
      },
    });
    const firstReload = next();
    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    await firstReload;
    // The round that threw is over; the next change is read and served.
    await watch.check().catch(() => undefined);
    const reload = next();
    volume.update({ 'tls.crt': third.cert, 'tls.key': third.key });
    expect(await reload).toEqual({ reloaded: { cert: third.cert, key: third.key } });
    expect((await connect(port)).peerFingerprint).toBe(fingerprintOf(third.cert));
  });

  it('does nothing when the files still hold the pair in use', async () => {
    const { watch, lines } = await harness();
    await watch.check();
    expect(lines.filter((line) => line.msg.includes('certificate'))).toEqual([]);
  });
});
