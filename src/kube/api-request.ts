// A GET to the API server whose answer comes back as the bytes received, for the sweep's paged lists: client-node's
// typed clients would turn every page into model objects and back (most of the sweep's CPU went there), and the
// sweep reads only a few items of each page (src/kube/list-scan.ts). The connection is client-node's own: server,
// TLS, credentials (tokens, exec plugins, client certificates) and proxy all come from KubeConfig.applyToHTTPSOptions.
import http from 'node:http';
import https from 'node:https';
import { ApiException, type KubeConfig } from '@kubernetes/client-node';

/** Idle connections are unref'd by Node's agent: they never keep the process alive. */
const KEPT_ALIVE = {
  http: new http.Agent({ keepAlive: true, maxSockets: 1 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 1 }),
};

export interface ApiRequest {
  /** The API path and its query, e.g. `/api/v1/pods?limit=500`. */
  path: string;
  accept: string;
  /** An answer not complete by then is abandoned (an error with no status: retried as "no answer"). */
  timeoutMs: number;
}

/**
 * Where a caller that reads many large answers one after the other wants them received: one buffer, grown as
 * needed and reused. An answer of a megabyte, allocated and freed hundreds of times, fragments the C heap that
 * Buffers come from, and the process's RSS grows with every listing (15 MiB over a sweep of 200,000 objects).
 */
export class ReceiveBuffer {
  private space = Buffer.allocUnsafeSlow(64 * 1024);
  private used = 0;

  reset(): void {
    this.used = 0;
  }

  append(chunk: Buffer): void {
    if (this.used + chunk.length > this.space.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.space.length * 2, this.used + chunk.length));
      this.space.copy(grown, 0, 0, this.used);
      this.space = grown;
    }
    chunk.copy(this.space, this.used);
    this.used += chunk.length;
  }

  /** What was received: valid until the next reset. */
  contents(): Buffer {
    return this.space.subarray(0, this.used);
  }
}

/**
 * GET `request.path`: the body of a 2xx answer, in `into` (valid until its next use) or in a Buffer of its own. Any other status rejects with client-node's ApiException (the Status
 * body as text, the headers), as its typed clients do, so one reading of failures (src/kube/api-failure.ts) serves
 * both.
 */
export async function getBody(
  kubeConfig: KubeConfig,
  request: ApiRequest,
  into = new ReceiveBuffer(),
): Promise<Buffer> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  // Concatenated, not resolved: a server URL may carry a path of its own (an API proxy's prefix).
  const url = new URL(`${cluster.server.replace(/\/+$/, '')}${request.path}`);
  const options: https.RequestOptions = { method: 'GET', headers: { Accept: request.accept } };
  await kubeConfig.applyToHTTPSOptions(options);
  const transport = url.protocol === 'http:' ? http : https;
  // client-node makes a new agent without keep-alive for every call: one connection, and one TLS handshake, per page.
  // Its TLS settings are on the request options too, so a kept-alive agent serves as well; a proxy's agent (another
  // class) stays.
  if (options.agent?.constructor === https.Agent || options.agent?.constructor === http.Agent)
    options.agent = url.protocol === 'http:' ? KEPT_ALIVE.http : KEPT_ALIVE.https;
  return new Promise<Buffer>((resolve, reject) => {
    const outgoing = transport.request(url, options, (response) => {
      into.reset();
      response.on('data', (chunk: Buffer) => into.append(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const body = into.contents();
        const status = response.statusCode ?? 0;
        if (status >= 200 && status <= 299) {
          resolve(body);
          return;
        }
        const headers = Object.fromEntries(
          Object.entries(response.headers).map(([name, value]) => [name, String(value)]),
        );
        reject(new ApiException(status, `HTTP ${status}`, body.toString('utf8'), headers));
      });
    });
    outgoing.setTimeout(request.timeoutMs, () =>
      outgoing.destroy(new Error(`no answer from the API server within ${request.timeoutMs / 1000}s`)),
    );
    outgoing.on('error', reject);
    outgoing.end();
  });
}
