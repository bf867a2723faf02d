// Timeouts and limits against slow or abusive clients; docs/server.md ("Limits") explains each value.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { Config } from '../config/keys.js';

type ServerConfig = Config['server'];

/** Options for https.createServer (TLS and HTTP/1.1 parser limits). */
export function serverLimits(server: ServerConfig) {
  return {
    handshakeTimeout: server.tlsHandshakeTimeoutMs,
    headersTimeout: server.headersTimeoutMs,
    maxHeaderSize: server.maxHeaderSizeBytes,
    // Node enforces the headers and request timeouts only at this interval (30 s by default).
    connectionsCheckingInterval: Math.min(1_000, server.headersTimeoutMs),
  };
}

/** Options fastify sets on the server it creates. */
export function fastifyLimits(server: ServerConfig) {
  return {
    keepAliveTimeout: server.keepAliveTimeoutMs,
    requestTimeout: server.requestTimeoutMs,
    bodyLimit: server.bodyLimitBytes,
  };
}

/**
 * Keeps the webhook reachable while one client hoards connections. Node drops every connection over
 * `server.maxConnections` at once, so 1,000 idle connections from one client would shut the API server out for the
 * whole keep-alive timeout. Two bounds on idle connections, neither of which the API server meets (it sends a request
 * as soon as it has connected, and keeps a few dozen connections at most):
 * - a connection that has sent no request `headersTimeoutMs` after its TLS handshake is closed (Node itself waits
 *   for the first request forever);
 * - at the limit, one slot is kept free: whenever a connection arrives, or a request ends, with the connections at the limit,
 *   the oldest idle connection (no request in flight) of the address holding the most idle connections is closed,
 *   after anything already written to it. Only when every connection is busy is a new one refused (by Node).
 */
export function guardConnections(
  server: TlsServer,
  limits: Pick<ServerConfig, 'maxConnections' | 'headersTimeoutMs'>,
): void {
  /** Connections with no request in flight, oldest idle first. */
  const idle = new Set<TLSSocket>();
  const waitingForFirstRequest = new Map<TLSSocket, NodeJS.Timeout>();
  let open = 0;
  /** Connections closed to make room, not yet gone: counted once, not closed for again. */
  let closing = 0;

  const atLimit = () => open - closing >= limits.maxConnections;
  const busy = (socket: TLSSocket) => {
    idle.delete(socket);
    clearTimeout(waitingForFirstRequest.get(socket));
    waitingForFirstRequest.delete(socket);
  };
  const requestEnded = (socket: TLSSocket) => {
    idle.delete(socket);
    if (socket.destroyed) return;
    idle.add(socket);
    if (atLimit()) closeOneIdle();
  };

  server.on('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => open--);
    if (atLimit()) closeOneIdle();
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    // A request begun by then is Node's to time out (408 at headersTimeoutMs); one not begun is ours to close.
    const handshakeBytes = socket.bytesRead;
    const timer = setTimeout(() => {
      if (socket.bytesRead === handshakeBytes) socket.destroy();
    }, limits.headersTimeoutMs);
    timer.unref();
    waitingForFirstRequest.set(socket, timer);
    socket.once('close', () => busy(socket));
    // Idle, but not a reason to make room: its arrival was (a newcomer would otherwise close itself at the limit).
    idle.add(socket);
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as TLSSocket;
    busy(socket);
    response.once('close', () => requestEnded(socket));
  });

  function closeOneIdle(): void {
    const perAddress = new Map<string, TLSSocket[]>();
    for (const socket of idle) {
      const address = socket.remoteAddress ?? '';
      const sockets = perAddress.get(address);
      if (sockets) sockets.push(socket);
      else perAddress.set(address, [socket]);
    }
    let hoarded: TLSSocket[] = [];
    for (const sockets of perAddress.values()) if (sockets.length > hoarded.length) hoarded = sockets;
    const oldest = hoarded[0];
    if (oldest === undefined) return;
    busy(oldest);
    closing++;
    oldest.once('close', () => closing--);
    oldest.destroySoon();
  }
}
