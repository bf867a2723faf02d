// Timeouts and limits against slow or abusive clients, the same on the webhook's TLS port and the plain-HTTP probe
// port; docs/server.md ("Limits") explains each value.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config/keys.js';

type ServerConfig = Config['server'];

/** Options for http.createServer: the HTTP/1.1 parser's limits. */
export function httpLimits(server: ServerConfig) {
  return {
    headersTimeout: server.headersTimeoutMs,
    maxHeaderSize: server.maxHeaderSizeBytes,
    // Node enforces the headers and request timeouts only at this interval (30 s by default).
    connectionsCheckingInterval: Math.min(1_000, server.headersTimeoutMs),
  };
}

/** Options for https.createServer: the TLS handshake's limit besides the HTTP/1.1 parser's. */
export function tlsLimits(server: ServerConfig) {
  return { handshakeTimeout: server.tlsHandshakeTimeoutMs, ...httpLimits(server) };
}

/** Options fastify sets on the server it creates. */
export function fastifyLimits(server: ServerConfig) {
  return {
    keepAliveTimeout: server.keepAliveTimeoutMs,
    requestTimeout: server.requestTimeoutMs,
    bodyLimit: server.bodyLimitBytes,
  };
}

/** Why the guard closed a connection, as `hookguard_connections_closed_total` labels it. */
export type ConnectionCut = 'pending_per_address' | 'at_limit' | 'no_request' | 'slow_body';
export const CONNECTION_CUTS: readonly ConnectionCut[] = ['pending_per_address', 'at_limit', 'no_request', 'slow_body'];

type GuardLimits = Pick<
  ServerConfig,
  'maxConnections' | 'maxPendingConnectionsPerAddress' | 'headersTimeoutMs' | 'minBodyBytesPerSecond'
>;

/**
 * Where a connection is: `handshake` (TLS not done yet), `waiting` (no request yet), `request` (one in flight),
 * `idle` (between requests, after at least one). A connection is **pending** until the request it is sending has
 * arrived whole: in `handshake`, in `waiting`, or in `request` with its body still arriving.
 */
type Phase = 'handshake' | 'waiting' | 'request' | 'idle';

interface Connection {
  readonly raw: Socket;
  /** Its address's connections, kept in byAddress while any of them is open. */
  readonly peers: AddressConnections;
  phase: Phase;
  /** The socket HTTP is spoken on: the raw one, or the TLS socket once the handshake is done. */
  socket: Socket;
  request: IncomingMessage | undefined;
  /** When the request in flight began (its headers read), and the bytes read from the socket by then. */
  requestStartedAt: number;
  bytesAtRequestStart: number;
  firstRequestTimer: NodeJS.Timeout | undefined;
  closing: boolean;
}

/** One address's connections: how many are open, and the pending and the idle ones, each Set oldest first. */
interface AddressConnections {
  open: number;
  pending: Set<Connection>;
  idle: Set<Connection>;
}

/** The grace a request body gets before its rate is judged: a TCP retransmission or a GC pause is not an attack. */
const BODY_RATE_GRACE_MS = 1_000;
const BODY_RATE_CHECK_MS = 500;

/**
 * Keeps a listener reachable for the API server while other clients misbehave. What a client holds without having
 * sent a whole request costs that client's own address, never anyone else's connections:
 * - **per address**, at most `maxPendingConnectionsPerAddress` connections may be pending (TLS handshake not done,
 *   no request yet, or a request body still arriving); a connection past that is closed at once. The API server
 *   sends its request as soon as it has connected, so its connections are pending for milliseconds;
 * - a request body must arrive at `minBodyBytesPerSecond` on average (after a second of grace): a body trickling in
 *   gets 408 and its connection is closed (Node alone holds it until `requestTimeoutMs`, 30 s);
 * - a connection that has sent no request `headersTimeoutMs` after its TLS handshake is closed (Node itself waits
 *   for the first request forever); `tlsHandshakeTimeoutMs` bounds the handshake;
 * - at `maxConnections`, one slot is kept free (Node drops every connection over it at once): whenever a connection
 *   arrives or a request ends with the connections at the limit, the address holding the most connections that
 *   are pending or idle loses its oldest one: idle first (after anything already written to it), then one that has
 *   sent no request, then one whose body is still arriving. A connection whose request has arrived whole is never
 *   closed; only when every connection is such a one is a new one refused (by Node).
 * The API server's keep-alive connections, idle between its requests, are closed only at the limit, and only when
 * its address holds the most: a client hoarding connections holds more.
 */
export function guardConnections(
  server: HttpServer,
  limits: GuardLimits,
  options: { tls: boolean; closed?: (reason: ConnectionCut) => void },
): void {
  server.maxConnections = limits.maxConnections;
  const byAddress = new Map<string, AddressConnections>();
  const bySocket = new WeakMap<Socket, Connection>();
  /** TLS sockets are found by their raw socket's peer until the handshake is done. */
  const inHandshake = new Map<string, Connection>();
  /** Connections with a request in flight whose body may still be arriving. */
  const receiving = new Set<Connection>();
  let rateCheck: NodeJS.Timeout | undefined;
  let open = 0;
  /** Connections closed by the guard, not yet gone: counted once, not closed again. */
  let closing = 0;
  const peerOf = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;
  const atLimit = () => open - closing >= limits.maxConnections;
  const addressOf = (address: string): AddressConnections => {
    let connections = byAddress.get(address);
    if (!connections) byAddress.set(address, (connections = { open: 0, pending: new Set(), idle: new Set() }));
    return connections;
  };
  const bodyArrived = (connection: Connection) => connection.phase === 'request' && connection.request?.complete;
  /** Forgets the pending requests whose bodies have arrived since (Node tells no one when a body is complete). */
  const settle = (connections: AddressConnections) => {
    for (const connection of connections.pending)
      if (bodyArrived(connection)) {
        connections.pending.delete(connection);
        receiving.delete(connection);
      }
  };

  function close(connection: Connection, reason: ConnectionCut, goodbye?: string): void {
    if (connection.closing) return;
    connection.closing = true;
    closing++;
    options.closed?.(reason);
    connection.peers.pending.delete(connection);
    connection.peers.idle.delete(connection);
    receiving.delete(connection);
    clearTimeout(connection.firstRequestTimer);
    if (goodbye !== undefined && connection.socket.writable) {
      connection.socket.end(goodbye);
      // A client that reads nothing cannot hold the socket open by not taking the goodbye.
      setTimeout(() => connection.raw.destroy(), 1_000).unref();
    } else if (connection.phase === 'idle') connection.socket.destroySoon();
    else connection.raw.destroy();
  }

  /** Closes one connection to keep a slot free; never `newcomer`, the connection whose arrival asked for room. */
  function makeRoom(newcomer?: Connection): void {
    let hoarder: AddressConnections | undefined;
    let most = 0;
    for (const connections of byAddress.values()) {
      settle(connections);
      const ownNewcomer = newcomer !== undefined && connections.pending.has(newcomer) ? 1 : 0;
      const closable = connections.pending.size + connections.idle.size - ownNewcomer;
      if (closable > most) [hoarder, most] = [connections, closable];
    }
    if (!hoarder) return;
    const victim =
      first(hoarder.idle, () => true) ??
      first(hoarder.pending, (connection) => connection !== newcomer && connection.phase !== 'request') ??
      first(hoarder.pending, (connection) => connection !== newcomer);
    if (victim) close(victim, 'at_limit');
  }

  function waitForFirstRequest(connection: Connection): void {
    const socket = connection.socket;
    const bytesBefore = socket.bytesRead;
    // A request begun by then is Node's to time out (408 at headersTimeoutMs); one not begun is ours to close.
    connection.firstRequestTimer = setTimeout(() => {
      if (connection.phase === 'waiting' && socket.bytesRead === bytesBefore) close(connection, 'no_request');
    }, limits.headersTimeoutMs);
    connection.firstRequestTimer.unref();
  }

  function checkBodyRates(): void {
    const now = performance.now();
    for (const connection of receiving) {
      if (connection.phase !== 'request' || bodyArrived(connection)) {
        receiving.delete(connection);
        connection.peers.pending.delete(connection);
        continue;
      }
      const judgedMs = now - connection.requestStartedAt - BODY_RATE_GRACE_MS;
      const received = connection.socket.bytesRead - connection.bytesAtRequestStart;
      if (judgedMs > 0 && received < (limits.minBodyBytesPerSecond * judgedMs) / 1000)
        close(connection, 'slow_body', slowBodyAnswer(limits.minBodyBytesPerSecond));
    }
    if (receiving.size === 0) {
      clearInterval(rateCheck);
      rateCheck = undefined;
    }
  }

  server.on('connection', (raw: Socket) => {
    open++;
    const address = raw.remoteAddress ?? '';
    const connections = addressOf(address);
    connections.open++;
    const connection: Connection = {
      raw,
      peers: connections,
      phase: options.tls ? 'handshake' : 'waiting',
      socket: raw,
      request: undefined,
      requestStartedAt: 0,
      bytesAtRequestStart: 0,
      firstRequestTimer: undefined,
      closing: false,
    };
    const peer = peerOf(raw);
    raw.once('close', () => {
      open--;
      if (connection.closing) closing--;
      if (inHandshake.get(peer) === connection) inHandshake.delete(peer);
      clearTimeout(connection.firstRequestTimer);
      connections.pending.delete(connection);
      connections.idle.delete(connection);
      receiving.delete(connection);
      if (--connections.open === 0) byAddress.delete(address);
    });
    settle(connections);
    const overAddressLimit = connections.pending.size >= limits.maxPendingConnectionsPerAddress;
    connections.pending.add(connection);
    if (overAddressLimit) return close(connection, 'pending_per_address');
    if (options.tls) inHandshake.set(peer, connection);
    else {
      bySocket.set(raw, connection);
      waitForFirstRequest(connection);
    }
    if (atLimit()) makeRoom(connection);
  });
  if (options.tls)
    server.on('secureConnection', (socket: Socket) => {
      const peer = peerOf(socket);
      const connection = inHandshake.get(peer);
      if (!connection) return;
      inHandshake.delete(peer);
      if (connection.closing) return;
      connection.socket = socket;
      connection.phase = 'waiting';
      bySocket.set(socket, connection);
      waitForFirstRequest(connection);
    });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const connection = bySocket.get(request.socket);
    if (!connection || connection.closing) return;
    clearTimeout(connection.firstRequestTimer);
    connection.phase = 'request';
    connection.request = request;
    connection.requestStartedAt = performance.now();
    connection.bytesAtRequestStart = connection.socket.bytesRead;
    connection.peers.idle.delete(connection);
    connection.peers.pending.add(connection);
    receiving.add(connection);
    if (limits.minBodyBytesPerSecond > 0 && rateCheck === undefined) {
      rateCheck = setInterval(checkBodyRates, BODY_RATE_CHECK_MS);
      rateCheck.unref();
    }
    response.once('close', () => requestEnded(connection));
  });

  function requestEnded(connection: Connection): void {
    const connections = connection.peers;
    connections.pending.delete(connection);
    receiving.delete(connection);
    connection.request = undefined;
    if (connection.closing || connection.raw.destroyed) return;
    connection.phase = 'idle';
    connections.idle.add(connection);
    if (atLimit()) makeRoom();
  }
}

function first<T>(items: Set<T>, accept: (item: T) => boolean): T | undefined {
  for (const item of items) if (accept(item)) return item;
  return undefined;
}

/** The answer to a request whose body arrives too slowly, as Node answers its own request timeout. */
function slowBodyAnswer(minBodyBytesPerSecond: number): string {
  const body = JSON.stringify({
    error: `the request body arrived slower than ${minBodyBytesPerSecond} bytes per second (server.minBodyBytesPerSecond)`,
  });
  return `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
