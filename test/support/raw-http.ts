// A raw HTTP/1.1 client over one real TLS socket, for tests that need to control the connection itself: keep it open
// across a certificate switch or a shutdown, send a request in pieces, or see exactly when the server cuts it off.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { connect, type TLSSocket } from 'node:tls';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  readonly closed: Promise<void>;

  private constructor(readonly socket: TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    // A close resolves a pending read, which then fails for lack of a complete response.
    void this.closed.then(() => this.waiting?.());
    socket.on('error', () => undefined);
  }

  /**
   * A TLS connection to 127.0.0.1 that fails unless the server presents one of `trusted`. Pinned by fingerprint
   * rather than verified as a chain: the development certificates tests switch between share one subject name,
   * which OpenSSL's chain building cannot tell apart.
   */
  static async open(port: number, trusted: readonly string[]): Promise<RawConnection> {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
    await once(socket, 'secureConnect');
    const connection = new RawConnection(socket);
    if (!trusted.map(fingerprintOf).includes(connection.peerFingerprint)) {
      socket.destroy();
      throw new Error(`the server presented an unexpected certificate ${connection.peerFingerprint}`);
    }
    return connection;
  }

  /** SHA-256 fingerprint of the certificate the server presented on this connection. */
  get peerFingerprint(): string {
    return this.socket.getPeerCertificate().fingerprint256;
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** Sends a whole request and reads its response. */
  async request(method: string, path: string, body?: string): Promise<RawResponse> {
    this.write(requestHead(method, path, body === undefined ? undefined : Buffer.byteLength(body)) + (body ?? ''));
    return this.response();
  }

  /** Reads the next complete response (Content-Length framed, as hookguard always answers). */
  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = parseResponse(this.buffer);
      if (parsed) {
        this.buffer = this.buffer.subarray(parsed.length);
        return parsed.response;
      }
      if (this.socket.destroyed || this.socket.readableEnded)
        throw new Error(
          `connection closed before a complete response: ${JSON.stringify(this.buffer.toString('utf8'))}`,
        );
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  /** Everything received so far that is not part of a response already read. */
  get unread(): string {
    return this.buffer.toString('utf8');
  }

  destroy(): void {
    this.socket.destroy();
  }
}

export function requestHead(method: string, path: string, contentLength?: number): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost'];
  if (contentLength !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${contentLength}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function parseResponse(buffer: Buffer): { response: RawResponse; length: number } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...headerLines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  const bodyLength = Number(headers['content-length'] ?? 0);
  const total = end + 4 + bodyLength;
  if (buffer.length < total) return undefined;
  return {
    response: {
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: buffer.subarray(end + 4, total).toString('utf8'),
    },
    length: total,
  };
}

export function fingerprintOf(certPem: string): string {
  return new X509Certificate(certPem).fingerprint256;
}
