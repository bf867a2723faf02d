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

  it('closes a connection that sends no request within the headers timeout after its handshake', async () => {
    // Node waits for a first request forever: before, this connection stayed open until the test ended.
    const connection = await RawConnection.open(port, [tls.cert]);
    const elapsed = await timeUntil(connection.closed);
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(2500);
  });
});

// The default timeouts (nothing here is cut off by time) with a limit of 8 connections.
describe('the connection limit (real TLS)', () => {
  const LIMIT = 8;
  let limited: FastifyInstance;
  let limitedPort: number;

  beforeAll(async () => {
    limited = buildApp(loadConfig({ overrides: { 'server.maxConnections': LIMIT } }), {
      logger: pino({ level: 'silent' }),
      tls,
    });
    await limited.listen({ host: '127.0.0.1', port: 0 });
    limitedPort = (limited.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await limited.close();
  });

  const isClosed = (connection: RawConnection) => connection.socket.destroyed;

  it('keeps a slot free: each connection past the limit closes the oldest idle one, and each is answered', async () => {
    const connections: RawConnection[] = [];
    for (let index = 0; index < LIMIT + 4; index++) {
      const connection = await RawConnection.open(limitedPort, [tls.cert]);
      connections.push(connection);
      const reply = await connection.request('POST', '/mutate', body(`uid-slot-${index}`));
      expect([reply.status, JSON.parse(reply.body).response.uid]).toEqual([200, `uid-slot-${index}`]);
    }
    // The 8th arrival closed the 1st, ... the 12th the 5th: the 7 newest stay open, one slot stays free.
    await eventually(() => connections.slice(0, 5).every(isClosed), 'the 5 oldest connections closed');
    expect(connections.map(isClosed)).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    for (const connection of connections.slice(5))
      expect((await connection.request('GET', '/healthz')).status).toBe(200);
    for (const connection of connections) connection.destroy();
  });

  it('refuses a connection only while every connection is busy, and answers the busy ones in full', async () => {
    const payload = body('uid-busy');
    const head = requestHead('POST', '/mutate', Buffer.byteLength(payload));
    // Headers and half a body: a request in flight on each connection.
    const busy: RawConnection[] = [];
    let requestsBegun = 0;
    const begun = () => requestsBegun++;
    limited.server.on('request', begun);
    for (let index = 0; index < LIMIT; index++) {
      const connection = await RawConnection.open(limitedPort, [tls.cert]);
      connection.write(head + payload.slice(0, 10));
      busy.push(connection);
      // Busy once the server has read the headers: until then the connection is idle, and the next could close it.
      await eventually(() => requestsBegun === index + 1, 'the server reading the request headers');
    }
    limited.server.off('request', begun);
    await expect(RawConnection.open(limitedPort, [tls.cert])).rejects.toThrow();
    // One request completes: it is answered in full, then its connection, idle at the limit, makes room.
    const [first, ...others] = busy as [RawConnection, ...RawConnection[]];
    first.write(payload.slice(10));
    const reply = await first.response();
    expect([reply.status, JSON.parse(reply.body).response.uid]).toEqual([200, 'uid-busy']);
    await first.closed;
    const again = await RawConnection.open(limitedPort, [tls.cert]);
    expect((await again.request('GET', '/healthz')).status).toBe(200);
    for (const connection of others) {
      connection.write(payload.slice(10));
      expect((await connection.response()).status).toBe(200);
    }
    for (const connection of [...others, again]) connection.destroy();
  });
});
