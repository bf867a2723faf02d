// The measuring parts of `npm run bench:apiserver` (bench/apiserver.ts): a client of the real kube-apiserver that
// times each create from send to answer with a bounded number in flight, and an open-loop load at a fixed rate
// straight to a webhook's port.
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { requestOnce, type Reply } from '../test/support/request-once.js';

/** The API server as the kubeconfig's current user reaches it, over kept-alive connections. */
export class KubeApi {
  private constructor(
    private readonly options: https.RequestOptions,
    private readonly agent: https.Agent,
  ) {}

  /** `connections`: the most connections open at once, one per request in flight. */
  static async connect(kubeconfig: string, connections: number): Promise<KubeApi> {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfig);
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error(`${kubeconfig} names no current cluster`);
    const server = new URL(cluster.server);
    const options: https.RequestOptions = { host: server.hostname, port: server.port };
    await kubeConfig.applyToHTTPSOptions(options);
    // client-node's own agent opens a connection, and a TLS handshake, per request; a client that creates objects in
    // bulk (kubectl, Helm, Argo CD) keeps its connections, and the handshakes would otherwise be most of what is timed.
    const agent = new https.Agent({ keepAlive: true, maxSockets: connections });
    return new KubeApi({ ...options, agent }, agent);
  }

  request(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Reply> {
    return requestOnce(
      {
        ...this.options,
        method,
        path,
        headers: {
          ...this.options.headers,
          accept: 'application/json',
          'content-type': 'application/json',
          ...headers,
        },
      },
      body,
    );
  }

  /** As request(), failing with the API server's answer unless its status is one of `expected`. */
  async expect(expected: readonly number[], method: string, path: string, body?: unknown): Promise<Reply> {
    const reply = await this.request(method, path, body === undefined ? undefined : JSON.stringify(body));
    if (!expected.includes(reply.status))
      throw new Error(`${method} ${path}: ${reply.status} ${reply.body.slice(0, 500)}`);
    return reply;
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface Create {
  /** What it is, for the tables: "hook Job" or "plain Pod". */
  kind: string;
  /** The collection to POST to. */
  path: string;
  /** Serialised before the clock starts: the client's own JSON work is no part of the API server's latency. */
  body: string;
  /** Impersonation of the user who would send it. */
  headers: Record<string, string>;
}

export interface Timed {
  kind: string;
  ms: number;
  status: number;
  /** The start of the answer, when it is not 201 Created. */
  error?: string;
}

/** POSTs every create with at most `inFlight` at once, each timed from its send to the end of its answer. */
export async function timeCreates(api: KubeApi, creates: readonly Create[], inFlight: number): Promise<Timed[]> {
  const timed: Timed[] = [];
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < creates.length; index = next++) {
      const { kind, path, body, headers } = creates[index] as Create;
      const started = performance.now();
      const reply = await api.request('POST', path, body, headers);
      const ms = performance.now() - started;
      timed[index] =
        reply.status === 201
          ? { kind, ms, status: reply.status }
          : { kind, ms, status: reply.status, error: reply.body.slice(0, 300) };
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return timed;
}

/** The value at quantile `q` (0 to 1) of `values`, by nearest rank; NaN when there is none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export interface WebhookRequest {
  path: string;
  body: string;
}

export interface OpenLoopResult {
  /** Latency of each counted request answered 200, in ms, from when the schedule said to send it. */
  latencies: number[];
  errors: number;
  /** Every request sent, the lead-in's too. */
  sent: number;
  /** From the first counted request's scheduled time to the last answer. */
  seconds: number;
}

/**
 * Room for the requests a slow server has not answered yet: an open loop sends on schedule whatever is outstanding,
 * and a request waits for a connection only once this many are busy (that wait is counted in its latency). Below
 * hookguard's server.maxPendingConnectionsPerAddress (128), past which it drops the connections one address opens in
 * a burst (the echo has no such limit, so more would fail hookguard alone).
 */
const OPEN_LOOP_CONNECTIONS = 64;

/**
 * Sends `requests` in turn to 127.0.0.1:`port` at `rate` per second for `leadSeconds` + `seconds`, on schedule whether
 * or not earlier answers are in (open loop: a slow answer does not hold back the next request, as a closed loop's
 * would, which would hide the queue it builds). Latency is counted from the scheduled time, so a client that falls
 * behind its own schedule is counted against the server too, the same for every server. The lead-in is not counted:
 * it opens the connections (a TLS handshake each) and warms the server at the rate to be measured.
 */
export async function openLoop(
  port: number,
  ca: string,
  requests: readonly WebhookRequest[],
  rate: number,
  leadSeconds: number,
  seconds: number,
): Promise<OpenLoopResult> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: OPEN_LOOP_CONNECTIONS });
  const lead = Math.round(rate * leadSeconds);
  const total = lead + Math.round(rate * seconds);
  const latencies: number[] = [];
  let errors = 0;
  const answered: Promise<void>[] = [];
  const started = performance.now();
  for (let sent = 0; sent < total;) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
    for (; sent < due; sent++) {
      const scheduled = started + (sent * 1000) / rate;
      const counted = sent >= lead;
      const { path, body } = requests[sent % requests.length] as WebhookRequest;
      const options = {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        ca,
        servername: 'localhost',
        headers: { 'content-type': 'application/json' },
      };
      answered.push(
        requestOnce(options, body).then(
          (reply) => {
            if (!counted) return;
            if (reply.status === 200) latencies.push(performance.now() - scheduled);
            else errors++;
          },
          () => {
            if (counted) errors++;
          },
        ),
      );
    }
    // Timers fire about once a millisecond: at 2,000/s, two or three requests leave per turn.
    await sleep(1);
  }
  const countedFrom = started + (lead * 1000) / rate;
  await Promise.all(answered);
  agent.destroy();
  return { latencies, errors, sent: total, seconds: (performance.now() - countedFrom) / 1000 };
}

/**
 * The API server's own clock on a webhook's calls: `apiserver_admission_webhook_admission_duration_seconds`, which
 * k8s.io/apiserver v0.37.2 (pkg/admission/plugin/webhook/{mutating,validating}/dispatcher.go) observes around each
 * call, from building the AdmissionReview to applying the answer's patch: the round trip and the webhook's work, and
 * nothing of the rest of the create (nor of the cluster's load on etcd and the controllers).
 */
export interface WebhookClock {
  calls: number;
  seconds: number;
  /** Calls that took at most `le` seconds, by the histogram's bucket bounds (5 ms, 25 ms, 100 ms, …). */
  atMost: Map<string, number>;
}

const WEBHOOK_METRIC = 'apiserver_admission_webhook_admission_duration_seconds_';
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** The CREATE calls to each webhook of `names`, keyed `name type` (type: admit or validating), since the API server started. */
export async function webhookClocks(
  api: KubeApi,
  names: { has(name: string): boolean },
): Promise<Map<string, WebhookClock>> {
  const reply = await api.request('GET', '/metrics', undefined, { accept: 'text/plain' });
  if (reply.status !== 200) throw new Error(`GET /metrics: ${reply.status} ${reply.body.slice(0, 300)}`);
  const clocks = new Map<string, WebhookClock>();
  for (const line of reply.body.split('\n')) {
    if (!line.startsWith(WEBHOOK_METRIC)) continue;
    const open = line.indexOf('{');
    const close = line.lastIndexOf('}');
    if (open < 0 || close < open) continue;
    const labels = new Map([...line.slice(open + 1, close).matchAll(LABEL)].map((match) => [match[1], match[2]]));
    const name = labels.get('name') ?? '';
    if (!names.has(name) || labels.get('operation') !== 'CREATE') continue;
    const key = `${name} ${labels.get('type') ?? ''}`;
    const clock = clocks.get(key) ?? { calls: 0, seconds: 0, atMost: new Map<string, number>() };
    clocks.set(key, clock);
    // Each label set (rejected, code) is a series of its own: summed.
    const value = Number(line.slice(close + 1).trim());
    const series = line.slice(WEBHOOK_METRIC.length, open);
    if (series === 'count') clock.calls += value;
    else if (series === 'sum') clock.seconds += value;
    else if (series === 'bucket') {
      const le = labels.get('le') ?? '';
      clock.atMost.set(le, (clock.atMost.get(le) ?? 0) + value);
    }
  }
  return clocks;
}

/** What each webhook of `after` was called for since `before`. */
export function clocksSince(
  before: ReadonlyMap<string, WebhookClock>,
  after: ReadonlyMap<string, WebhookClock>,
): Map<string, WebhookClock> {
  const since = new Map<string, WebhookClock>();
  for (const [key, clock] of after) {
    const earlier = before.get(key);
    since.set(key, {
      calls: clock.calls - (earlier?.calls ?? 0),
      seconds: clock.seconds - (earlier?.seconds ?? 0),
      atMost: new Map([...clock.atMost].map(([le, count]) => [le, count - (earlier?.atMost.get(le) ?? 0)])),
    });
  }
  return since;
}
