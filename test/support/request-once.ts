// One HTTP(S) request from a test or the bench, with the whole answer read: status, headers, body as text, and the TLS
// protocol the connection used (undefined over plain HTTP).
import type http from 'node:http';
import https from 'node:https';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  protocol: string | undefined;
}

/** Sends `options` with `body` (if any) through `client`, and resolves once the whole answer is in. */
export function requestOnce(
  options: https.RequestOptions,
  body?: string | Buffer,
  client: typeof http | typeof https = https,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = client.request(options, (response) => {
      // Read now: a keep-alive agent takes the socket back once the body has ended.
      const socket = response.socket as { getProtocol?: () => string | null } | null;
      const protocol = socket?.getProtocol?.() ?? undefined;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          protocol,
        }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}
