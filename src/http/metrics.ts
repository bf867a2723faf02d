// Prometheus metrics, in a registry of their own (never prom-client's global one, so two apps in one process, as in
// tests, never share counters).
import type { HookReason } from '../core/explain/index.js';
import { X509Certificate } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { ArgoInstances } from '../core/argocd-instances.js';
import type { OptOuts } from '../core/decide.js';
import type { Endpoint, Finding } from '../core/types.js';
import { CONNECTION_CUTS, type ConnectionCut } from './limits.js';
import type { DroppedLines } from './log-destination.js';
import { REFUSALS, type Refusal } from '../tls/switcher.js';

/** How one admission request ended, as the requests counter labels it. */
export type Outcome = 'allowed' | 'patched' | 'denied' | 'errored' | 'bad_request';
export type ErrorSource = 'rule' | 'answer' | 'http' | 'tls_reload';

const ENDPOINTS: readonly Endpoint[] = ['mutate', 'validate'];
const OUTCOMES: readonly Outcome[] = ['allowed', 'patched', 'denied', 'errored', 'bad_request'];
const ERROR_SOURCES: readonly ErrorSource[] = ['rule', 'answer', 'http', 'tls_reload'];
/** The two listeners: the webhook's TLS port and the plain-HTTP probe port. */
export type Listener = 'webhook' | 'probe';
const LISTENERS: readonly Listener[] = ['webhook', 'probe'];
// Decisions take well under a millisecond; the API server gives up after the webhook's timeoutSeconds.
const LATENCY_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface ArgoCdInstance {
  /** Namespace of the discovered controller; empty when the version is pinned by `argocd.version`. */
  namespace: string;
  version: string;
}

export interface MetricsOptions {
  /** process_* and nodejs_* metrics; off for apps built in tests. */
  processMetrics?: boolean;
  /** The Argo CD versions hookguard knows, read at scrape time. */
  argocdInstances?: () => readonly ArgoCdInstance[];
  /** Register the self-test's metrics (only where the self-test runs, so that its alerts stay quiet elsewhere). */
  selfTest?: boolean;
  /** Log lines dropped because stdout could not keep up, by kind, read at scrape time (where serve writes the log). */
  logLinesDropped?: () => Readonly<DroppedLines>;
  /** CAs hookguard did not make that the certificates' keeper removed, by where (certificates.mode self only). */
  untrustedCasRemoved?: () => Readonly<Record<'secret' | 'caBundle', number>>;
  /** Register the hook watcher's metrics (where it runs). */
  hookWatch?: boolean;
}

/** The self-test's outcomes as the counter labels them. */
const SELF_TEST_OUTCOMES = { Called: 'called', NotCalled: 'not_called', Error: 'error' } as const;
export type SelfTestOutcomeName = keyof typeof SELF_TEST_OUTCOMES;

/** What the instance gauge shows: the pinned version alone when `argocd.version` is set, else what discovery knows. */
export function knownArgoCdInstances(pinned: string | null, discovered: () => ArgoInstances): ArgoCdInstance[] {
  if (pinned !== null) return [{ namespace: '', version: pinned }];
  return [...discovered().values()].map((instance) => ({
    namespace: instance.namespace,
    version: instance.version ?? 'unknown',
  }));
}

type Tally<K extends string> = Record<K, number>;

interface LatencySeries {
  buckets: number[];
  sum: number;
  count: number;
}

const emptySeries = (): LatencySeries => ({
  buckets: LATENCY_BUCKETS_SECONDS.map(() => 0).concat(0),
  sum: 0,
  count: 0,
});

/**
 * hookguard_admission_duration_seconds, by endpoint: its counts are plain numbers too, and the registry reads them as
 * it reads any histogram (the same exposition lines as prom-client's Histogram): prom-client's observe() validates
 * and hashes the labels, and keys each bucket by the number's text, on every admission request.
 */
class LatencyHistogram {
  readonly name = 'hookguard_admission_duration_seconds';
  readonly help = 'Time from a decoded request body to the encoded answer, by endpoint.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** By endpoint: the count in each bucket (not cumulative), the last one past the highest bound, then sum and count. */
  private readonly series: Record<Endpoint, LatencySeries> = { mutate: emptySeries(), validate: emptySeries() };

  observe(endpoint: Endpoint, seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    const series = this.series[endpoint];
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS_SECONDS.length && seconds > LATENCY_BUCKETS_SECONDS[bucket]!) bucket++;
    series.buckets[bucket]! += 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** What prom-client's registry reads from a metric: each series' cumulative buckets, +Inf, sum and count. */
  async get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const endpoint of ENDPOINTS) {
      const { buckets, sum, count } = this.series[endpoint];
      let cumulative = 0;
      LATENCY_BUCKETS_SECONDS.forEach((le, index) => {
        cumulative += buckets[index]!;
        values.push({ labels: { le, endpoint }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', endpoint }, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels: { endpoint }, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: { endpoint }, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const series of Object.values(this.series)) {
      series.buckets.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}

const zeroTally = <K extends string>(keys: readonly K[]): Tally<K> =>
  Object.fromEntries(keys.map((key) => [key, 0])) as Tally<K>;

function increment(counts: Map<string, Map<string, number>>, first: string, second: string): void {
  let inner = counts.get(first);
  if (!inner) counts.set(first, (inner = new Map<string, number>()));
  inner.set(second, (inner.get(second) ?? 0) + 1);
}

export class Metrics {
  readonly registry = new Registry();
  // The per-request counts are plain numbers handed to prom-client at scrape time: its inc() hashes the labels on
  // every call, several times per admission request.
  private readonly requestCounts: Record<Endpoint, Tally<Outcome>> = {
    mutate: zeroTally(OUTCOMES),
    validate: zeroTally(OUTCOMES),
  };
  /** By rule, then action, in the order first seen. */
  private readonly ruleActionCounts = new Map<string, Map<string, number>>();
  /** By the missing mitigation's rule, then advisory, in the order first seen. */
  private readonly missingMitigationCounts = new Map<string, Map<string, number>>();
  /** By endpoint, then "skip <rule>" or "audit_mode", in the order first seen. */
  private readonly optOutCounts = new Map<string, Map<string, number>>();
  private readonly latency = new LatencyHistogram();
  private readonly errors: Counter<'source'>;
  private readonly connectionsClosed: Counter<'listener' | 'reason'>;
  private readonly tlsReloads: Counter;
  private readonly tlsPairsRefused: Counter<'reason'>;
  private readonly certificateNotAfter: Gauge;
  private readonly selfTests: Counter<'outcome'> | undefined;
  private readonly selfTestLastSuccess: Gauge | undefined;
  private readonly hookFailures: Counter<'reason'> | undefined;
  private readonly failingHooks: Gauge | undefined;

  constructor(options: MetricsOptions = {}) {
    const registers = [this.registry];
    const requestCounts = this.requestCounts;
    const ruleActionCounts = this.ruleActionCounts;
    const missingMitigationCounts = this.missingMitigationCounts;
    const optOutCounts = this.optOutCounts;
    // Every series exists from the start at 0, so rate() and absent() work before the first request.
    new Counter({
      name: 'hookguard_admission_requests_total',
      help: 'Admission requests by endpoint and decision.',
      labelNames: ['endpoint', 'decision'] as const,
      registers,
      collect() {
        this.reset();
        for (const endpoint of ENDPOINTS)
          for (const outcome of OUTCOMES) this.labels(endpoint, outcome).inc(requestCounts[endpoint][outcome]);
      },
    });
    // A metric as the registry reads one (registerMetric takes prom-client's own classes in its types).
    this.registry.registerMetric(this.latency as unknown as Metric);
    new Counter({
      name: 'hookguard_rule_actions_total',
      help: 'Rule findings by rule and action (mutate, warn, deny); in audit mode what would have been done.',
      labelNames: ['rule', 'action'] as const,
      registers,
      collect() {
        this.reset();
        for (const [rule, actions] of ruleActionCounts)
          for (const [action, count] of actions) this.labels(rule, action).inc(count);
      },
    });
    new Counter({
      name: 'hookguard_mitigation_missing_total',
      help: "Hooks allowed at /validate without a mitigation their Argo CD version needs, which the object did not opt out of: hookguard's own change was missing (the mutating webhook bypassed, failed or undone), by the mitigating rule and advisory.",
      labelNames: ['rule', 'advisory'] as const,
      registers,
      collect() {
        this.reset();
        for (const [rule, advisories] of missingMitigationCounts)
          for (const [advisory, count] of advisories) this.labels(rule, advisory).inc(count);
      },
    });
    const logLinesDropped = options.logLinesDropped;
    if (logLinesDropped)
      new Counter({
        name: 'hookguard_log_lines_dropped_total',
        help: "Log lines dropped because stdout did not take them fast enough, by line: audit (admission decisions, up to log.maxQueueBytes queued) or other (the server's own lines, a quarter more); the next line written says how many of either (linesDroppedBefore).",
        labelNames: ['line'] as const,
        registers,
        collect() {
          this.reset();
          const dropped = logLinesDropped();
          this.labels('audit').inc(dropped.audit);
          this.labels('other').inc(dropped.other);
        },
      });
    const untrustedCasRemoved = options.untrustedCasRemoved;
    if (untrustedCasRemoved)
      new Counter({
        name: 'hookguard_certificates_untrusted_cas_removed_total',
        help: 'CAs hookguard did not make, found in the Secret (where: secret) or a webhook caBundle (where: caBundle) and removed by the replica keeping the certificates (certificates.mode self).',
        labelNames: ['where'] as const,
        registers,
        collect() {
          this.reset();
          for (const [where, count] of Object.entries(untrustedCasRemoved())) this.labels(where).inc(count);
        },
      });
    new Counter({
      name: 'hookguard_opt_outs_total',
      help: 'Hook requests whose object opted out, at any Argo CD version (known, unknown or unaffected): kind skip names a rule in hookguard.io/skip, kind audit_mode is hookguard.io/mode: audit (rule empty); by endpoint.',
      labelNames: ['endpoint', 'kind', 'rule'] as const,
      registers,
      collect() {
        this.reset();
        for (const [endpoint, optOuts] of optOutCounts)
          for (const [optOut, count] of optOuts) {
            const [kind = '', rule = ''] = optOut.split(' ');
            this.labels(endpoint, kind, rule).inc(count);
          }
      },
    });
    this.errors = new Counter({
      name: 'hookguard_errors_total',
      help: 'Errors by source: a rule that threw (request allowed unchanged), an HTTP 5xx, a failed certificate reload.',
      labelNames: ['source'] as const,
      registers,
    });
    for (const source of ERROR_SOURCES) this.errors.labels(source).inc(0);
    this.connectionsClosed = new Counter({
      name: 'hookguard_connections_closed_total',
      help: 'Connections hookguard closed to keep its ports for the API server, by listener (webhook, probe) and reason: pending_per_address (one more from an address already holding server.maxPendingConnectionsPerAddress without a whole request), at_limit (a slot kept free at server.maxConnections), no_request (nothing sent server.headersTimeoutMs after the handshake), slow_body (a body slower than server.minBodyBytesPerSecond).',
      labelNames: ['listener', 'reason'] as const,
      registers,
    });
    for (const listener of LISTENERS)
      for (const reason of CONNECTION_CUTS) this.connectionsClosed.labels(listener, reason).inc(0);
    this.tlsReloads = new Counter({
      name: 'hookguard_tls_reloads_total',
      help: 'Serving certificates loaded without a restart.',
      registers,
    });
    this.tlsPairsRefused = new Counter({
      name: 'hookguard_tls_pairs_refused_total',
      help: 'Serving certificates refused, the previous one kept, by reason: unreadable (the files could not be read), unusable (not a certificate and its key), untrusted (signed by no CA every webhook caBundle holds; certificates.mode self).',
      labelNames: ['reason'] as const,
      registers,
    });
    for (const reason of REFUSALS) this.tlsPairsRefused.labels(reason).inc(0);
    this.certificateNotAfter = new Gauge({
      name: 'hookguard_tls_certificate_not_after_timestamp_seconds',
      help: 'Expiry of the serving certificate in use, as a Unix timestamp.',
      registers,
    });
    const instances = options.argocdInstances ?? (() => []);
    new Gauge({
      name: 'hookguard_argocd_instance_info',
      help: 'Argo CD versions hookguard decides with: 1 per known instance (namespace empty for a pinned argocd.version, version "unknown" when a controller does not say).',
      labelNames: ['namespace', 'version'] as const,
      registers,
      collect() {
        this.reset();
        for (const instance of instances()) this.labels(instance.namespace, instance.version).set(1);
      },
    });
    if (options.selfTest) {
      this.selfTests = new Counter({
        name: 'hookguard_selftest_total',
        help: "Self-tests this replica ran as the leader, by outcome: called (the probe came back with the evidence of both webhooks: the mutating one's patch or audit warning, the validating one's marker warning), not_called (without one or both), error (the dry run failed).",
        labelNames: ['outcome'] as const,
        registers,
      });
      for (const outcome of Object.values(SELF_TEST_OUTCOMES)) this.selfTests.labels(outcome).inc(0);
      this.selfTestLastSuccess = new Gauge({
        name: 'hookguard_selftest_last_success_timestamp_seconds',
        help: 'When this replica last saw the API server call the webhook (outcome called), as a Unix timestamp; 0 before that.',
        registers,
      });
    }
    if (options.hookWatch) {
      this.hookFailures = new Counter({
        name: 'hookguard_hook_failures_total',
        help: "Hooks this replica, as the leader, found failed or stuck and posted an Event for, once per hook and state, by explainHook()'s reason (a fixed set: ContainerFailed, OOMKilled, BackoffLimitExceeded, DeadlineExceeded, ImagePullBackOff, Unschedulable, FailedCreate, …).",
        labelNames: ['reason'] as const,
        registers,
      });
      this.failingHooks = new Gauge({
        name: 'hookguard_failing_hooks',
        help: 'Hooks hookguard admitted that are failed or stuck now, as the leader last saw them (0 on the other replicas: take the max).',
        registers,
      });
    }
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** A hook found failing or stuck, once per hook and state. */
  hookFailure(reason: HookReason): void {
    this.hookFailures?.labels(reason).inc();
  }

  /** How many watched hooks are failing or stuck now. */
  failing(count: number): void {
    this.failingHooks?.set(count);
  }

  /** One self-test, run at `atMs`. */
  selfTest(outcome: SelfTestOutcomeName, atMs: number): void {
    this.selfTests?.labels(SELF_TEST_OUTCOMES[outcome]).inc();
    if (outcome === 'Called') this.selfTestLastSuccess?.set(Math.floor(atMs / 1000));
  }

  /** One finished admission request; `seconds` is undefined when it was refused before reaching the handler. */
  request(
    endpoint: Endpoint,
    outcome: Outcome,
    seconds: number | undefined,
    findings: readonly Finding[] = [],
    optOuts?: OptOuts,
  ): void {
    this.requestCounts[endpoint][outcome] += 1;
    if (optOuts) {
      for (const rule of optOuts.skip) increment(this.optOutCounts, endpoint, `skip ${rule}`);
      if (optOuts.auditMode) increment(this.optOutCounts, endpoint, 'audit_mode');
    }
    if (seconds !== undefined) this.latency.observe(endpoint, seconds);
    for (const finding of findings) {
      increment(this.ruleActionCounts, finding.rule, finding.action);
      if (finding.missingMitigation !== undefined)
        increment(this.missingMitigationCounts, finding.missingMitigation, finding.advisory ?? '');
    }
  }

  /** A connection the guard closed (src/http/limits.ts). */
  connectionClosed(listener: Listener, reason: ConnectionCut): void {
    this.connectionsClosed.labels(listener, reason).inc();
  }

  error(source: ErrorSource): void {
    this.errors.labels(source).inc();
  }

  /** A serving certificate refused: counted as an error of the reload, and by why. */
  certificateRefused(reason: Refusal): void {
    this.errors.labels('tls_reload').inc();
    this.tlsPairsRefused.labels(reason).inc();
  }

  /** A serving certificate came into use: at start (`reloaded` false) or by a reload. */
  certificate(pem: string, reloaded: boolean): void {
    this.certificateNotAfter.set(Math.floor(Date.parse(new X509Certificate(pem).validTo) / 1000));
    if (reloaded) this.tlsReloads.inc();
  }

  /** The exposition text and its content type, for GET /metrics. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
