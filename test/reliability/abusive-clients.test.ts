// Abusive clients against the built server (child process, real TLS, 127.0.0.1): a body over the limit, declared
// or streamed; hundreds of idle connections; plaintext and garbage on the TLS port. Meanwhile a well-behaved client
// keeps getting its answers, promptly. Slowloris headers, a body that never ends, idle keep-alive, the handshake
// timeout, oversized headers and the connection limit are issue 4's test/http/limits.test.ts, against the timeouts
// in the config; they are not repeated here.
import { once } from 'node:events';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { hookJob } from '../support/objects.js';
import { admissionReview } from '../support/reviews.js';
import {
  postReview,
  startHookguard,
  writeCertificate,
  type CertificateFiles,
  type ServerProcess,
} from '../support/server-process.js';

describe('slow and abusive clients (built server, child process, real TLS)', () => {
  let certificate: CertificateFiles;
  let server: ServerProcess;
  let config: Readonly<Config>;
  let agent: https.Agent;

  beforeAll(async () => {
    certificate = writeCertificate(await generateDevCertificate());
    config = loadConfig();
    server = await startHookguard(certificate);
    agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  });

  afterAll(async () => {
    agent?.destroy();
    await server?.stop();
    certificate?.remove();
  });

  const validBody = JSON.stringify(
    admissionReview({ uid: 'uid-probe', operation: 'CREATE', object: hookJob({ 'helm.sh/hook': 'post-delete' }) }),
  );

  /** One well-behaved request over the kept-alive connection: its status and the uid answered. */
  const probe = () => postReview(server, certificate.cert, validBody, agent);

  /**
   * Probes one request at a time (100 ms apart) while `abuse` runs: every answer must be a 200 with the uid, and at
   * least one must come while the abuse is still going on. Counted, not timed: a wall-clock bound on a shared
   * machine measures the machine.
   */
  async function servedThroughout<T>(abuse: () => Promise<T>): Promise<T> {
    const answers: { status: number; uid: string | undefined; duringAbuse: boolean }[] = [];
    let running = true;
    const prober = (async () => {
      while (running) {
        const { status, uid } = await probe();
        answers.push({ status, uid, duringAbuse: running });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      return await abuse();
    } finally {
      running = false;
      await prober;
      expect(answers.filter((answer) => answer.duringAbuse).length).toBeGreaterThan(0);
      for (const answer of answers) expect(answer).toMatchObject({ status: 200, uid: 'uid-probe' });
    }
  }

  /** A TLS connection from `localAddress`: the abusers connect from 127.0.0.2, the probing client from 127.0.0.1. */
  function connect(localAddress = '127.0.0.1'): Promise<tls.TLSSocket> {
    // node:tls hands localAddress to node:net, though its types do not list it.
    const options = {
      host: '127.0.0.1',
      port: server.port,
      localAddress,
      ca: certificate.cert,
      servername: 'localhost',
    };
    const socket = tls.connect(options as tls.ConnectionOptions);
    socket.on('error', () => undefined);
    return once(socket, 'secureConnect').then(() => socket);
  }

  /** Resolves with the ms from now until the server closes the socket, and what it sent before closing. */
  function closedAfter(socket: tls.TLSSocket): Promise<{ ms: number; received: string }> {
    const started = performance.now();
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    return new Promise((resolve) => socket.once('close', () => resolve({ ms: performance.now() - started, received })));
  }

  // Declared up front, the size is refused before the body is read; chunked, the count stops it mid-stream.
  it.each(['Content-Length', 'chunked'] as const)(
    'answers a body over the limit (%s) with 413 naming the limit, and keeps answering others',
    async (framing) => {
      const limit = config.server.bodyLimitBytes;
      await servedThroughout(async () => {
        const socket = await connect();
        const closed = closedAfter(socket);
        const length = framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${limit + 1024}`;
        socket.write(`POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${length}\r\n\r\n`);
        // Sent gently (one chunk in flight, none once the answer starts), so the answer is not lost to a reset
        // caused by the server closing a socket with unread data; with a declared length no body is needed at all.
        let answered = false;
        socket.once('data', () => (answered = true));
        const chunk = Buffer.alloc(16 * 1024, 'x');
        const framed =
          framing === 'chunked'
            ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
            : undefined;
        for (let sent = 0; framed && sent < limit + 1024 && !answered && !socket.destroyed; sent += chunk.length) {
          if (!socket.write(framed))
            await Promise.race([once(socket, 'drain'), once(socket, 'close'), once(socket, 'data')]).catch(
              () => undefined,
            );
        }
        const { received } = await Promise.race([
          closed,
          new Promise<{ received: string }>((resolve) =>
            setTimeout(() => resolve({ received: 'no close within 10 s' }), 10_000),
          ),
        ]);
        socket.destroy();
        expect(received).toMatch(/^HTTP\/1\.1 413 /);
        expect(received).toContain(`{"error":"request body is larger than the ${limit}-byte limit"}`);
      });
    },
  );

  // Pending (no request sent) and from one address: server.maxPendingConnectionsPerAddress (128) are kept, the rest
  // closed at once, and the other address is served throughout.
  it('keeps answering while one address opens 300 TLS connections that send nothing', async () => {
    const perAddress = config.server.maxPendingConnectionsPerAddress;
    await servedThroughout(async () => {
      const attempts = await Promise.allSettled(Array.from({ length: 300 }, () => connect('127.0.0.2')));
      const idle = attempts.flatMap((attempt) => (attempt.status === 'fulfilled' ? [attempt.value] : []));
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const stillOpen = idle.filter((socket) => !socket.destroyed && !socket.readableEnded).length;
      for (const socket of idle) socket.destroy();
      expect(stillOpen).toBe(perAddress);
    });
  });

  // Before, these 1,000 filled server.maxConnections (1,000) for the 95 s keep-alive timeout, and every new
  // connection, the API server's included, was dropped at once.
  it('answers a new client while one client holds 1,000 idle keep-alive TLS connections', async () => {
    const limit = config.server.maxConnections;
    const hoarded: tls.TLSSocket[] = [];
    try {
      for (let batch = 0; batch < limit; batch += 50) {
        const sockets = await Promise.all(
          Array.from({ length: Math.min(50, limit - batch) }, () => connect('127.0.0.2')),
        );
        await Promise.all(
          sockets.map(async (socket) => {
            const answered = once(socket, 'data');
            socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
            await answered;
          }),
        );
        hoarded.push(...sockets);
      }
      // A real client on a fresh connection (the API server opening one more) is answered, several times over.
      for (let attempt = 0; attempt < 5; attempt++) {
        const { status, uid } = await postReview(server, certificate.cert, validBody, false);
        expect([status, uid]).toEqual([200, 'uid-probe']);
      }
      // Each of those closed one of the hoarder's idle connections, oldest first; most are still open.
      const closed = hoarded.filter((socket) => socket.destroyed || socket.readableEnded).length;
      expect(closed).toBeGreaterThanOrEqual(1);
      expect(closed).toBeLessThan(50);
    } finally {
      for (const socket of hoarded) socket.destroy();
    }
  });

  it('shrugs off plaintext HTTP and garbage bytes on the TLS port while serving TLS clients', async () => {
    await servedThroughout(async () => {
      for (const garbage of [
        'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
        '\x16\x03\x01\x00\x05hello',
        Buffer.alloc(4096, 0xff).toString('latin1'),
      ]) {
        const socket = net.connect(server.port, '127.0.0.1');
        socket.on('error', () => undefined);
        await once(socket, 'connect');
        socket.write(garbage, 'latin1');
        const [received = ''] = await Promise.race([
          once(socket, 'close').then(() => ['']),
          once(socket, 'data').then(([data]) => [String(data)]),
          new Promise<string[]>((resolve) => setTimeout(() => resolve(['still open after 5 s']), 5_000)),
        ]);
        socket.destroy();
        // No HTTP answer in plaintext: at most a TLS alert record (content type 21).
        expect(received.startsWith('HTTP')).toBe(false);
        expect(received).not.toBe('still open after 5 s');
      }
    });
  });
});
