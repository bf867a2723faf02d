// A small HTTP proxy in front of the cluster's real kube-apiserver, for the faults the real one cannot make on demand
// (issue 36): a watch cut mid-stream, 410 Expired at will, 429 and 5xx, a watch that never answers, an API server
// that goes away and comes back on the same address. Everything else is the real API server's answer, passed on
// unchanged: the client's bearer token reaches it as sent, so RBAC is the real one, and the proxy holds no identity of
// its own. Plain HTTP on 127.0.0.1 towards the client (as client-node accepts), TLS with the cluster's CA upstream.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { statusBody } from '../../support/api-status.js';
import { adminApi, adminKubeConfig, kubeconfig } from './cluster.js';

export interface InjectedFailure {
  method?: string;
  /** Matches when the request path (without query) contains this. */
  pathIncludes?: string;
  /** Only watch requests (true) or only non-watch requests (false). */
  watch?: boolean;
  /** Only list requests carrying a continue token (true) or only those without one (false). */
  continued?: boolean;
  /** Only requests of this user (a token's subject, system:serviceaccount:NS:NAME). */
  user?: string;
  status: number;
  retryAfterSeconds?: number;
  /** How many requests to fail; default 1. */
  times?: number;
}

export interface ProxiedRequest {
  method: string;
  /** The path without the query. */
  path: string;
  query: Record<string, string>;
  /** The bearer token's subject, read without checking (the API server checks it); '' without a token. */
  user: string;
  watch: boolean;
  /** The status the client got (the injected one, or the API server's); 0 until the answer starts. */
  status: number;
  /** Date.now() on arrival: the order and spacing of calls, for tests that assert them. */
  at: number;
}

export type WatchFault = 'none' | 'end-at-once' | 'never-end' | 'no-answer';

interface OpenWatch {
  response: ServerResponse;
  upstream: { destroy(): void };
  /** The resourceVersion of the last event passed on (or asked for): what an expiry names as too old. */
  resourceVersion: string;
}

/** Hop-by-hop and encoding headers the proxy does not pass on: node frames each side itself. */
const DROPPED_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'accept-encoding', 'host']);

/** The bodies the real API server answers these codes with. */
function injectedAnswer(status: number, query: Record<string, string>): { contentType: string; body: string } {
  // 429 comes from the priority-and-fairness (or max-in-flight) filter before any handler, as text:
  // apiserver v0.37.2 pkg/server/filters/priority-and-fairness.go tooManyRequests(), http.Error.
  if (status === 429)
    return { contentType: 'text/plain; charset=utf-8', body: 'Too many requests, please try again later.\n' };
  // A continue token older than etcd's compaction: apiserver v0.37.2 pkg/storage/etcd3/errors.go
  // handleCompactedErrorForPaging, NewResourceExpired(inconsistentContinue) with a token to go on at the latest
  // resourceVersion (the same start key, rv -1: storage.EncodeContinue).
  if (status === 410 && query.continue !== undefined)
    return { contentType: 'application/json', body: JSON.stringify(expiredContinue(query.continue)) };
  // 410 on the request itself: the storage's NewResourceExpired for a resourceVersion older than it keeps (apiserver
  // v0.37.2 pkg/storage/errors.go, "too old resource version: %d (%d)"), as the API server answers a watch that it
  // cannot start from there rather than sending it as the stream's first event.
  if (status === 410) {
    const requested = Number(query.resourceVersion) || 0;
    const message = `too old resource version: ${requested} (${requested + 1})`;
    return { contentType: 'application/json', body: JSON.stringify(statusBody(410, message, {}, 'Expired')) };
  }
  const message =
    status === 503
      ? 'the server is currently unable to handle the request'
      : `Internal error occurred: injected by the test fault proxy (HTTP ${status})`;
  return { contentType: 'application/json', body: JSON.stringify(statusBody(status, message)) };
}

function expiredContinue(token: string): Record<string, unknown> {
  let next: string | undefined;
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Record<string, unknown>;
    next = Buffer.from(JSON.stringify({ ...decoded, rv: -1 })).toString('base64url');
  } catch {
    next = undefined;
  }
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: next === undefined ? {} : { continue: next },
    status: 'Failure',
    message:
      next === undefined
        ? 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.'
        : 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    reason: 'Expired',
    code: 410,
  };
}

function subjectOf(authorization: string | undefined): string {
  const token = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1];
  const payload = token?.split('.')[1];
  if (!payload) return '';
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' ? claims.sub : '';
  } catch {
    return '';
  }
}

function upstreamOf(): { host: string; port: number; agent: Agent } {
  const cluster = adminKubeConfig().getCurrentCluster();
  if (!cluster?.caFile) throw new Error(`${kubeconfig} names no cluster with a certificate-authority file`);
  const server = new URL(cluster.server);
  return {
    host: server.hostname,
    port: Number(server.port),
    agent: new Agent({ ca: readFileSync(cluster.caFile), keepAlive: true }),
  };
}

export class FaultProxy {
  readonly requests: ProxiedRequest[] = [];
  watchFault: WatchFault = 'none';
  /**
   * When set, a list or watch of a whole cluster's collection (a path without `/namespaces/NS/`) answers only the
   * objects in these namespaces, and those without one; a list or watch of Namespaces only these: as a cluster holding
   * only them would. A process the test runs cluster-wide (the hook watcher) then never acts on another test's objects.
   * Read as each object passes: a namespace added shows in the watches already open.
   */
  namespaces: Set<string> | undefined;
  /**
   * Asks for full lists where the client asked for metadata only (`Accept: …;as=PartialObjectMetadataList…,
   * application/json`): the real API server's answer to a client of a server that cannot convert lists.
   */
  fullLists = false;
  beforeForward:
    | ((request: { method: string; path: string; query: Record<string, string>; user: string }) => Promise<void> | void)
    | undefined;
  /**
   * Rewrites the body of the real answer to a GET of exactly this path (not a watch), when set: for what the test
   * cluster is not and cannot become without changing it for every test beside it (say, OpenShift's API groups).
   */
  rewrite: { path: string; body: (real: string) => string } | undefined;
  private readonly failures: InjectedFailure[] = [];
  private readonly watches = new Set<OpenWatch>();
  /** Answers held back by `never-end` and `no-answer`: cut when the proxy stops. */
  private readonly held = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private readonly upstream = upstreamOf();
  private server: Server | undefined;
  private listeningPort = 0;

  /** A proxy on 127.0.0.1 (PORT, or any free one) to the cluster's API server. */
  static async start(port = 0): Promise<FaultProxy> {
    const proxy = new FaultProxy();
    await proxy.listen(port);
    return proxy;
  }

  get port(): number {
    return this.listeningPort;
  }

  get url(): string {
    return `http://127.0.0.1:${this.listeningPort}`;
  }

  get openWatches(): number {
    return this.watches.size;
  }

  /** A KubeConfig whose only cluster is this proxy and whose user is that bearer token (`.exportConfig()` for a file). */
  kubeConfig(token: string): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      // Plain HTTP: there is no certificate to verify, and client-node refuses http:// unless told so.
      clusters: [{ name: 'fault-proxy', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'token', token }],
      contexts: [{ name: 'fault-proxy', cluster: 'fault-proxy', user: 'token' }],
      currentContext: 'fault-proxy',
    });
    return config;
  }

  fail(failure: InjectedFailure): void {
    this.failures.push({ ...failure, times: failure.times ?? 1 });
  }

  /** Cuts every open watch mid-stream, as a proxy or a half-open connection does. */
  dropWatches(): void {
    for (const watch of this.watches) {
      watch.upstream.destroy();
      watch.response.destroy();
    }
    this.watches.clear();
  }

  /** Ends every open watch with the ERROR event the watch cache sends when a watcher falls behind its history. */
  expireWatches(): void {
    for (const watch of this.watches) {
      const requested = Number(watch.resourceVersion) || 0;
      // apiserver v0.37.2 pkg/storage/cacher/watch_cache_history.go: NewResourceExpired("too old resource version: %d (%d)").
      const status = statusBody(410, `too old resource version: ${requested} (${requested + 1})`, {}, 'Expired');
      watch.upstream.destroy();
      watch.response.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
    }
    this.watches.clear();
  }

  /** Goes away as a crashed API server does: open watches and held answers cut, new connections refused. */
  async stop(): Promise<void> {
    this.dropWatches();
    for (const response of this.held) response.destroy();
    this.held.clear();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Comes back where the clients expect it. */
  async restart(): Promise<void> {
    await this.listen(this.listeningPort);
  }

  private async listen(port: number): Promise<void> {
    const server = createServer((request, response) => void this.handle(request, response));
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    this.server = server;
    this.listeningPort = (server.address() as AddressInfo).port;
  }

  private injected(recorded: ProxiedRequest): InjectedFailure | undefined {
    const failure = this.failures.find(
      (candidate) =>
        (candidate.method === undefined || candidate.method === recorded.method) &&
        (candidate.pathIncludes === undefined || recorded.path.includes(candidate.pathIncludes)) &&
        (candidate.watch === undefined || candidate.watch === recorded.watch) &&
        (candidate.continued === undefined || candidate.continued === (recorded.query.continue !== undefined)) &&
        (candidate.user === undefined || candidate.user === recorded.user),
    );
    if (failure) {
      failure.times = (failure.times ?? 1) - 1;
      if (failure.times <= 0) this.failures.splice(this.failures.indexOf(failure), 1);
    }
    return failure;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://proxy');
    const query = Object.fromEntries(url.searchParams);
    const recorded: ProxiedRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query,
      user: subjectOf(request.headers.authorization),
      watch: query.watch === 'true' || query.watch === '1',
      status: 0,
      at: Date.now(),
    };
    this.requests.push(recorded);
    await this.beforeForward?.({ method: recorded.method, path: recorded.path, query, user: recorded.user });

    const failure = this.injected(recorded);
    if (failure) {
      const answer = injectedAnswer(failure.status, query);
      recorded.status = failure.status;
      const headers: OutgoingHttpHeaders = { 'content-type': answer.contentType };
      if (failure.retryAfterSeconds !== undefined) headers['retry-after'] = String(failure.retryAfterSeconds);
      request.resume();
      response.writeHead(failure.status, headers).end(answer.body);
      return;
    }
    if (recorded.watch && this.watchFault !== 'none') {
      request.resume();
      if (this.watchFault === 'no-answer') {
        this.held.add(response);
        return;
      }
      recorded.status = 200;
      response.writeHead(200, { 'content-type': 'application/json' });
      if (this.watchFault === 'end-at-once') response.end();
      else {
        // Open (the headers sent, as the API server sends them at once) and silent.
        response.flushHeaders();
        this.held.add(response);
      }
      return;
    }
    this.forward(request, response, recorded, url);
  }

  private forward(request: IncomingMessage, response: ServerResponse, recorded: ProxiedRequest, url: URL): void {
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(request.headers))
      if (!DROPPED_HEADERS.has(name) && value !== undefined) headers[name] = value;
    if (this.fullLists && String(headers.accept ?? '').includes('as=PartialObjectMetadataList'))
      headers.accept = 'application/json';
    const upstream = httpsRequest(
      {
        host: this.upstream.host,
        port: this.upstream.port,
        agent: this.upstream.agent,
        method: recorded.method,
        path: `${url.pathname}${url.search}`,
        headers,
      },
      (answer) => {
        recorded.status = answer.statusCode ?? 502;
        const answerHeaders: OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(answer.headers))
          if (!DROPPED_HEADERS.has(name) && value !== undefined) answerHeaders[name] = value;
        const rewrite = this.rewrite;
        if (rewrite && !recorded.watch && recorded.method === 'GET' && recorded.path === rewrite.path) {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            const body = Buffer.from(rewrite.body(Buffer.concat(chunks).toString('utf8')));
            response.writeHead(recorded.status, { ...answerHeaders, 'content-length': body.length }).end(body);
          });
          return;
        }
        const filtered = this.filtered(recorded, url);
        if (filtered && recorded.status === 200 && !recorded.watch) {
          delete answerHeaders['content-length'];
          response.writeHead(recorded.status, answerHeaders);
          this.relayFilteredList(answer, response, filtered);
          return;
        }
        response.writeHead(recorded.status, answerHeaders);
        if (!recorded.watch || recorded.status !== 200) {
          answer.pipe(response);
          return;
        }
        // The API server sends a watch's headers at once (apiserver v0.37.2 pkg/endpoints/handlers/watch.go flushes
        // them before the first event); node would hold them until the first write, and a quiet watch would look
        // unanswered to the client.
        response.flushHeaders();
        this.relayWatch(answer, response, upstream, recorded.query.resourceVersion ?? '0', filtered);
      },
    );
    upstream.on('error', () => response.destroy());
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  }

  /** What a cluster-wide GET is narrowed to, or undefined when it passes unchanged. */
  private filtered(recorded: ProxiedRequest, url: URL): Narrowed | undefined {
    if (this.namespaces === undefined || recorded.method !== 'GET' || url.pathname.includes('/namespaces/'))
      return undefined;
    return { namespaces: this.namespaces, byName: url.pathname === '/api/v1/namespaces' };
  }

  /** A List answer with only the items `kept` keeps (other bodies, a Status say, pass unchanged). */
  private relayFilteredList(answer: IncomingMessage, response: ServerResponse, kept: Narrowed): void {
    const chunks: Buffer[] = [];
    answer.on('data', (chunk: Buffer) => chunks.push(chunk));
    answer.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const list = JSON.parse(body) as { items?: unknown };
        if (Array.isArray(list.items)) {
          list.items = list.items.filter((item) => keptObject(item, kept));
          response.end(JSON.stringify(list));
          return;
        }
      } catch {
        // Not JSON: passed on as it came.
      }
      response.end(body);
    });
    answer.on('error', () => response.destroy());
  }

  /** Passes a watch on one whole event line at a time, so that an injected ERROR event never splits one. */
  private relayWatch(
    answer: IncomingMessage,
    response: ServerResponse,
    upstream: { destroy(): void },
    resourceVersion: string,
    kept?: Narrowed,
  ): void {
    const watch: OpenWatch = { response, upstream, resourceVersion };
    this.watches.add(watch);
    let pending = '';
    answer.setEncoding('utf8');
    answer.on('data', (chunk: string) => {
      pending += chunk;
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline + 1);
        pending = pending.slice(newline + 1);
        watch.resourceVersion = /"resourceVersion":"(\d+)"/.exec(line)?.[1] ?? watch.resourceVersion;
        if (kept === undefined || keptEvent(line, kept)) response.write(line);
        newline = pending.indexOf('\n');
      }
    });
    answer.on('end', () => {
      this.watches.delete(watch);
      response.end(pending);
    });
    response.on('close', () => this.watches.delete(watch));
  }
}

/** The namespaces a cluster-wide list or watch is narrowed to; byName: it is of Namespaces. */
interface Narrowed {
  namespaces: ReadonlySet<string>;
  byName: boolean;
}

/** Whether an object is one of the namespaces kept, in one of them, or (cluster-scoped) in none. */
function keptObject(object: unknown, kept: Narrowed): boolean {
  const metadata = (object as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  const namespace = kept.byName ? metadata?.name : metadata?.namespace;
  return typeof namespace !== 'string' || kept.namespaces.has(namespace);
}

/** Whether a watch event line is passed on: bookmarks and errors always, objects when keptObject() keeps them. */
function keptEvent(line: string, kept: Narrowed): boolean {
  try {
    const event = JSON.parse(line) as { type?: unknown; object?: unknown };
    return event.type === 'BOOKMARK' || event.type === 'ERROR' || keptObject(event.object, kept);
  } catch {
    return true;
  }
}

/** A token of that ServiceAccount from the TokenRequest API, valid one hour. */
export async function serviceAccountToken(namespace: string, name: string): Promise<string> {
  const request = await adminApi(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    // No audiences: the API server's own, as `kubectl create token` asks without --audience.
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`the TokenRequest of ServiceAccount ${namespace}/${name} was answered without a token`);
  return token;
}
