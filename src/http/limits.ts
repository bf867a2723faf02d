// Timeouts and limits against slow or abusive clients; docs/server.md ("Limits") explains each value.
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
