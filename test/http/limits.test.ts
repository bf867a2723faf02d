import { once } from 'node:events';
import { connect as tcpConnect, type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp, buildProbeApp } from '../../src/http/app.js';
import { Metrics } from '../../src/http/metrics.js';
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

  it('answers a body trickling in slower than server.minBodyBytesPerSecond with 408, long before server.requestTimeoutMs', async () => {
    const slow = await RawConnection.open(limitedPort, [tls.cert]);
    slow.write(requestHead('POST', '/mutate', 1_000_000));
    const drip = setInterval(() => slow.write('{'), 200);
    const elapsed = await timeUntil(slow.closed);
    clearInterval(drip);
    const body = JSON.stringify({
      error: 'the request body arrived slower than 10240 bytes per second (server.minBodyBytesPerSecond)',
    });
    expect(slow.unread).toBe(
      `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    // A second of grace, then judged every half second: the 30 s request timeout would have held it 30 s.
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
    expect(elapsed).toBeLessThan(5_000);
  });

  it('at the limit with every body still arriving, a newcomer closes the oldest of them, and the rest are answered in full', async () => {
    const payload = body('uid-busy');
    const head = requestHead('POST', '/mutate', Buffer.byteLength(payload));
    // Headers and half a body: a request in flight on each connection, pending until its body has arrived.
    const halfSent: RawConnection[] = [];
    let requestsBegun = 0;
    const begun = () => requestsBegun++;
    limited.server.on('request', begun);
    // One slot short of the limit: the newcomer fills it, and room is made at once for the next.
    for (let index = 0; index < LIMIT - 1; index++) {
      const connection = await RawConnection.open(limitedPort, [tls.cert]);
      connection.write(head + payload.slice(0, 10));
      halfSent.push(connection);
      // In flight once the server has read the headers: until then it has sent no request, and goes first.
      await eventually(() => requestsBegun === index + 1, 'the server reading the request headers');
    }
    limited.server.off('request', begun);
    // A body that has not arrived is its sender's to lose, not a reason to refuse the API server's next connection.
    const newcomer = await RawConnection.open(limitedPort, [tls.cert]);
    expect((await newcomer.request('GET', '/healthz')).status).toBe(200);
    const [oldest, ...others] = halfSent as [RawConnection, ...RawConnection[]];
    await oldest.closed;
    expect(oldest.unread).toBe('');
    expect(others.map((connection) => connection.socket.destroyed)).toEqual(others.map(() => false));
    for (const connection of others) {
      connection.write(payload.slice(10));
      const reply = await connection.response();
      expect([reply.status, JSON.parse(reply.body).response.uid]).toEqual([200, 'uid-busy']);
    }
    for (const connection of [...others, newcomer]) connection.destroy();
  });
});

// Issue 25, finding 6: the plain-HTTP probe port listens on every address too; before, it had no connection cap and
// no headers timeout. The same guard as the webhook's port, apart from the handshake it does not have.
describe("the probe port has the webhook port's limits (plain HTTP)", () => {
  const PENDING_PER_ADDRESS = 4;
  let probes: FastifyInstance;
  let probePort: number;
  let metrics: Metrics;

  beforeAll(async () => {
    metrics = new Metrics();
    probes = buildProbeApp(
      loadConfig({ overrides: { ...LIMITS, 'server.maxPendingConnectionsPerAddress': PENDING_PER_ADDRESS } }),
      { logger: pino({ level: 'silent' }), metrics },
    );
    await probes.listen({ host: '127.0.0.1', port: 0 });
    probePort = (probes.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await probes.close();
  });

  /** A plain TCP connection from `localAddress`, and when the server closed it (ms after it connected). */
  async function plainConnection(localAddress: string) {
    const socket = tcpConnect({ host: '127.0.0.1', port: probePort, localAddress });
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    await once(socket, 'connect');
    const started = performance.now();
    const closedAfterMs = once(socket, 'close').then(() => performance.now() - started);
    return { socket, closedAfterMs, received: () => received };
  }

  const healthz = async () => {
    const connection = await plainConnection('127.0.0.1');
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    await connection.closedAfterMs;
    return connection.received();
  };

  it('closes at once each connection past the pending limit of one address, and answers another address', async () => {
    const hoarded = [];
    for (let index = 0; index < PENDING_PER_ADDRESS + 2; index++) hoarded.push(await plainConnection('127.0.0.2'));
    const [kept, refused] = [hoarded.slice(0, PENDING_PER_ADDRESS), hoarded.slice(PENDING_PER_ADDRESS)];
    for (const connection of refused) expect(await connection.closedAfterMs).toBeLessThan(400);
    expect(kept.map((connection) => connection.socket.destroyed)).toEqual(kept.map(() => false));
    expect(await healthz()).toMatch(/^HTTP\/1\.1 200 /);
    // Sending nothing, the kept ones go at the headers timeout (500 ms).
    for (const connection of kept) expect(await connection.closedAfterMs).toBeGreaterThanOrEqual(400);
    const { text } = await metrics.exposition();
    expect(text).toContain('hookguard_connections_closed_total{listener="probe",reason="pending_per_address"} 2');
    expect(text).toContain(
      `hookguard_connections_closed_total{listener="probe",reason="no_request"} ${PENDING_PER_ADDRESS}`,
    );
  });

  it('cuts off slowloris headers with 408 at the headers timeout', async () => {
    const slow = await plainConnection('127.0.0.2');
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    const drip = setInterval(() => slow.socket.write(`X-Slow-${Date.now()}: 1\r\n`), 100);
    const elapsed = await slow.closedAfterMs;
    clearInterval(drip);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(2500);
  });

  it('answers 431 to headers over the size limit', async () => {
    const big = await plainConnection('127.0.0.2');
    big.socket.write(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'x'.repeat(5000)}\r\n\r\n`);
    await big.closedAfterMs;
    expect(big.received()).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('keeps a slot free at server.maxConnections (8): the hoarding address loses its oldest idle connection', async () => {
    const idle = [];
    for (let index = 0; index < 8; index++) {
      const connection = await plainConnection('127.0.0.2');
      connection.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await eventually(() => connection.received().includes('"ok"'), 'the answer');
      idle.push(connection);
    }
    // The 8th arrival made room by closing the 1st; the kubelet's next probe, from another address, is answered.
    await idle[0]!.closedAfterMs;
    expect(await healthz()).toMatch(/^HTTP\/1\.1 200 /);
    for (const connection of idle) connection.socket.destroy();
  });
});
