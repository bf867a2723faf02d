import { once } from 'node:events';
import { connect as tcpConnect, type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import { generateDevCertificate, type TlsMaterial } from '../../src/tls/certificates.js';
import { eventually } from '../support/log-sink.js';
import { hookJob } from '../support/objects.js';
import { RawConnection, requestHead } from '../support/raw-http.js';
import { admissionReview } from '../support/reviews.js';

// Small limits so that each abusive client is cut off within about a second; the defaults are the same mechanisms.
const LIMITS = {
  'server.tlsHandshakeTimeoutMs': 500,
  'server.headersTimeoutMs': 500,
  'server.requestTimeoutMs': 1000,
  'server.keepAliveTimeoutMs': 1000,
  'server.maxHeaderSizeBytes': 4096,
  'server.maxConnections': 8,
};

let tls: TlsMaterial;
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  tls = await generateDevCertificate();
  app = buildApp(loadConfig({ overrides: LIMITS }), { logger: pino({ level: 'silent' }), tls });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await app.close();
});

const body = (uid: string) => JSON.stringify(admissionReview({ uid, operation: 'CREATE', object: hookJob() }));

function openConnections(): Promise<number> {
  return new Promise((resolve, reject) =>
    app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

/** Milliseconds until `closed` settles. */
async function timeUntil(closed: Promise<unknown>): Promise<number> {
  const started = performance.now();
  await closed;
  return performance.now() - started;
}

/** A well-behaved client, busy on fresh connections until `stop()`: every request must be answered. */
function wellBehavedClient() {
  let stopped = false;
  const done = (async () => {
    let answered = 0;
    while (!stopped) {
      const connection = await RawConnection.open(port, [tls.cert]);
      const reply = await connection.request('POST', '/mutate', body(`uid-${answered}`));
      expect([reply.status, JSON.parse(reply.body).response.uid]).toEqual([200, `uid-${answered}`]);
      connection.destroy();
      answered++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return answered;
  })();
  return {
    stop: async () => {
      stopped = true;
      return done;
    },
  };
}

describe('timeouts and limits against slow or abusive clients (real TLS)', () => {
  it('cuts off a client that sends its headers a line at a time (slowloris), with 408, while others keep being served', async () => {
    const others = wellBehavedClient();
    const slow = await RawConnection.open(port, [tls.cert]);
    slow.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\n');
    const drip = setInterval(() => slow.write(`X-Slow-${Date.now()}: 1\r\n`), 100);
    const elapsed = await timeUntil(slow.closed);
    clearInterval(drip);
    expect(slow.unread).toMatch(/^HTTP\/1\.1 408 /);
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(2500);
    expect(await others.stop()).toBeGreaterThan(3);
  });

  it('cuts off a client that sends its body a byte at a time at the request timeout, with 408', async () => {
    const slow = await RawConnection.open(port, [tls.cert]);
    const payload = body('uid-slow-body');
    slow.write(requestHead('POST', '/mutate', Buffer.byteLength(payload)));
    let sent = 0;
    const drip = setInterval(() => slow.write(payload[sent++] ?? ''), 50);
    const elapsed = await timeUntil(slow.closed);
    clearInterval(drip);
    expect(slow.unread).toMatch(/^HTTP\/1\.1 408 /);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(3000);
  });

  it('drops a TCP connection that never starts the TLS handshake at the handshake timeout', async () => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    const elapsed = await timeUntil(once(socket, 'close'));
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(2500);
  });

  it('closes an idle keep-alive connection at the keep-alive timeout, after serving requests on it', async () => {
    const connection = await RawConnection.open(port, [tls.cert]);
    for (const uid of ['uid-ka-1', 'uid-ka-2']) {
      const reply = await connection.request('POST', '/mutate', body(uid));
      expect([reply.status, reply.headers.connection, reply.headers['keep-alive']]).toEqual([
        200,
        'keep-alive',
        'timeout=1',
      ]);
    }
    const elapsed = await timeUntil(connection.closed);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(2500);
  });

  it('answers 431 to headers over the size limit', async () => {
    const connection = await RawConnection.open(port, [tls.cert]);
    connection.write(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'x'.repeat(5000)}\r\n\r\n`);
    await connection.closed;
    expect(connection.unread).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('refuses connections over the connection limit and takes them again once below it', async () => {
    const held = await Promise.all(Array.from({ length: 8 }, () => RawConnection.open(port, [tls.cert])));
    await expect(RawConnection.open(port, [tls.cert])).rejects.toThrow();
    for (const connection of held) expect((await connection.request('GET', '/healthz')).status).toBe(200);
    held[0]?.destroy();
    // Closed on this side is not yet closed on the server's: wait until the server counts one connection less.
    await eventually(async () => (await openConnections()) < LIMITS['server.maxConnections'], 'a free connection slot');
    const again = await RawConnection.open(port, [tls.cert]);
    expect((await again.request('GET', '/healthz')).status).toBe(200);
    for (const connection of [...held, again]) connection.destroy();
  });
});
